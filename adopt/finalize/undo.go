package finalize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// Removed returns the entry to restore for each object whose annotation a
// run removed and no later undo restored, in the order the objects first
// appear.
//
// An object's annotation was removed by a finalized entry, or by a pending
// entry that no outcome settles (the process died after sending the patch:
// whether it landed is unknown, and Undo never overwrites a present
// annotation, so it is counted). Each not-applied or finalized settles the
// latest unsettled pending of the same object, resourceVersion and run;
// lines from other runs, interleaved in any order, never cancel a removal.
// A restored entry after an object's last removal means it is back
// already, so a second undo restores nothing.
func Removed(entries []Entry) []Entry {
	outcome := settle(entries)
	return unrestored(entries, func(e Entry) bool { return !isRecordEntry(e) }, func(i int) bool {
		e := entries[i]
		return e.HadAnnotation && (e.Result == string(StatusFinalized) || e.Result == resultPending && outcome[i] == "")
	})
}

// settle pairs each outcome (not-applied, finalized, retired) with the
// latest unsettled pending entry of the same object, resourceVersion and
// run, and returns, for each pending entry, the result that settled it
// ("" when none).
func settle(entries []Entry) []string {
	type key struct{ ref, rv, run string }
	outcome := make([]string, len(entries))
	open := map[key][]int{} // unsettled pending entries, oldest first
	for i, e := range entries {
		k := key{e.Target.Ref.String(), e.ResourceVersion, e.Run}
		switch e.Result {
		case resultPending:
			open[k] = append(open[k], i)
		case resultNotApplied, string(StatusFinalized), resultRetired:
			if s := open[k]; len(s) > 0 {
				outcome[s[len(s)-1]] = e.Result
				open[k] = s[:len(s)-1]
			}
		}
	}
	return outcome
}

// unrestored returns, among the entries mine accepts, each object's last
// removal (removal(i)) when no restored entry follows it, in the order the
// objects first appear.
func unrestored(entries []Entry, mine func(Entry) bool, removal func(i int) bool) []Entry {
	type state struct{ removed, restored int } // entry indexes, -1 for none
	objects := map[string]*state{}
	var order []string
	for i, e := range entries {
		if !mine(e) {
			continue
		}
		ref := e.Target.Ref.String()
		removed := removal(i)
		if !removed && e.Result != resultRestored {
			continue
		}
		s, ok := objects[ref]
		if !ok {
			if !removed {
				continue // restored before any removal this journal knows of
			}
			s = &state{removed: -1, restored: -1}
			objects[ref] = s
			order = append(order, ref)
		}
		if removed {
			s.removed = i
		} else {
			s.restored = i
		}
	}
	var out []Entry
	for _, ref := range order {
		if s := objects[ref]; s.removed > s.restored {
			out = append(out, entries[s.removed])
		}
	}
	return out
}

// Undo puts back the annotation that e records as removed, with a guarded
// JSON patch (test of the resourceVersion just read). It never overwrites
// an annotation that is present. When f.Journal is set, a restored (or
// found restored) annotation is journaled as restored, so that Removed no
// longer returns it.
func (f *Finalizer) Undo(ctx context.Context, e Entry) Result {
	t := e.Target
	res := Result{Object: t.Ref.String(), App: t.App}
	if e.Annotation == nil {
		res.Status = StatusFailed
		res.Reason = fmt.Sprintf("%s: the journal keeps only a digest of its annotation (Secret data is never written to disk); re-create it with kubectl apply if you need it", t.Ref.String())
		return res
	}
	c := f.Client(t)
	backoff := f.Backoff
	if backoff.Steps == 0 {
		backoff = retry.DefaultRetry
	}
	rv := ""
	err := retry.OnError(backoff, retriable, func() error {
		res.Attempts++
		live, err := c.Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rv = live.GetResourceVersion()
		ann := live.GetAnnotations()
		res.Before = budget.MeasureBudget(ann)
		if v, ok := ann[budget.LastAppliedKey]; ok {
			if v == *e.Annotation {
				res.Status, res.After = StatusAlready, res.Before
				res.Reason = "annotation already restored"
				return nil
			}
			return &refusal{msg: fmt.Sprintf("%s carries another %s now; left as is", t.Ref.String(), budget.LastAppliedKey)}
		}
		ops := []Op{{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()}}
		if ann == nil {
			ops = append(ops, Op{Op: "add", Path: "/metadata/annotations", Value: map[string]string{budget.LastAppliedKey: *e.Annotation}})
		} else {
			ops = append(ops, Op{Op: "add", Path: annotationPath, Value: *e.Annotation})
		}
		if f.DryRun {
			res.Status = StatusWould
			res.Patch = append(ops[:1:1], Op{Op: ops[1].Op, Path: annotationPath, Value: Digest(*e.Annotation)})
			return nil
		}
		body, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		out, err := c.Patch(ctx, t.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: f.fieldManager()})
		if err != nil {
			return err
		}
		res.Status, res.After = StatusRestored, budget.MeasureBudget(out.GetAnnotations())
		return nil
	})
	if err != nil {
		res.Status, res.Reason = StatusFailed, explain(t, err, res.Attempts)
		return res
	}
	if f.Journal != nil && !f.DryRun && (res.Status == StatusRestored || res.Status == StatusAlready) {
		// Best effort, as finalize's own after-patch line: the annotation
		// is back either way, and a later undo finds it present.
		sum := sha256.Sum256([]byte(*e.Annotation))
		_ = f.Journal.Record(Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: rv, Result: resultRestored,
			AnnotationBytes: len(*e.Annotation), AnnotationHash: hex.EncodeToString(sum[:])})
	}
	return res
}
