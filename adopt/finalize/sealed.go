package finalize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/gitops"
)

// SealedTarget is a Secret the plan adopts as a SealedSecret, with the
// uid and resourceVersion that were sealed.
type SealedTarget struct {
	Target
	UID, SealedAt string
	// Form is plan.SecretFormSealed, or plan.SecretFormESO with the
	// Store and RemoteKey the plan shows (eso.go).
	Form, Store, RemoteKey string
}

// The journal results of the Sealed Secrets takeover: the managed mark
// (pending, then marked or not-applied), its removal by --undo
// (unmarked), and the proof that the controller took the Secret over
// (taken-over). None holds a value: the entries carry the Secret's
// identity and resourceVersion only.
const (
	resultMarkPending = "mark-pending"
	resultMarked      = "marked"
	resultUnmarked    = "unmarked"
	resultTakenOver   = "taken-over"
)

// Sealer is finalize's part of the Sealed Secrets takeover: the managed
// mark before the first sync, the proof after it, and the mark's undo.
type Sealer struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	DryRun  bool
	// Journal is the run's (Session sets the Finalizer's).
	Journal func() *Journal
	// pushed holds, in this process's memory only, the data of each
	// Secret of form eso as pushed and the resourceVersion it was read
	// at, by Ref, for Prove to compare.
	pushed map[string]pushedData
}

// pushedData is a Secret's data as pushed, and the resourceVersion of
// the read that held it; already when the store held it before the run
// (nothing pushed: apply --push-secrets or an earlier run pushed it).
type pushedData struct {
	data    map[string][]byte
	at      string
	already bool
}

func (s *Sealer) journal(e Entry, durable bool) error {
	j := s.Journal()
	if j == nil {
		return nil
	}
	if durable {
		return j.Record(e)
	}
	return j.Settle(e)
}

// Mark puts sealedsecrets.bitnami.com/managed: "true" on the Secret
// (sealed.MarkManaged, guarded by its uid and the plan's sealedAt),
// journaled before and after. It returns what it did, one line, or why
// the Application must not sync: a Secret changed since it was sealed,
// or replaced, would be overwritten with the older values.
func (s *Sealer) Mark(ctx context.Context, t SealedTarget) (string, error) {
	if t.Form == plan.SecretFormESO {
		return s.push(ctx, t)
	}
	ref := t.Ref.String()
	live, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read %s to mark it for the Sealed Secrets controller: %w", ref, err)
	}
	if string(live.UID) != t.UID {
		return "", fmt.Errorf("%s has uid %s, not %s as sealed: it was replaced since plan; re-run adopt plan and apply, then finalize", ref, live.UID, t.UID)
	}
	if live.Annotations[sealed.ManagedAnnotation] == "true" {
		return fmt.Sprintf("%s already carries %s=true", ref, sealed.ManagedAnnotation), nil
	}
	// Marked and synced before this run (a run that waited, then someone's
	// sync): the controller took it over, and its template's annotations
	// replaced the mark. Nothing to mark; Prove checks the takeover.
	if owner := metav1.GetControllerOf(live); owner != nil && owner.Kind == sealed.Kind && owner.Name == t.Name {
		return fmt.Sprintf("%s is already controlled by SealedSecret %s/%s: taken over, nothing to mark", ref, t.Namespace, t.Name), nil
	}
	if live.ResourceVersion != t.SealedAt {
		return "", fmt.Errorf("%s changed since it was sealed (resourceVersion %s, now %s): the SealedSecret in Git would write the older values over it; re-run adopt plan and apply (a new SealedSecret), then finalize", ref, t.SealedAt, live.ResourceVersion)
	}
	if s.DryRun {
		return fmt.Sprintf("dry run: would mark %s %s=true before the first sync", ref, sealed.ManagedAnnotation), nil
	}
	e := Entry{Time: time.Now().UTC(), Target: t.Target, ResourceVersion: live.ResourceVersion, Result: resultMarkPending}
	if err := s.journal(e, true); err != nil {
		return "", fmt.Errorf("%s: cannot write the journal, nothing changed: %v. Fix --journal and re-run", ref, err)
	}
	if _, err := sealed.MarkManaged(ctx, s.Kube, t.Namespace, t.Name, t.SealedAt); err != nil {
		e.Time, e.Result = time.Now().UTC(), resultNotApplied
		_ = s.journal(e, false)
		return "", err
	}
	e.Time, e.Result = time.Now().UTC(), resultMarked
	_ = s.journal(e, true)
	return fmt.Sprintf("marked %s %s=true (journaled; --undo removes it while no SealedSecret owns the Secret)", ref, sealed.ManagedAnnotation), nil
}

// Prove waits (within ctx) for the controller to unseal the SealedSecret
// and proves it took the Secret over in place (sealed.WaitTakeover: the
// same uid, controlled by the SealedSecret), then that the controller's
// annotations left no last-applied-configuration; it journals the
// Secret's metadata (its resourceVersion, never its data).
func (s *Sealer) Prove(ctx context.Context, t SealedTarget) Result {
	res := Result{Object: t.Ref.String(), App: t.App, Attempts: 1}
	if s.DryRun {
		res.Status = StatusWould
		return res
	}
	if t.Form == plan.SecretFormESO {
		return s.proveESO(ctx, t)
	}
	took, err := sealed.WaitTakeover(ctx, s.Kube, s.Dynamic, t.Namespace, t.Name, types.UID(t.UID))
	if err != nil {
		res.Status, res.Reason = StatusFailed, takeoverReason(t, err)
		return res
	}
	live, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: read after the takeover: %s", t.Ref.String(), gitops.OneLine(err.Error()))
		return res
	}
	res.After = budget.MeasureBudget(live.Annotations)
	res.After.LastAppliedBytes = 0 // a Secret's copy is its data: no size is reported
	if _, has := live.Annotations[budget.LastAppliedKey]; has {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: taken over by SealedSecret %s, but it still carries %s; the SealedSecret's template must not carry it: check the file in Git", t.Ref.String(), t.Name, budget.LastAppliedKey)
		return res
	}
	_ = s.journal(Entry{Time: time.Now().UTC(), Target: t.Target, ResourceVersion: took.ResourceVersion, Result: resultTakenOver}, false)
	res.Status = StatusFinalized
	res.Reason = fmt.Sprintf("taken over in place by SealedSecret %s/%s: the same uid %s, its controller now; last-applied-configuration gone", t.Namespace, t.Name, took.UID)
	return res
}

func takeoverReason(t SealedTarget, err error) string {
	if errors.Is(err, sealed.ErrNotManaged) {
		return gitops.OneLine(err.Error()) + ". With adopt: re-run adopt plan and apply (a new SealedSecret, a changed spec the controller unseals), merge, then adopt finalize --sync, which marks first"
	}
	return fmt.Sprintf("%s: %s", t.Ref.String(), gitops.OneLine(err.Error()))
}

// Unmark removes the managed mark finalize put on the Secret, unless a
// SealedSecret controls the Secret by now (the takeover happened: the
// mark is the controller's concern, and undo never deletes anything).
func (s *Sealer) Unmark(ctx context.Context, e Entry) Result {
	t := e.Target
	res := Result{Object: t.Ref.String(), App: t.App, Attempts: 1}
	live, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		res.Status, res.Reason = StatusFailed, explain(t, err, 1)
		return res
	}
	if owner := metav1.GetControllerOf(live); owner != nil && owner.Kind == sealed.Kind {
		res.Status, res.Reason = StatusSkipped, fmt.Sprintf("%s: SealedSecret %s owns it (the takeover happened), so its mark is not removed; to hand the Secret back, delete the SealedSecret with --cascade=orphan (a plain delete deletes the Secret)", t.Ref.String(), owner.Name)
		return res
	}
	if live.Annotations[sealed.ManagedAnnotation] != "true" {
		res.Status = StatusAlready
		return res
	}
	if s.DryRun {
		res.Status, res.Reason = StatusWouldRestore, "would remove "+sealed.ManagedAnnotation
		return res
	}
	key := "/metadata/annotations/" + strings.ReplaceAll(sealed.ManagedAnnotation, "/", "~1")
	body, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": live.UID},
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.ResourceVersion},
		{"op": "test", "path": key, "value": "true"},
		{"op": "remove", "path": key},
	})
	if _, err := s.Kube.CoreV1().Secrets(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: DefaultFieldManager}); err != nil {
		res.Status, res.Reason = StatusFailed, explain(t, err, 1)
		return res
	}
	_ = s.journal(Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: live.ResourceVersion, Result: resultUnmarked}, true)
	res.Status = StatusRestored
	return res
}

// Marked are the Secrets whose mark a run put on and no later undo
// removed, in the order they first appear.
func Marked(entries []Entry) []Entry {
	last := map[string]int{}
	var order []string
	for i, e := range entries {
		if e.Result != resultMarked && e.Result != resultUnmarked {
			continue
		}
		k := e.Target.Ref.String()
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = i
	}
	var out []Entry
	for _, k := range order {
		if e := entries[last[k]]; e.Result == resultMarked {
			out = append(out, e)
		}
	}
	return out
}

// sealedTarget is the Secret ob, which the plan adopts as a SealedSecret
// in Application app.
func sealedTarget(ob plan.Object, app string) SealedTarget {
	f := ob.SecretForm
	return SealedTarget{Target: Target{Ref: ob.Ref, App: app}, UID: f.UID, SealedAt: f.SealedAt, Form: f.Form, Store: f.Store, RemoteKey: f.RemoteKey}
}
