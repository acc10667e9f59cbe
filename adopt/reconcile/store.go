package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// Store keeps the plan each group's pull request proposed, in a ConfigMap
// of its own, so that a later run (on any runner) finalizes exactly what
// was merged; and the group's Record in the ConfigMap's annotations,
// written before each push, so that a run knows adopt's own commits and
// what a closed pull request proposed. A plan holds no secret value (plan
// files never do). Every write is guarded by the ConfigMap's
// resourceVersion.
type Store struct {
	Kube      kubernetes.Interface
	Namespace string
}

// Annotations and the data key of a stored plan. The record of a group
// (Record) is in annotations, so that one list of the ConfigMaps'
// metadata reads every group's.
const (
	branchAnnotation     = "adopt.dev/branch"
	finalizedAnnotation  = "adopt.dev/finalized-at"
	headAnnotation       = "adopt.dev/head"
	digestAnnotation     = "adopt.dev/digest"
	planAnnotation       = "adopt.dev/plan"
	seenAnnotation       = "adopt.dev/seen"
	reproposesAnnotation = "adopt.dev/reproposes"
	autoclosedAnnotation = "adopt.dev/autoclosed"
	planKey              = "plan.yaml"
	// maxStored leaves room under the API server's 1 MiB object cap.
	maxStored = 900 << 10
)

// storeName is the ConfigMap of a branch: adopt-reconcile-<digest>.
func storeName(branch string) string {
	h := sha256.Sum256([]byte(branch))
	return "adopt-reconcile-" + hex.EncodeToString(h[:8])
}

// Record is what the store holds of a group besides its plan: what
// reconcile last wrote to the group's branch, recorded before the push
// (Save), so that a run that fails after it still knows the commit for
// adopt's own.
type Record struct {
	// Mark is as a pull request body records it: the group's digests, and
	// in Head the commit reconcile built and was about to push.
	Mark
	// Reproposes is the number of the pull request a write replaces as
	// its branch's newest (0: none): a closed one a re-proposal replaces,
	// or a merged one whose finalized group new objects extend. While that
	// pull request is still the newest, the write is unfinished: not a
	// decline, and not the merged group to finalize.
	Reproposes int64
	// Autoclosed is the number of the pull request reconcile closed as
	// obsolete (0: none): while it is the newest, it is no decline, so
	// the group's objects, when they appear again, are proposed again.
	Autoclosed int64
	// Finalized says the group's merged plan was finalized (Save clears
	// it).
	Finalized bool
}

// Save records p as what branch proposes, with rec, clearing any
// finalized mark.
func (s Store) Save(ctx context.Context, branch string, p *plan.Plan, rec Record) error {
	b, err := plan.Marshal(p)
	if err != nil {
		return err
	}
	if len(b) > maxStored {
		return fmt.Errorf("the plan of %s is %d KiB, more than a ConfigMap holds: lower --max-objects-per-pr", branch, len(b)>>10)
	}
	cms := s.Kube.CoreV1().ConfigMaps(s.Namespace)
	name := storeName(branch)
	cur, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "adopt"},
			Annotations: map[string]string{branchAnnotation: branch}}, Data: map[string]string{planKey: string(b)}}
		rec.annotate(cm.Annotations)
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return s.explain("create", name, err)
	}
	if err != nil {
		return s.explain("read", name, err)
	}
	cur.Data = map[string]string{planKey: string(b)}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	rec.annotate(cur.Annotations)
	delete(cur.Annotations, finalizedAnnotation)
	_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	return s.explain("update", name, err)
}

// annotate writes r into a stored ConfigMap's annotations (an empty field
// removes its annotation; Finalized is MarkFinalized's).
func (r Record) annotate(a map[string]string) {
	for k, v := range map[string]string{headAnnotation: r.Head, digestAnnotation: r.Digest, planAnnotation: r.Plan, seenAnnotation: r.Seen} {
		if v == "" {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	if r.Reproposes == 0 {
		delete(a, reproposesAnnotation)
	} else {
		a[reproposesAnnotation] = strconv.FormatInt(r.Reproposes, 10)
	}
	if r.Autoclosed == 0 {
		delete(a, autoclosedAnnotation)
	} else {
		a[autoclosedAnnotation] = strconv.FormatInt(r.Autoclosed, 10)
	}
}

// recordOf is the Record a stored ConfigMap's metadata holds.
func recordOf(m metav1.ObjectMeta) Record {
	a := m.Annotations
	n, _ := strconv.ParseInt(a[reproposesAnnotation], 10, 64)
	closed, _ := strconv.ParseInt(a[autoclosedAnnotation], 10, 64)
	return Record{Mark: Mark{Head: a[headAnnotation], Digest: a[digestAnnotation], Plan: a[planAnnotation], Seen: a[seenAnnotation]},
		Reproposes: n, Autoclosed: closed, Finalized: a[finalizedAnnotation] != ""}
}

// Stored is a group's recorded plan and when it was finalized (zero: not
// yet).
type Stored struct {
	Plan      *plan.Plan
	Finalized time.Time
}

// Load reads what branch proposed; nil when nothing was recorded.
func (s Store) Load(ctx context.Context, branch string) (*Stored, error) {
	name := storeName(branch)
	cm, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, s.explain("read", name, err)
	}
	return s.read(cm, branch)
}

// read is the group a stored ConfigMap holds.
func (s Store) read(cm *corev1.ConfigMap, branch string) (*Stored, error) {
	p, err := plan.Unmarshal([]byte(cm.Data[planKey]))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s (the plan of %s): %w", s.Namespace, cm.Name, branch, err)
	}
	at, _ := time.Parse(time.RFC3339, cm.Annotations[finalizedAnnotation])
	return &Stored{Plan: p, Finalized: at}, nil
}

// MarkFinalized records that branch's plan was finalized at, and prunes
// the stored plan to what a done group is still read for (Pruned).
func (s Store) MarkFinalized(ctx context.Context, branch string, at time.Time) error {
	name := storeName(branch)
	cms := s.Kube.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return s.explain("read", name, err)
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[finalizedAnnotation] = at.UTC().Format(time.RFC3339)
	if p, err := plan.Unmarshal([]byte(cm.Data[planKey])); err == nil {
		if b, err := plan.Marshal(Pruned(p)); err == nil {
			cm.Data[planKey] = string(b)
		}
	}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return s.explain("update", name, err)
}

func (s Store) explain(op, name string, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s ConfigMap %s/%s: %w; grant get, create and update on configmaps in %s (see deploy/)", op, s.Namespace, name, err, s.Namespace)
	}
	return fmt.Errorf("%s ConfigMap %s/%s: %w", op, s.Namespace, name, err)
}

// StoredGroup is one stored group: its branch, plan and finalized time.
type StoredGroup struct {
	Branch string
	Stored
}

// List reads every group reconcile recorded in the namespace, by branch.
func (s Store) List(ctx context.Context) ([]StoredGroup, error) {
	cms, err := s.Kube.CoreV1().ConfigMaps(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: storeSelector})
	if err != nil {
		return nil, s.explain("list", "adopt-reconcile-*", err)
	}
	var out []StoredGroup
	for _, cm := range cms.Items {
		branch := stored(cm.ObjectMeta)
		if branch == "" {
			continue
		}
		st, err := s.read(&cm, branch)
		if err != nil {
			return nil, err
		}
		out = append(out, StoredGroup{Branch: branch, Stored: *st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	return out, nil
}

// Records are every group's Record, by branch, from one list of the
// stored ConfigMaps' metadata (their plans are not read).
func (s Store) Records(ctx context.Context) (map[string]Record, error) {
	var list metav1.PartialObjectMetadataList
	err := s.Kube.CoreV1().RESTClient().Get().Namespace(s.Namespace).Resource("configmaps").
		Param("labelSelector", storeSelector).
		SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").
		Do(ctx).Into(&list)
	if err != nil {
		return nil, s.explain("list", "adopt-reconcile-*", err)
	}
	out := map[string]Record{}
	for _, m := range list.Items {
		if branch := stored(m.ObjectMeta); branch != "" {
			out[branch] = recordOf(m.ObjectMeta)
		}
	}
	return out, nil
}

// storeSelector selects adopt's records; stored says which of them is a
// group's stored plan, by its branch ("" for another record).
const storeSelector = "app.kubernetes.io/managed-by=adopt"

func stored(m metav1.ObjectMeta) string {
	if branch := m.Annotations[branchAnnotation]; branch != "" && m.Name == storeName(branch) {
		return branch
	}
	return ""
}

// JournalFile is finalize's journal of a group's plan in dir.
func JournalFile(dir, branch string) string {
	return filepath.Join(dir, strings.ReplaceAll(branch, "/", "_")+".journal")
}

// Pruned is what a done group's stored plan keeps: what `adopt status
// --reconcile` follows its objects by (their refs, Applications and last
// budgets, the tracking, and the left-out objects it counts), under the
// plan's id (its journal's). Per-object evidence, findings, Git matches,
// drift and previews, and the plan's findings and repository facts, are
// dropped: a reconcile run reads a done group from its record alone.
func Pruned(p *plan.Plan) *plan.Plan {
	out := &plan.Plan{APIVersion: p.APIVersion, Kind: p.Kind, ID: p.ID, Cluster: p.Cluster, Tracking: p.Tracking, Settings: p.Settings,
		ArgoCD: p.ArgoCD, Applications: p.Applications, Skipped: p.Skipped}
	for _, ob := range p.Objects {
		out.Objects = append(out.Objects, plan.Object{Ref: ob.Ref, App: ob.App, Budget: ob.Budget, Level: ob.Level, Provenance: ob.Provenance, HelmRelease: ob.HelmRelease})
	}
	return out
}
