package finalize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// The journal results of the External Secrets form: the push (pending,
// then pushed or not-applied). The takeover is journaled as taken-over,
// and the removal of last-applied-configuration as every object's. None
// holds a value: the entries carry the Secret's identity and
// resourceVersion only.
const (
	resultPushPending = "push-pending"
	resultPushed      = "pushed"
)

// push is Mark for a Secret of form eso: before the first sync, it pushes
// the live value once to the plan's store and key and proves it reads
// back equal (esoform.Push, guarded by the plan's uid and
// resourceVersion), journaled before and after. A Secret its
// ExternalSecret already controls is left as it is (a re-run after the
// takeover). The data pushed stays in this process's memory for Prove.
func (s *Sealer) push(ctx context.Context, t SealedTarget) (string, error) {
	ref := t.Ref.String()
	store, err := esoform.ParseStore(t.Store)
	if err != nil || t.RemoteKey == "" {
		return "", fmt.Errorf("%s: the plan's form eso names no store or key (%v); re-run adopt plan and apply", ref, err)
	}
	live, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read %s to push it to %s: %w", ref, store, err)
	}
	if string(live.UID) != t.UID {
		return "", fmt.Errorf("%s has uid %s, not %s as planned: it was replaced since plan; re-run adopt plan and apply, then finalize", ref, live.UID, t.UID)
	}
	if c := metav1.GetControllerOf(live); c != nil && c.Kind == esoform.KindExternalSecret && c.Name == t.Name {
		return fmt.Sprintf("%s is already controlled by ExternalSecret %s/%s: not pushed again", ref, t.Namespace, t.Name), nil
	}
	if s.DryRun {
		return fmt.Sprintf("dry run: would push %s once to key %s of %s and prove it reads back equal, before the first sync", ref, t.RemoteKey, store), nil
	}
	e := Entry{Time: time.Now().UTC(), Target: t.Target, ResourceVersion: live.ResourceVersion, Result: resultPushPending}
	if err := s.journal(e, true); err != nil {
		return "", fmt.Errorf("%s: cannot write the journal, nothing changed: %v. Fix --journal and re-run", ref, err)
	}
	pushed, err := esoform.Push(ctx, s.Kube, s.Dynamic, esoform.PushOptions{Store: store, RemoteKey: t.RemoteKey,
		Namespace: t.Namespace, Name: t.Name, UID: t.UID, ResourceVersion: t.SealedAt})
	if err != nil {
		e.Time, e.Result = time.Now().UTC(), resultNotApplied
		_ = s.journal(e, false)
		if errors.Is(err, esoform.ErrChanged) {
			return "", fmt.Errorf("%w; the ExternalSecret in Git would write the store's older value over it", err)
		}
		return "", err
	}
	e.Time, e.Result = time.Now().UTC(), resultPushed
	_ = s.journal(e, true)
	// Push proved the Secret still at the plan's resourceVersion after
	// the push: this read holds what was pushed.
	if again, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{}); err == nil && again.ResourceVersion == t.SealedAt {
		if s.pushed == nil {
			s.pushed = map[string]pushedData{}
		}
		s.pushed[ref] = pushedData{data: maps.Clone(again.Data), at: again.ResourceVersion}
	}
	how := "pushed"
	if pushed.Already {
		how = "found already in the store"
	}
	return fmt.Sprintf("%s: %d key(s) %s at key %s of %s, read back through the store equal to the live Secret (compared in memory; journaled)", ref, len(pushed.Keys), how, t.RemoteKey, store), nil
}

// proveESO is Prove for a Secret of form eso: the ExternalSecret of the
// same name took the same Secret over (esoform.WaitTakeover) with the
// data this run pushed (when it pushed in this process), and no change
// made to the Secret between the push and the takeover was written over
// (esoform.Overwritten, read from the API server's history of it); then
// last-applied-configuration, which the operator keeps, is removed
// (dropLastApplied), guarded and journaled like every object's.
func (s *Sealer) proveESO(ctx context.Context, t SealedTarget) Result {
	res := Result{Object: t.Ref.String(), App: t.App, Attempts: 1}
	before, pushedHere := s.pushed[t.Ref.String()]
	took, err := esoform.WaitTakeover(ctx, s.Kube, s.Dynamic, t.Namespace, t.Name, t.UID, before.data)
	if err != nil {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: %s", t.Ref.String(), gitops.OneLine(err.Error()))
		return res
	}
	data := "its data byte-identical to what was pushed (compared in memory), and not changed between the push and the takeover"
	if pushedHere {
		err := esoform.Overwritten(ctx, s.Kube, t.Namespace, t.Name, before.at, took.ResourceVersion, before.data)
		switch {
		case errors.Is(err, esoform.ErrHistoryGone):
			data = "its data byte-identical to what was pushed (compared in memory); whether it was changed between the push and the takeover is not known (the API server no longer serves that history)"
		case err != nil:
			res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: %s; last-applied-configuration left as it is", t.Ref.String(), gitops.OneLine(err.Error()))
			return res
		}
	}
	_ = s.journal(Entry{Time: time.Now().UTC(), Target: t.Target, ResourceVersion: took.ResourceVersion, Result: resultTakenOver}, false)
	if !pushedHere {
		data = "its data not compared in this run (the push ran in an earlier one, whose read-back proof is journaled)"
	}
	why := fmt.Sprintf("taken over in place by ExternalSecret %s/%s: the same uid %s, its controller now, %s", t.Namespace, t.Name, took.UID, data)
	if !took.HasLastApplied {
		res.Status, res.Reason = StatusFinalized, why+"; no last-applied-configuration"
		return res
	}
	out := s.dropLastApplied(ctx, t)
	switch out.Status {
	case StatusFinalized, StatusAlready:
		out.Reason = why + "; last-applied-configuration removed (journaled)"
	default:
		out.Reason = why + "; but last-applied-configuration was not removed: " + out.Reason
	}
	return out
}

// dropLastApplied removes the Secret's last-applied-configuration, which
// the External Secrets Operator keeps when it takes a Secret over: a JSON
// patch that tests the uid, the resourceVersion just read and the
// operator's control, journaled before (pending, durably) and after as
// every object's, keeping nothing of the annotation (a Secret's copy is
// its data; --undo says so and never restores it). Its managedFields
// are left as they are: the operator, not Argo CD, writes the Secret.
func (s *Sealer) dropLastApplied(ctx context.Context, t SealedTarget) Result {
	res := Result{Object: t.Ref.String(), App: t.App, Attempts: 1}
	live, err := s.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err != nil {
		res.Status, res.Reason = StatusFailed, explain(t.Target, err, 1)
		return res
	}
	res.Before = budget.MeasureBudget(live.Annotations)
	res.Before.LastAppliedBytes = 0 // a Secret's copy is its data: no size is reported
	if _, has := live.Annotations[budget.LastAppliedKey]; !has {
		res.Status, res.After = StatusAlready, res.Before
		return res
	}
	if c := metav1.GetControllerOf(live); c == nil || c.Kind != esoform.KindExternalSecret || c.Name != t.Name || string(live.UID) != t.UID {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s is not controlled by ExternalSecret %s/%s with uid %s any more: left as is", t.Ref.String(), t.Namespace, t.Name, t.UID)
		return res
	}
	body, err := json.Marshal([]Op{
		{Op: "test", Path: "/metadata/uid", Value: live.UID},
		{Op: "test", Path: "/metadata/resourceVersion", Value: live.ResourceVersion},
		{Op: "remove", Path: annotationPath},
	})
	if err != nil {
		res.Status, res.Reason = StatusFailed, err.Error()
		return res
	}
	e := NewEntry(t.Target, live.ResourceVersion, "", true, resultPending, Ownership{})
	if err := s.journal(e, true); err != nil {
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: cannot write the journal, nothing changed: %v. Fix --journal and re-run", t.Ref.String(), err)
		return res
	}
	out, err := s.Kube.CoreV1().Secrets(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: DefaultFieldManager})
	if err != nil {
		e.Time, e.Result = time.Now().UTC(), resultNotApplied
		_ = s.journal(e, false)
		res.Status, res.Reason = StatusFailed, explain(t.Target, err, 1)
		return res
	}
	e.Time, e.Result = time.Now().UTC(), string(StatusFinalized)
	_ = s.journal(e, false)
	res.Status = StatusFinalized
	res.After = budget.MeasureBudget(out.Annotations)
	return res
}

// ESONeeds is what the push and the proof of targets' Secrets of form
// eso need beyond get and patch of the Secrets: in each namespace,
// creating, updating and deleting Secrets (the copy, the probe's),
// watching them (the proof reads the Secret's changes since the push:
// esoform.Overwritten), and
// getting, watching, creating and deleting PushSecrets and
// ExternalSecrets (the push, the probe, the wait for the takeover). A dry
// run only reads the Secrets, which Needs covers.
func ESONeeds(targets []SealedTarget, dryRun bool) []Access {
	if dryRun {
		return nil
	}
	seen := map[Access]bool{}
	var out []Access
	add := func(a Access) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, t := range targets {
		if t.Form != plan.SecretFormESO {
			continue
		}
		for _, v := range []string{"create", "update", "delete", "watch"} {
			add(Access{Verb: v, Resource: "secrets", Namespace: t.Namespace})
		}
		for _, r := range []string{esoform.PushSecretGVR.Resource, esoform.ExternalSecretGVR.Resource} {
			for _, v := range []string{"get", "watch", "create", "delete"} {
				add(Access{Verb: v, Group: esoform.Group, Resource: r, Namespace: t.Namespace})
			}
		}
	}
	return out
}
