package apply

import (
	"context"
	"crypto/rsa"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/sealed"
)

// SealedSummary is a Secret apply wrote as a SealedSecret: where, and
// with which controller's key. It holds no value.
type SealedSummary struct {
	Ref, File   string
	Controller  string
	Fingerprint string
}

// sealAll seals every Secret the plan adopts as a SealedSecret (in plan
// order): it reads the live Secret, refuses one that changed since the
// plan (its uid or resourceVersion), fetches the controller's certificate
// and refuses a key other than the plan's, seals in memory, and has the
// controller verify that it decrypts. Only the manifest, ciphertext and
// template, is kept; the Secret read is dropped.
func (a *Applier) sealAll(ctx context.Context, es []*exported) error {
	if len(es) == 0 {
		return nil
	}
	if a.o.Kube == nil {
		return &ContractError{msg: fmt.Sprintf("plan %s adopts %s as a SealedSecret, and apply has no cluster connection to seal it with; run apply connected to the plan's cluster", a.o.Plan.ID, es[0].obj.Ref)}
	}
	keys := map[string]*rsa.PublicKey{} // by controller
	for _, e := range es {
		f := e.obj.SecretForm
		ref := e.obj.Ref.String()
		c, err := sealed.ParseController(f.Controller)
		if err != nil {
			return &ContractError{msg: fmt.Sprintf("plan %s: %s: %v; re-run adopt plan", a.o.Plan.ID, ref, err)}
		}
		pub := keys[f.Controller]
		if pub == nil {
			if pub, err = sealed.Cert(ctx, a.o.Kube, c); err != nil {
				return &ObjectError{Ref: ref, Op: "fetch the Sealed Secrets certificate to seal", Err: err}
			}
			if got := sealed.Fingerprint(pub); got != f.Fingerprint {
				return &ContractError{msg: fmt.Sprintf("the Sealed Secrets controller at %s now has key %s, not %s as plan %s recorded: its key was renewed or another controller answers; re-run adopt plan, review, then apply", c, got, f.Fingerprint, a.o.Plan.ID)}
			}
			keys[f.Controller] = pub
		}
		live, err := a.o.Kube.CoreV1().Secrets(e.obj.Namespace).Get(ctx, e.obj.Name, metav1.GetOptions{})
		if err != nil {
			return &ObjectError{Ref: ref, Op: "read to seal it", Err: err}
		}
		if string(live.UID) != f.UID || live.ResourceVersion != f.SealedAt {
			return &ContractError{msg: fmt.Sprintf("%s changed since plan %s (uid %s resourceVersion %s, now uid %s resourceVersion %s): sealing it now would seal values nobody reviewed; re-run adopt plan, then apply",
				ref, a.o.Plan.ID, f.UID, f.SealedAt, live.UID, live.ResourceVersion)}
		}
		ss, err := sealed.Seal(pub, live)
		live = nil // the values are not kept past the seal
		if err != nil {
			return err
		}
		if err := sealed.Verify(ctx, a.o.Kube, c, ss); err != nil {
			return err
		}
		if e.data, err = ss.YAML(); err != nil {
			return fmt.Errorf("%s: %w", ss.Ref(), err)
		}
		e.sealed = true
	}
	return nil
}

// sealedFile is the SealedSecret's file name beside the other exports.
func sealedFile(name string) string {
	return export.FileName(sealed.Group, sealed.Kind, name)
}
