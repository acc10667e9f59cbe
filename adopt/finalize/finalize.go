// Package finalize owns the cleanup that follows Argo CD's first sync of an
// adopted object: it removes the stale kubectl.kubernetes.io/last-applied-
// configuration annotation and makes Argo CD's field manager the sole owner
// of the fields it applies, in one guarded JSON patch per object. It keeps a
// journal of what it removed and can put the annotation back (Undo). When
// asked (Runner.Retire), it also retires an adopted Helm release's storage
// records (Retirer, retire.go), journaled whole, and --undo creates them
// again.
//
// It never deletes an object but those Helm records, and those only with a
// UID and resourceVersion precondition; never patches without a
// resourceVersion and annotation-value precondition, never touches managers
// of other controllers, and never prints: results go back to the caller.
package finalize

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Target is one adopted object and the Application that adopted it.
type Target struct {
	objref.Ref `yaml:",inline"`
	// App is the Application's qualified name (<namespace>_<name> outside
	// Argo CD's namespace) as the tracking id carries it.
	App string `json:"app,omitempty" yaml:"app,omitempty"`
	// SopsUID, on a Secret the plan adopts in the SOPS form, is its uid
	// as plan read it: prepare checks it and the data (sopsCheck).
	SopsUID string `json:"-" yaml:"-"`
}

// Client reads and patches one resource; a dynamic.ResourceInterface is one.
type Client interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// Status is the outcome for one object.
type Status string

// Outcomes.
const (
	StatusFinalized Status = "finalized"
	StatusAlready   Status = "already-finalized"
	StatusWould     Status = "would-finalize"
	StatusSkipped   Status = "skipped"
	StatusFailed    Status = "failed"
	StatusRestored  Status = "restored"
	// StatusLeftOut is an object the Application does not sync (a Secret
	// adopt left out of Git): nothing to finalize, and not a failure.
	StatusLeftOut Status = "left-out"
)

// Result is what finalize did, or would do, to one object.
type Result struct {
	Object string        `json:"object" yaml:"object"`
	App    string        `json:"app,omitempty" yaml:"app,omitempty"`
	Status Status        `json:"status" yaml:"status"`
	Before budget.Budget `json:"before" yaml:"before"`
	After  budget.Budget `json:"after" yaml:"after"`
	// Managers says which field managers were migrated, removed or trimmed.
	Managers Ownership `json:"managers" yaml:"managers"`
	// Patch is the JSON patch, with the annotation's value replaced by its
	// size and digest (it can hold Secret data).
	Patch []Op `json:"patch,omitempty" yaml:"patch,omitempty"`
	// Attempts counts reads; more than one means the object changed under us.
	Attempts int `json:"attempts" yaml:"attempts"`
	// Reason says why the object was skipped or failed, and what to do.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
}

// Finalizer cleans adopted objects.
type Finalizer struct {
	// Client returns the client for a target's resource and namespace.
	Client func(Target) Client
	// Owner is the field manager that must end up the sole owner of the
	// fields it applies; ArgoCDManager when empty.
	Owner string
	// FieldManager names finalize's own writes; DefaultFieldManager when empty.
	FieldManager string
	// Tracking, when set, requires each object to carry the tracking id (or
	// instance label) naming its Target.App.
	Tracking *argoapp.Tracking
	// DryRun computes and returns the patches without sending them.
	DryRun bool
	// Backoff bounds the re-read and retry after a conflict;
	// retry.DefaultRetry when zero.
	Backoff wait.Backoff
	// Journal, when set, records each change before and after it is made.
	Journal *Journal
}

// refusal is a failed precondition: retrying will not help.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// Object finalizes one object: read it, verify every precondition, send one
// guarded JSON patch, and on a conflict start again from the read.
func (f *Finalizer) Object(ctx context.Context, t Target) Result {
	return f.ObjectFrom(ctx, t, nil)
}

// ObjectFrom is Object starting from read, a recent read of the object
// (nil to read it first). The patch tests read's resourceVersion, so a read
// that went stale only costs a conflict and a fresh read.
func (f *Finalizer) ObjectFrom(ctx context.Context, t Target, read *unstructured.Unstructured) Result {
	res := Result{Object: t.Ref.String(), App: t.App}
	c := f.Client(t)
	backoff := f.Backoff
	if backoff.Steps == 0 {
		backoff = retry.DefaultRetry
	}
	refusedAt := "" // the resourceVersion a refused patch tested
	err := retry.OnError(backoff, retriable, func() error {
		res.Attempts++
		live := read
		read = nil
		if live == nil {
			var err error
			if live, err = c.Get(ctx, t.Name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if refusedAt != "" && refusedAt == live.GetResourceVersion() {
			return &refusal{msg: fmt.Sprintf("%s: the API server refused the guarded patch (422) although the object had not changed; nothing was written. Report this with the output of --dry-run", t.Ref.String())}
		}
		refusedAt = ""
		s, err := f.prepare(t, live)
		if err != nil {
			return err
		}
		res.Before, res.After, res.Managers = s.before, s.after, s.own
		if s.noop() {
			res.Status = StatusAlready
			return nil
		}
		if f.DryRun {
			res.Status, res.Patch = StatusWould, s.redacted(t.IsSecret())
			return nil
		}
		body, err := s.body()
		if err != nil {
			return err
		}
		if err := f.record(t, live, s, resultPending); err != nil {
			return &refusal{msg: fmt.Sprintf("%s: cannot write the journal, nothing changed: %v. Fix --journal and re-run", t.Ref.String(), err)}
		}
		out, err := c.Patch(ctx, t.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: f.fieldManager()})
		if err != nil {
			_ = f.record(t, live, s, resultNotApplied)
			if testFailed(err) {
				refusedAt = s.rv
			}
			return err
		}
		res.Status = StatusFinalized
		res.After = budget.MeasureBudget(out.GetAnnotations())
		_ = f.record(t, live, s, string(StatusFinalized))
		return nil
	})
	if err != nil {
		res.Status, res.Reason = StatusFailed, explain(t, err, res.Attempts)
	}
	return res
}

// LeftOut reports an object its Application does not sync.
func LeftOut(t Target, reason string) Result {
	return Result{Object: t.Ref.String(), App: t.App, Status: StatusLeftOut, Reason: reason}
}

// Skip reports an object left untouched, with the reason.
func Skip(t Target, reason string) Result {
	return Result{Object: t.Ref.String(), App: t.App, Status: StatusSkipped, Reason: reason}
}

// step is the verified change for one read of an object.
type step struct {
	rv, annotation string
	hasAnnotation  bool
	managed        []metav1.ManagedFieldsEntry // nil when unchanged
	before, after  budget.Budget
	own            Ownership
	secret         bool
}

func (s step) noop() bool { return !s.hasAnnotation && s.managed == nil }

// prepare verifies the preconditions on live and computes the change.
func (f *Finalizer) prepare(t Target, live *unstructured.Unstructured) (step, error) {
	owner := f.owner()
	s := step{rv: live.GetResourceVersion(), secret: t.IsSecret()}
	ann := live.GetAnnotations()
	s.annotation, s.hasAnnotation = ann[budget.LastAppliedKey]
	s.before = budget.MeasureBudget(ann)
	after := map[string]string{}
	for k, v := range ann {
		if k != budget.LastAppliedKey {
			after[k] = v
		}
	}
	s.after = budget.MeasureBudget(after)

	if f.Tracking != nil && t.App != "" {
		if by := f.Tracking.TrackedBy(live.GetLabels(), ann); by != t.App {
			if by == "" {
				return s, &refusal{msg: fmt.Sprintf("%s carries no %s tracking naming Application %s: Argo CD has not synced it yet; wait for the first sync, then re-run", t.Ref.String(), f.Tracking.Method, t.App)}
			}
			return s, &refusal{msg: fmt.Sprintf("%s is tracked by Application %s, not %s: check the plan and --app", t.Ref.String(), by, t.App)}
		}
	}
	if t.SopsUID != "" {
		if err := sopsCheck(t, live); err != nil {
			return s, &refusal{msg: err.Error()}
		}
	}
	entries := live.GetManagedFields()
	if !HasApplyEntry(entries, owner) {
		return s, &refusal{msg: fmt.Sprintf("%s has no server-side apply by %s: the Application must sync with ServerSideApply=true before finalize (client-side sync needs the annotation)", t.Ref.String(), owner)}
	}
	if OwnsLastApplied(entries, owner) {
		return s, &refusal{msg: fmt.Sprintf("%s: %s applies %s itself (it is in the manifest in Git); remove it from Git first", t.Ref.String(), owner, budget.LastAppliedKey)}
	}

	migrated, moved, err := MigrateCSA(entries, owner)
	if err != nil {
		return s, &refusal{msg: fmt.Sprintf("%s: %v", t.Ref.String(), err)}
	}
	out, own, err := DropShared(migrated, owner, handManagers)
	if err != nil {
		return s, &refusal{msg: fmt.Sprintf("%s: %v", t.Ref.String(), err)}
	}
	own.Migrated = moved
	if s.hasAnnotation {
		var gone []string
		if out, gone, err = DropLastApplied(out); err != nil {
			return s, &refusal{msg: fmt.Sprintf("%s: %v", t.Ref.String(), err)}
		}
		own.Removed = append(own.Removed, gone...)
	}
	s.own = own
	if !own.Empty() || len(out) != len(entries) {
		s.managed = out
	}
	if !s.hasAnnotation {
		s.after = s.before
	}
	return s, nil
}

func (f *Finalizer) owner() string {
	if f.Owner == "" {
		return ArgoCDManager
	}
	return f.Owner
}

func (f *Finalizer) fieldManager() string {
	if f.FieldManager == "" {
		return DefaultFieldManager
	}
	return f.FieldManager
}

// record journals a patch's intent (pending) durably, before the patch is
// sent, and its outcome without waiting for an fsync (Journal.Settle).
func (f *Finalizer) record(t Target, live *unstructured.Unstructured, s step, result string) error {
	if f.Journal == nil {
		return nil
	}
	e := NewEntry(t, live.GetResourceVersion(), s.annotation, s.hasAnnotation, result, s.own)
	if result == resultPending {
		return f.Journal.Record(e)
	}
	return f.Journal.Settle(e)
}

// retriable is a conflict: a 409, or a JSON-patch test that failed because
// the object changed between our read and the server's.
func retriable(err error) bool {
	return apierrors.IsConflict(err) || testFailed(err)
}

// testFailed is the API server's answer to a JSON patch that does not apply
// to the current object, e.g. a failed test: 422 Invalid, with a generic
// message and no causes (the library's error text is not passed on). A
// validation error carries causes.
func testFailed(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	st := se.Status()
	return st.Code == 422 && st.Reason == metav1.StatusReasonInvalid && (st.Details == nil || len(st.Details.Causes) == 0)
}

// explain turns an error into one line that names the object and the next
// step.
func explain(t Target, err error, attempts int) string {
	var r *refusal
	switch {
	case errors.As(err, &r):
		return r.msg
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("%s not found: it was renamed or removed since the plan; re-run adopt plan", t.Ref.String())
	case apierrors.IsForbidden(err):
		return fmt.Sprintf("%s: forbidden: grant get and patch on %s (see docs/finalize.md)", t.Ref.String(), t.GVR().GroupResource())
	case retriable(err):
		return fmt.Sprintf("%s kept changing while finalize patched it (%d attempts, nothing written); re-run adopt finalize", t.Ref.String(), attempts)
	}
	return fmt.Sprintf("%s: %s", t.Ref.String(), gitops.OneLine(err.Error()))
}
