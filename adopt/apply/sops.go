package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/sopsform"
)

// SopsSummary is a Secret apply wrote SOPS-encrypted: where, by which
// rule, and what was proven. It holds no value.
type SopsSummary struct {
	Ref, File string
	// Config and Rule name the .sops.yaml creation rule; Age its
	// recipients.
	Config string
	Rule   int
	Age    []string
	// Proven is set when apply decrypted the file again with the age
	// identity Identity names and found every key equal to the live one.
	Proven   bool
	Identity string
}

// Proof says what apply proved of the file, one sentence.
func (s SopsSummary) Proof() string {
	if s.Proven {
		return "decrypted again with the age identity of " + s.Identity + ": every key equals the live Secret's, compared in memory"
	}
	return "not decrypted here (no age identity: set SOPS_AGE_KEY_FILE to prove it): proven that every key is encrypted to exactly those recipients and no value is in clear; not proven that a holder of their keys decrypts it to the live values, though sops encrypted exactly the values read at the plan's resourceVersion"
}

// Where is the summary's line for the object.
func (s SopsSummary) Where() string {
	return fmt.Sprintf("encrypted with sops to %s (%s creation_rules[%d], %d age recipient(s); %s; no value in Git)", s.File, s.Config, s.Rule, len(s.Age), s.Proof())
}

// readSops reads every Secret the plan adopts in the SOPS form (in plan
// order) and refuses one that changed since the plan (its uid or
// resourceVersion). It keeps the plaintext manifest in memory only, for
// Build to hand to sops once the repo's .sops.yaml is at hand; ctx bounds
// those sops runs.
func (a *Applier) readSops(ctx context.Context, es []*exported) error {
	if len(es) == 0 {
		return nil
	}
	if a.o.Kube == nil {
		return &ContractError{msg: fmt.Sprintf("plan %s adopts %s in the SOPS form, and apply has no cluster connection to read it; run apply connected to the plan's cluster", a.o.Plan.ID, es[0].obj.Ref)}
	}
	a.sopsCtx = ctx
	for _, e := range es {
		f := e.obj.SecretForm
		ref := e.obj.Ref.String()
		live, err := a.o.Kube.CoreV1().Secrets(e.obj.Namespace).Get(ctx, e.obj.Name, metav1.GetOptions{})
		if err != nil {
			return &ObjectError{Ref: ref, Op: "read to encrypt it", Err: err}
		}
		if string(live.UID) != f.UID || live.ResourceVersion != f.SealedAt {
			return &ContractError{msg: fmt.Sprintf("%s changed since plan %s (uid %s resourceVersion %s, now uid %s resourceVersion %s): encrypting it now would write values nobody reviewed; re-run adopt plan, then apply",
				ref, a.o.Plan.ID, f.UID, f.SealedAt, live.UID, live.ResourceVersion)}
		}
		if e.plain, err = sopsform.Manifest(live, a.o.Plan.Tracking.InstanceLabelKey); err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		e.values = sopsform.Values(live)
		e.sops = &SopsSummary{Ref: ref, File: f.Sops.File, Config: f.Sops.Config, Rule: f.Sops.Rule, Age: f.Sops.Age}
	}
	return nil
}

// encrypt has sops encrypt e's manifest as the tree's .sops.yaml says,
// once: a later Build over a tree whose .sops.yaml is the same file
// reuses the result. It refuses a .sops.yaml, or a rule for the file,
// other than the plan's, a result Check refuses, and a decryption that
// does not give the live values back. The plaintext is dropped once the
// file is written.
func (a *Applier) encrypt(t *listedTree, e *exported) error {
	f := e.obj.SecretForm.Sops
	ref := e.obj.Ref.String()
	read := func(p string) ([]byte, bool, error) {
		files, err := t.Files()
		if err != nil {
			return nil, false, err
		}
		if i := sort.SearchStrings(files, p); i == len(files) || files[i] != p {
			return nil, false, nil
		}
		b, err := t.ReadFile(p)
		return b, err == nil, err
	}
	rule, err := sopsform.Match(read, f.File)
	if err != nil {
		return &ContractError{msg: fmt.Sprintf("%s: %v; fix it, then re-run adopt plan", ref, err)}
	}
	if rule == nil || rule.Config != f.Config || rule.ConfigSHA256 != f.ConfigSHA256 || rule.Index != f.Rule {
		now := "no creation rule matches it now"
		if rule != nil {
			now = fmt.Sprintf("now %s creation_rules[%d] matches it, sha256 %s", rule.Config, rule.Index, rule.ConfigSHA256)
		}
		return &ContractError{msg: fmt.Sprintf("%s: plan %s encrypts it to %s by %s creation_rules[%d] (sha256 %s), but at the branch tip %s: the .sops.yaml changed since plan; re-run adopt plan, review the recipients, then apply",
			ref, a.o.Plan.ID, f.File, f.Config, f.Rule, f.ConfigSHA256, now)}
	}
	if e.data != nil && e.sopsConfig == rule.ConfigSHA256 {
		return nil
	}
	if e.plain == nil {
		return fmt.Errorf("apply: %s: encrypt before Export", ref)
	}
	cfg, _, err := read(rule.Config)
	if err != nil {
		return err
	}
	out, err := a.o.Sops.Encrypt(a.sopsCtx, rule, cfg, e.plain, e.values)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if err := sopsform.Check(ref, out, rule, e.values); err != nil {
		return err
	}
	proven, err := a.o.Sops.Prove(a.sopsCtx, ref, rule.File, out, e.values)
	if err != nil {
		return err
	}
	e.sops.Proven, e.sops.Identity = proven, a.o.Sops.Identity()
	e.data, e.sopsConfig = out, rule.ConfigSHA256
	e.plain, e.values = nil, nil
	return nil
}

// sopsNote is the Application's note when it holds SOPS-encrypted
// Secrets: Argo CD must decrypt them.
func sopsNote(files []string) string {
	return fmt.Sprintf("holds SOPS-encrypted Secret(s) (%s): Argo CD applies them only through a plugin that decrypts them (a config management plugin running sops, docs/secrets.md); without one their sync fails and the live Secrets stay as they are", strings.Join(files, ", "))
}
