package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/finalize"
)

// ESOSummary is a Secret apply wrote as an ExternalSecret: where, and
// which store and key it reads back. It holds no value.
type ESOSummary struct {
	Ref, File        string
	Store, RemoteKey string
	// Pushed is set when apply pushed it (--push-secrets): the keys the
	// store gave back equal to the live Secret's (names only), and
	// whether the store held them already (nothing pushed).
	Pushed *esoform.Pushed
}

// Proof is one line per key apply proved the store gives back (none
// when apply did not push): names only, never a value or a digest.
func (s ESOSummary) Proof() []string {
	if s.Pushed == nil {
		return nil
	}
	out := make([]string, len(s.Pushed.Keys))
	for i, k := range s.Pushed.Keys {
		out[i] = fmt.Sprintf("key %s: the store gives back the live value (read back through %s, key %s)", k, s.Store, s.RemoteKey)
	}
	return out
}

// PushNote says what apply's push did ("" when it did not push).
func (s ESOSummary) PushNote() string {
	switch {
	case s.Pushed == nil:
		return ""
	case s.Pushed.Already:
		return fmt.Sprintf("key %s of %s already held the live data (pushed by an earlier run): nothing pushed; read back equal, key by key", s.RemoteKey, s.Store)
	}
	return fmt.Sprintf("pushed to key %s of %s (--push-secrets) and read back equal, key by key", s.RemoteKey, s.Store)
}

// esoAll writes the ExternalSecret of every Secret the plan adopts in
// form eso (in plan order): it reads the live Secret, refuses one that
// changed since the plan (its uid or resourceVersion), and keeps only the
// manifest (the store, the key, the Secret's type, labels and
// annotations but the last-applied copies). Unless asked to push
// (pushAll), apply writes nothing to the cluster: finalize pushes the
// value before the first sync.
func (a *Applier) esoAll(ctx context.Context, es []*exported) error {
	if len(es) == 0 {
		return nil
	}
	if a.o.Kube == nil {
		return &ContractError{msg: fmt.Sprintf("plan %s adopts %s as an ExternalSecret, and apply has no cluster connection to read it with; run apply connected to the plan's cluster", a.o.Plan.ID, es[0].obj.Ref)}
	}
	for _, e := range es {
		f := e.obj.SecretForm
		ref := e.obj.Ref.String()
		store, err := esoform.ParseStore(f.Store)
		if err != nil || f.RemoteKey == "" {
			return &ContractError{msg: fmt.Sprintf("plan %s: %s: form eso without a store and remote key (%v); re-run adopt plan", a.o.Plan.ID, ref, err)}
		}
		live, err := a.o.Kube.CoreV1().Secrets(e.obj.Namespace).Get(ctx, e.obj.Name, metav1.GetOptions{})
		if err != nil {
			return &ObjectError{Ref: ref, Op: "read to write its ExternalSecret", Err: err}
		}
		if string(live.UID) != f.UID || live.ResourceVersion != f.SealedAt {
			return &ContractError{msg: fmt.Sprintf("%s changed since plan %s (uid %s resourceVersion %s, now uid %s resourceVersion %s): re-run adopt plan, then apply",
				ref, a.o.Plan.ID, f.UID, f.SealedAt, live.UID, live.ResourceVersion)}
		}
		m, err := esoform.Manifest(store, f.RemoteKey, live)
		live = nil // the values are not kept
		if err != nil {
			return &ObjectError{Ref: ref, Op: "write its ExternalSecret", Err: err}
		}
		if e.data, err = m.YAML(); err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		e.eso = true
	}
	return nil
}

// pushAll, when asked (PushSecrets), pushes each Secret of form eso to
// its store and proves it reads back (esoform.Push, guarded by the
// plan's uid and resourceVersion, never overwriting a stored value),
// after every other object was read and before anything is committed.
// It first asks the API server whether the push is allowed in each
// namespace, and pushes nothing when it is not. Each push is safe to
// re-run: a second apply finds the live data at the key and pushes
// nothing. No journal: apply writes no object adopt does not remove
// itself, and never the live Secret.
func (a *Applier) pushAll(ctx context.Context, es []*exported) error {
	if !a.o.PushSecrets || len(es) == 0 {
		return nil
	}
	if a.o.Dynamic == nil {
		return &ContractError{msg: fmt.Sprintf("--push-secrets: plan %s adopts %s as an ExternalSecret, and apply has no cluster connection to push it with; run apply connected to the plan's cluster", a.o.Plan.ID, es[0].obj.Ref)}
	}
	checked := map[string]bool{}
	for _, e := range es {
		ns := e.obj.Namespace
		if checked[ns] {
			continue
		}
		checked[ns] = true
		missing, err := finalize.Missing(ctx, a.o.Kube, finalize.PushAccess(ns))
		if err != nil {
			return &ObjectError{Ref: e.obj.Ref.String(), Op: "check the permissions --push-secrets needs to push", Err: err}
		}
		if len(missing) > 0 {
			m := make([]string, len(missing))
			for i, n := range missing {
				m[i] = n.String()
			}
			return fmt.Errorf("--push-secrets: pushing %s to its store needs %s; missing, so nothing was pushed or committed. Grant them (docs/secrets.md, What the credential needs), or apply without --push-secrets: finalize --sync then pushes after the merge", e.obj.Ref, strings.Join(m, ", "))
		}
	}
	for _, e := range es {
		f := e.obj.SecretForm
		store, _ := esoform.ParseStore(f.Store) // esoAll parsed it
		pushed, err := esoform.Push(ctx, a.o.Kube, a.o.Dynamic, esoform.PushOptions{Store: store, RemoteKey: f.RemoteKey,
			Namespace: e.obj.Namespace, Name: e.obj.Name, UID: f.UID, ResourceVersion: f.SealedAt})
		if errors.Is(err, esoform.ErrChanged) {
			return &ContractError{msg: err.Error()}
		}
		if err != nil {
			return fmt.Errorf("--push-secrets: %w; nothing was committed (Secrets pushed before it stay in their stores: a re-run finds them there and pushes nothing)", err)
		}
		e.pushed = pushed
	}
	return nil
}

// esoFile is the ExternalSecret's file name beside the other exports.
func esoFile(name string) string {
	return export.FileName(esoform.Group, esoform.KindExternalSecret, name)
}
