package apply

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/export"
)

// ESOSummary is a Secret apply wrote as an ExternalSecret: where, and
// which store and key it reads back. It holds no value.
type ESOSummary struct {
	Ref, File        string
	Store, RemoteKey string
}

// esoAll writes the ExternalSecret of every Secret the plan adopts in
// form eso (in plan order): it reads the live Secret, refuses one that
// changed since the plan (its uid or resourceVersion), and keeps only the
// manifest (the store, the key, the Secret's type, labels and
// annotations but the last-applied copies). apply writes nothing to the
// cluster: finalize pushes the value before the first sync.
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

// esoFile is the ExternalSecret's file name beside the other exports.
func esoFile(name string) string {
	return export.FileName(esoform.Group, esoform.KindExternalSecret, name)
}
