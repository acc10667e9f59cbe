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
		return fmt.Sprintf("dry run: would push %s once to key %s of %s (nothing if the key already holds the live data, as after apply --push-secrets) and prove it reads back equal, before the first sync", ref, t.RemoteKey, store), nil
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
			return "", fmt.Errorf("%w; the ExternalSecret in Git would write the store's older value over it (if apply --push-secrets pushed it before the merge, key %s of %s holds that older value: delete it from the store before the new plan's push, which never overwrites it)", err, t.RemoteKey, store)
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
		s.pushed[ref] = pushedData{data: maps.Clone(again.Data), at: again.ResourceVersion, already: pushed.Already}
	}
	how := "pushed"
	if pushed.Already {
		how = "found already in the store (pushed before this run: by apply --push-secrets or an earlier finalize; nothing pushed)"
	}
	return fmt.Sprintf("%s: %d key(s) %s at key %s of %s, read back through the store equal to the live Secret (compared in memory; journaled)", ref, len(pushed.Keys), how, t.RemoteKey, store), nil
}

// proveESO is Prove for a Secret of form eso: the ExternalSecret of the
// same name took the same Secret over (esoform.WaitTakeover) with the
// data this run pushed or found in the store (when its Mark ran in this
// process), and no change made to the Secret between that read (else
// the plan's resourceVersion) and the takeover was written over
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
	what, since := "what was pushed", "the push"
	if before.already {
		what, since = "what the store gave back before the sync", "that read"
	}
	data := fmt.Sprintf("its data byte-identical to %s (compared in memory), and not changed between %s and the takeover", what, since)
	// A run that did not push (apply --push-secrets or an earlier run
	// did, then someone synced) compares the changes since the plan
	// with the data the takeover wrote: the store's, proven equal to the
	// plan's by that push.
	from := before.at
	if !pushedHere {
		from = t.SealedAt
		data = "its data not compared with the pushed data in this run (the push, and its read-back proof, ran before it: apply --push-secrets or an earlier finalize run); no change made since the plan was written over by the takeover"
	}
	err = esoform.Overwritten(ctx, s.Kube, t.Namespace, t.Name, from, took.ResourceVersion, before.data)
	switch {
	case errors.Is(err, esoform.ErrHistoryGone) && pushedHere:
		data = fmt.Sprintf("its data byte-identical to %s (compared in memory); whether it was changed between %s and the takeover is not known (the API server no longer serves that history)", what, since)
	case errors.Is(err, esoform.ErrHistoryGone):
		data = "its data not compared with the pushed data in this run (the push, and its read-back proof, ran before it: apply --push-secrets or an earlier finalize run); whether a change made since the plan was written over by the takeover is not known (the API server no longer serves that history)"
	case err != nil:
		res.Status, res.Reason = StatusFailed, fmt.Sprintf("%s: %s; last-applied-configuration left as it is", t.Ref.String(), gitops.OneLine(err.Error()))
		return res
	}
	_ = s.journal(Entry{Time: time.Now().UTC(), Target: t.Target, ResourceVersion: took.ResourceVersion, Result: resultTakenOver}, false)
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

// PushAccess is what esoform.Push needs in namespace (esoform.PushNeeds),
// as Access for Missing: finalize's push and apply --push-secrets ask for
// it alike.
func PushAccess(namespace string) []Access {
	var out []Access
	for _, n := range esoform.PushNeeds() {
		out = append(out, Access{Verb: n.Verb, Group: n.Group, Resource: n.Resource, Namespace: namespace})
	}
	return out
}

// ESONeeds is what the push and the proof of targets' Secrets of form
// eso need beyond patch of the Secrets: in each namespace, what
// esoform.Push needs (esoform.PushNeeds: reading Secrets; creating,
// updating and deleting them, the copy and the probe's; getting,
// watching, creating and deleting PushSecrets and ExternalSecrets, the
// push, the probe and the wait for the takeover), and watching Secrets
// (the proof reads the Secret's changes since the plan:
// esoform.Overwritten). A dry run only reads the Secrets, which Needs
// covers.
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
		for _, a := range PushAccess(t.Namespace) {
			add(a)
		}
		add(Access{Verb: "watch", Resource: "secrets", Namespace: t.Namespace})
	}
	return out
}
