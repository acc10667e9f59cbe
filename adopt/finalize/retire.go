package finalize

// Retiring a Helm release's records (finalize --retire-helm-records): once
// Argo CD manages a release's objects, the release's storage records
// (sh.helm.release.v1.<name>.v<N>, Secrets or ConfigMaps labelled
// owner=helm,name=<name>) are what lets `helm uninstall` delete them. The
// Retirer removes those records, and only those: each one journaled in
// full before a delete that is guarded by its UID and resourceVersion, so
// that --undo can create it again with the same content (Restore).
//
// This file holds adopt's one delete call. It is reached only when the
// user asked for it (Runner.Retire), for a release whose Application was
// found Synced and Healthy again just before, and whose objects' cleanup
// succeeded.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/gitops"
)

// Outcomes of a Helm release and its records.
const (
	StatusRetired        Status = "retired"
	StatusWouldRetire    Status = "would-retire"
	StatusAlreadyRetired Status = "already-retired"
	// StatusRefused is a release left as it is: nothing of it was deleted.
	StatusRefused Status = "refused"
	// StatusKept is a record left in place (its release was refused or
	// stopped before it).
	StatusKept         Status = "kept"
	StatusWouldRestore Status = "would-restore"
)

// Journal results of a record: pending (before the delete, holding the
// record), then retired or not-applied; restored once --undo created it
// again.
const resultRetired = "retired"

// RecordClient lists, reads, deletes and creates Helm release records in
// one namespace; a dynamic.ResourceInterface is one.
type RecordClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error
	Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// HelmRelease is one Helm release a plan's Application adopted: where
// Helm keeps its records and which of them the plan saw.
type HelmRelease struct {
	App       string `json:"app" yaml:"app"`
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace" yaml:"namespace"`
	// Storage is helmrelease.StorageSecret or StorageConfigMap.
	Storage string `json:"storage" yaml:"storage"`
	// Revision is the deployed revision the plan read; Records the names
	// of the records it saw (all revisions).
	Revision int      `json:"-" yaml:"-"`
	Records  []string `json:"-" yaml:"-"`
}

func (h HelmRelease) String() string { return helmrelease.Key(h.Namespace, h.Name) }

// Ref is the record of revision name in h's storage.
func (h HelmRelease) Ref(name string) objref.Ref {
	if h.Storage == helmrelease.StorageConfigMap {
		return objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: h.Namespace, Name: name}
	}
	return objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: h.Namespace, Name: name}
}

// selector is Helm's own label selector for the release's records.
func (h HelmRelease) selector() string {
	return labels.Set{"owner": "helm", "name": h.Name}.String()
}

// HelmReleases are the Helm releases of the selection's Applications, in
// Application order.
func HelmReleases(s Selection) []HelmRelease {
	var out []HelmRelease
	for _, a := range s.Apps {
		h := a.Helm
		if h == nil || h.ReleaseName == "" {
			continue
		}
		storage := h.Storage
		if storage == "" {
			storage = helmrelease.StorageSecret // Helm's default driver
		}
		out = append(out, HelmRelease{App: a.Name, Name: h.ReleaseName, Namespace: a.Namespace, Storage: storage, Revision: h.Revision, Records: h.Records})
	}
	return out
}

// RetireNeeds lists what retiring the releases' records requires: list
// and, unless dryRun, delete of their storage resource in each namespace.
func RetireNeeds(rels []HelmRelease, dryRun bool) []Access {
	var out []Access
	for _, h := range rels {
		r := h.Ref("")
		out = append(out, Access{Verb: "list", Resource: r.Resource, Namespace: h.Namespace})
		if !dryRun {
			out = append(out, Access{Verb: "delete", Resource: r.Resource, Namespace: h.Namespace})
		}
	}
	return dedupe(out)
}

// RestoreNeeds lists what restoring the journal's retired records requires:
// get and create of their resource in their namespace.
func RestoreNeeds(entries []Entry) []Access {
	var out []Access
	for _, e := range entries {
		t := e.Target
		out = append(out, Access{Verb: "get", Resource: t.Resource, Namespace: t.Namespace}, Access{Verb: "create", Resource: t.Resource, Namespace: t.Namespace})
	}
	return dedupe(out)
}

func dedupe(in []Access) []Access {
	seen := map[Access]bool{}
	var out []Access
	for _, a := range in {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// ReleaseReport is what finalize did, or would do, to one Helm release's
// records. It names records only: their content never leaves the journal.
type ReleaseReport struct {
	HelmRelease `yaml:",inline"`
	Status      Status         `json:"status" yaml:"status"`
	Records     []RecordResult `json:"records,omitempty" yaml:"records,omitempty"`
	// Reason says why the release was refused, skipped or failed, or that
	// there was nothing to do, and what next.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// RecordResult is one record's outcome.
type RecordResult struct {
	Object string `json:"object" yaml:"object"`
	App    string `json:"app,omitempty" yaml:"app,omitempty"`
	Status Status `json:"status" yaml:"status"`
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Retirer removes Helm release records, guarded and journaled, and puts
// them back (Restore).
type Retirer struct {
	// Client returns the client for a record's resource and namespace.
	Client func(Target) RecordClient
	// Journal records each record in full before its delete.
	Journal *Journal
	DryRun  bool
}

// record is one listed record and its revision.
type record struct {
	u   *unstructured.Unstructured
	rev int
}

// list returns h's records, newest revision first.
func (r *Retirer) list(ctx context.Context, h HelmRelease) ([]record, error) {
	l, err := r.Client(Target{Ref: h.Ref(""), App: h.App}).List(ctx, metav1.ListOptions{LabelSelector: h.selector()})
	if err != nil {
		return nil, err
	}
	var out []record
	prefix := strings.TrimSuffix(helmrelease.RecordName(h.Name, 0), "0")
	for i := range l.Items {
		u := &l.Items[i]
		rev, err := strconv.Atoi(strings.TrimPrefix(u.GetName(), prefix))
		if !strings.HasPrefix(u.GetName(), prefix) || err != nil || !helmrelease.IsRecord(h.Ref("").Kind, u.GetName(), u.GetLabels()) {
			continue // labelled like one, named otherwise: not Helm's record of this release
		}
		out = append(out, record{u: u, rev: rev})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rev > out[j].rev })
	return out, nil
}

// Retire removes every record of h, newest revision first, each journaled
// in full (Entry.Record) before a delete guarded by its UID and
// resourceVersion. It refuses the whole release, deleting nothing, when a
// record exists that the plan did not see (Helm made a revision since: it
// is still used). It stops at the first record that changed since it was
// listed, and re-lists at the end: a record that came back or was added
// meanwhile is reported, with what was retired (the journal keeps it for
// --undo).
func (r *Retirer) Retire(ctx context.Context, h HelmRelease) ReleaseReport {
	rep := ReleaseReport{HelmRelease: h}
	fail := func(status Status, why string) ReleaseReport {
		rep.Status, rep.Reason = status, why
		return rep
	}
	recs, err := r.list(ctx, h)
	if err != nil {
		return fail(StatusFailed, r.explain(h, "list", err))
	}
	if len(recs) == 0 {
		return fail(StatusAlreadyRetired, fmt.Sprintf("no records of Helm release %s are left (%s labelled %s): retired already, or uninstalled; nothing to do", h, h.Ref("").Resource, h.selector()))
	}
	if why := r.unplanned(h, recs); why != "" {
		for _, rc := range recs {
			rep.Records = append(rep.Records, RecordResult{Object: h.Ref(rc.u.GetName()).String(), App: h.App, Status: StatusKept})
		}
		return fail(StatusRefused, why)
	}
	rep.Status = StatusRetired
	if r.DryRun {
		rep.Status = StatusWouldRetire
	}
	for i, rc := range recs {
		res, ok := r.remove(ctx, h, rc.u)
		rep.Records = append(rep.Records, res)
		if ok {
			continue
		}
		for _, rest := range recs[i+1:] {
			rep.Records = append(rep.Records, RecordResult{Object: h.Ref(rest.u.GetName()).String(), App: h.App, Status: StatusKept})
		}
		if i == 0 {
			return fail(StatusRefused, res.Reason+"; nothing of the release was retired")
		}
		return fail(StatusFailed, fmt.Sprintf("%s; %d of %d records of Helm release %s were retired before it (in the journal: finalize --undo puts them back)", res.Reason, i, len(recs), h))
	}
	if r.DryRun {
		return rep
	}
	left, err := r.list(ctx, h)
	switch {
	case err != nil:
		return fail(StatusFailed, r.explain(h, "list (again, to check)", err))
	case len(left) > 0:
		names := make([]string, len(left))
		for i, rc := range left {
			names[i] = rc.u.GetName()
		}
		return fail(StatusFailed, fmt.Sprintf("Helm release %s has records again after they were retired (%s): a helm install, upgrade or rollback ran meanwhile, so Helm still uses the release. What was retired is in the journal: run finalize --undo to put it back, or re-plan the release", h, strings.Join(names, ", ")))
	}
	return rep
}

// unplanned says why recs show Helm still at work on h since the plan: a
// revision newer than the one planned, or one the plan did not see; ""
// when there is none.
func (r *Retirer) unplanned(h HelmRelease, recs []record) string {
	if h.Revision == 0 {
		return fmt.Sprintf("the plan records no revision of Helm release %s, so adopt cannot tell whether Helm made one since: nothing retired. Re-run adopt plan (and apply), then finalize again", h)
	}
	seen := map[string]bool{}
	for _, n := range h.Records {
		seen[n] = true
	}
	for _, rc := range recs {
		if rc.rev > h.Revision || len(h.Records) > 0 && !seen[rc.u.GetName()] {
			return fmt.Sprintf("Helm release %s has revision %d (%s, status %s) that the plan did not see (it read revision %d): Helm is still used for this release, so nothing of it was retired. Re-run adopt plan and apply so the Application matches the release, then finalize again",
				h, rc.rev, h.Ref(rc.u.GetName()), orNone(rc.u.GetLabels()["status"]), h.Revision)
		}
	}
	return ""
}

// remove journals u in full, then deletes it on the condition that its UID
// and resourceVersion are still those read. It reports whether u is gone.
func (r *Retirer) remove(ctx context.Context, h HelmRelease, u *unstructured.Unstructured) (RecordResult, bool) {
	t := Target{Ref: h.Ref(u.GetName()), App: h.App}
	res := RecordResult{Object: t.Ref.String(), App: h.App, Status: StatusWouldRetire}
	if r.DryRun {
		return res, true
	}
	res.Status = StatusKept
	body, err := u.MarshalJSON()
	if err != nil {
		res.Reason = fmt.Sprintf("%s was not deleted: it cannot be encoded for the journal: %v", t.Ref, err)
		return res, false
	}
	rv, uid := u.GetResourceVersion(), u.GetUID()
	if err := r.Journal.Record(recordEntry(t, h.Name, rv, resultPending, body)); err != nil {
		res.Reason = fmt.Sprintf("%s was not deleted: cannot write the journal: %v. Fix --journal and re-run", t.Ref, err)
		return res, false
	}
	err = r.Client(t).Delete(ctx, u.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if err != nil {
		_ = r.Journal.Settle(recordEntry(t, h.Name, rv, resultNotApplied, nil))
		switch {
		case apierrors.IsConflict(err):
			res.Reason = fmt.Sprintf("%s changed since it was read (resourceVersion %s): Helm wrote to it (an upgrade, rollback or uninstall running now?), so it was not deleted, and Helm still uses release %s", t.Ref, rv, h)
		case apierrors.IsNotFound(err):
			res.Reason = fmt.Sprintf("%s was deleted by someone else while it was being retired (helm uninstall?)", t.Ref)
		default:
			res.Reason = r.explain(h, "delete", err)
		}
		return res, false
	}
	_ = r.Journal.Settle(recordEntry(t, h.Name, rv, resultRetired, nil))
	res.Status = StatusRetired
	return res, true
}

func (r *Retirer) explain(h HelmRelease, verb string, err error) string {
	res := h.Ref("").Resource
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf("Helm release %s: forbidden to %s %s in %s: grant list and delete on %s there (see docs/finalize.md, Permissions)", h, verb, res, h.Namespace, res)
	}
	return fmt.Sprintf("Helm release %s: %s %s in %s: %s", h, verb, res, h.Namespace, gitops.OneLine(err.Error()))
}

// recordEntry is a journal entry of a record; body, the record in full,
// only in the pending entry written before its delete.
func recordEntry(t Target, release, rv, result string, body []byte) Entry {
	e := NewEntry(t, rv, "", false, result, Ownership{})
	e.Release = release
	e.Record = body
	return e
}

// Retired returns, for each record a run retired and no later undo
// restored, the pending entry that holds it: one settled by retired, or
// one nothing settles (the process died after the delete may have been
// sent; Restore never overwrites a record that exists). In the order the
// records first appear.
func Retired(entries []Entry) []Entry {
	outcome := settle(entries)
	return unrestored(entries, isRecordEntry, func(i int) bool {
		return entries[i].Result == resultPending && (outcome[i] == "" || outcome[i] == resultRetired)
	})
}

func isRecordEntry(e Entry) bool { return e.Release != "" }

// Restore creates again the record e holds (Retired), with the same name,
// namespace, labels, annotations, type and data; the API server gives it a
// new UID and resourceVersion. It never overwrites a record that exists:
// one with the same content counts as restored already, any other is left
// as it is and reported (a new helm install or upgrade made it).
func (r *Retirer) Restore(ctx context.Context, e Entry) RecordResult {
	t := e.Target
	res := RecordResult{Object: t.Ref.String(), App: t.App}
	want, err := restorable(e.Record)
	if err != nil {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: the journal's copy of the record cannot be read (%v); nothing was created", t.Ref, err)
		return res
	}
	c := r.Client(t)
	live, err := c.Get(ctx, t.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return r.found(t, res, live, want, e)
	case !apierrors.IsNotFound(err):
		res.Status, res.Reason = StatusFailed, restoreError(t, err)
		return res
	}
	if r.DryRun {
		res.Status = StatusWouldRestore
		return res
	}
	made, err := c.Create(ctx, want, metav1.CreateOptions{FieldManager: DefaultFieldManager})
	if apierrors.IsAlreadyExists(err) {
		if live, gerr := c.Get(ctx, t.Name, metav1.GetOptions{}); gerr == nil {
			return r.found(t, res, live, want, e)
		}
	}
	if err != nil {
		res.Status, res.Reason = StatusFailed, restoreError(t, err)
		return res
	}
	res.Status = StatusRestored
	r.restored(t, e, made.GetResourceVersion())
	return res
}

// found is Restore's answer when the record exists: restored already when
// it holds what the journal holds, else left alone.
func (r *Retirer) found(t Target, res RecordResult, live, want *unstructured.Unstructured, e Entry) RecordResult {
	if sameRecord(live, want) {
		res.Status, res.Reason = StatusAlready, "record already restored"
		if !r.DryRun {
			r.restored(t, e, live.GetResourceVersion())
		}
		return res
	}
	res.Status = StatusFailed
	res.Reason = fmt.Sprintf("%s exists again with other content (a new helm install or upgrade made it since it was retired): left as it is, not overwritten; delete it yourself first if the journal's copy must come back", t.Ref)
	return res
}

// restored journals that the record is back, so that a second undo
// restores nothing (best effort, as finalize's own after-patch line).
func (r *Retirer) restored(t Target, e Entry, rv string) {
	if r.Journal != nil {
		_ = r.Journal.Record(recordEntry(t, e.Release, rv, resultRestored, nil))
	}
}

func restoreError(t Target, err error) string {
	if apierrors.IsForbidden(err) {
		return fmt.Sprintf("%s: forbidden: grant get and create on %s in %s (see docs/finalize.md, Permissions)", t.Ref, t.Resource, t.Namespace)
	}
	return fmt.Sprintf("%s: %s", t.Ref, gitops.OneLine(err.Error()))
}

// restorable is the journal's record without what the API server sets:
// name, namespace, labels, annotations and the content are kept as read.
func restorable(body []byte) (*unstructured.Unstructured, error) {
	if len(body) == 0 {
		return nil, fmt.Errorf("no record in the entry")
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return u, nil
}

// sameRecord reports whether live holds what want holds: labels,
// annotations, type, data and binaryData.
func sameRecord(live, want *unstructured.Unstructured) bool {
	for _, f := range [][]string{{"metadata", "labels"}, {"metadata", "annotations"}, {"type"}, {"data"}, {"binaryData"}, {"immutable"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(live.Object, f...)
		b, _, _ := unstructured.NestedFieldNoCopy(want.Object, f...)
		if !equalJSON(a, b) {
			return false
		}
	}
	return true
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
