package plan

import (
	"fmt"
	"slices"
	"strings"
)

// SecretFormSealed is the Sealed Secrets form: apply writes a SealedSecret
// sealed with the controller's certificate, finalize marks the Secret so
// the controller takes it over in place (docs/secrets.md).
const SecretFormSealed = "sealed"

// SecretFormSops is the SOPS form: apply writes the Secret's manifest
// encrypted by the sops CLI as the repo's .sops.yaml rule for its path
// says; Argo CD decrypts it with a plugin (docs/secrets.md).
const SecretFormSops = "sops"

// SecretFormESO is the External Secrets Operator form: finalize pushes
// the live value once to a store and proves it reads back equal, apply
// writes an ExternalSecret that reads it back, which takes the Secret
// over in place at the first sync (docs/secrets.md).
const SecretFormESO = "eso"

// CodeSecretForm is the finding that says how a Secret is adopted, or why
// it is not.
const CodeSecretForm = "secret-form"

// SecretForm is how a hand-applied Secret is adopted. It names no value
// and no digest of one.
type SecretForm struct {
	// Form is SecretFormSealed, SecretFormSops or SecretFormESO.
	Form string `json:"form" yaml:"form"`
	// Controller is the Sealed Secrets controller's Service,
	// namespace/name, whose certificate seals it and which verifies it.
	Controller string `json:"controller,omitempty" yaml:"controller,omitempty"`
	// Fingerprint names the controller's public key (SHA-256 of its PKIX
	// encoding; not secret): apply refuses another key.
	Fingerprint string `json:"fingerprint,omitempty" yaml:"fingerprint,omitempty"`
	// Store is the External Secrets store of form eso ("SecretStore
	// ns/name" or "ClusterSecretStore name"), and RemoteKey the key the
	// value is pushed to and read back from.
	Store     string `json:"store,omitempty" yaml:"store,omitempty"`
	RemoteKey string `json:"remoteKey,omitempty" yaml:"remoteKey,omitempty"`
	// UID and SealedAt are the Secret's uid and resourceVersion when plan
	// read its metadata: apply seals only that version, and finalize marks
	// only that Secret at that version.
	UID      string `json:"uid" yaml:"uid"`
	SealedAt string `json:"sealedAt" yaml:"sealedAt"`
	// Why says how the form was chosen.
	Why string `json:"why" yaml:"why"`
	// Sops is the .sops.yaml rule of the SOPS form (Form is
	// SecretFormSops; Controller and Fingerprint are then empty).
	Sops *SopsForm `json:"sops,omitempty" yaml:"sops,omitempty"`
}

// SopsForm is the creation rule of the repo's .sops.yaml that encrypts
// the Secret: public recipients and paths, never a value.
type SopsForm struct {
	// File is the repo path apply writes the encrypted manifest to, the
	// path the rule matched.
	File string `json:"file" yaml:"file"`
	// Config is the .sops.yaml's repo path; ConfigSHA256 the hex SHA-256
	// of its bytes (a public file): apply refuses another one.
	Config       string `json:"config" yaml:"config"`
	ConfigSHA256 string `json:"configSHA256" yaml:"configSHA256"`
	// Rule is the rule's index in creation_rules, PathRegex its
	// path_regex ("" matches every path).
	Rule      int    `json:"rule" yaml:"rule"`
	PathRegex string `json:"pathRegex,omitempty" yaml:"pathRegex,omitempty"`
	// Age are the age recipients the rule encrypts to.
	Age []string `json:"age" yaml:"age"`
	// EncryptedRegex is the rule's encrypted_regex.
	EncryptedRegex string `json:"encryptedRegex,omitempty" yaml:"encryptedRegex,omitempty"`
}

// Sealed reports whether the object is a Secret adopted as a SealedSecret.
func (o *Object) Sealed() bool { return o.SecretForm != nil && o.SecretForm.Form == SecretFormSealed }

// Sops reports whether the object is a Secret adopted in the SOPS form.
func (o *Object) Sops() bool {
	return o.SecretForm != nil && o.SecretForm.Form == SecretFormSops && o.SecretForm.Sops != nil
}

// ESO reports whether the object is a Secret adopted as an ExternalSecret.
func (o *Object) ESO() bool { return o.SecretForm != nil && o.SecretForm.Form == SecretFormESO }

// InForm reports whether the object is a Secret adopted in one of the
// forms (sealed, sops or eso): apply writes it to Git encrypted or
// referenced, like any other object of its Application. A Secret in no
// form is left out of Git.
func (o *Object) InForm() bool { return o.Sealed() || o.Sops() || o.ESO() }

// SecretCandidates are the Secrets a form could adopt: in an Application,
// not in Git and not of a Helm release (whose chart keeps its data).
func (p *Plan) SecretCandidates() []*Object {
	var out []*Object
	for i := range p.Objects {
		o := &p.Objects[i]
		if o.IsSecret() && o.App != "" && o.Git == nil && o.HelmRelease == "" {
			out = append(out, o)
		}
	}
	return out
}

// SetSecretForm adopts the Secret o in form f: its secret finding becomes
// an Info that says so.
func (p *Plan) SetSecretForm(o *Object, f SecretForm) {
	o.SecretForm = &f
	o.Findings = slices.DeleteFunc(o.Findings, func(x Finding) bool { return x.Code == CodeSecret })
	msg := fmt.Sprintf(
		"adopted as a SealedSecret (%s): apply seals its values with the certificate of the Sealed Secrets controller at Service %s (key %s) and writes only the ciphertext; finalize marks the Secret managed before the first sync, so the controller takes it over in place (same uid, same data)",
		f.Why, f.Controller, f.Fingerprint)
	switch {
	case f.Form == SecretFormSops && f.Sops != nil:
		msg = sopsMessage(f)
	case f.Form == SecretFormESO:
		msg = fmt.Sprintf(
			"adopted as an ExternalSecret (%s): apply writes an ExternalSecret that reads key %s of %s back into this Secret (creationPolicy Owner); before the first sync, finalize pushes the live value there once, from a copy without labels or annotations, and proves it reads back equal; the ExternalSecret then takes the Secret over in place (same uid, same data)",
			f.Why, f.RemoteKey, f.Store)
	}
	o.Findings = append(o.Findings, Finding{Code: CodeSecretForm, Severity: Info, Message: msg})
	p.refresh(o)
}

// SecretLeftOut says, on the Secret o, why no form adopts it: it stays
// out of Git, named.
func (p *Plan) SecretLeftOut(o *Object, sev Severity, why string) {
	o.Findings = append(o.Findings, Finding{Code: CodeSecretForm, Severity: sev, Message: why})
	p.refresh(o)
}

func (p *Plan) refresh(o *Object) {
	sortFindings(o.Findings)
	o.Risk = maxSeverity(o.Findings)
	pv := p.Summary.Preview
	p.summarize()
	p.Summary.Preview = pv
}

// sopsMessage is the SOPS form's finding: what apply writes, and what
// each key's proof is and is not.
func sopsMessage(f SecretForm) string {
	s := f.Sops
	rule := fmt.Sprintf("%s creation_rules[%d]", s.Config, s.Rule)
	if s.PathRegex != "" {
		rule += fmt.Sprintf(" (path_regex %q)", s.PathRegex)
	}
	return fmt.Sprintf("adopted as a SOPS-encrypted manifest (%s): apply has the sops CLI encrypt the live Secret (resourceVersion %s) to %s, with %s deciding what is encrypted (%d age recipient(s): %s); per key, the file decrypts to the live value because sops encrypts exactly the value apply reads, refused if the Secret changed since this plan; apply proves it by decrypting again only where an age identity is given (SOPS_AGE_KEY_FILE), and otherwise proves only that every key is encrypted to those recipients and no value is in clear. Argo CD needs a plugin that decrypts it (docs/secrets.md)",
		f.Why, f.SealedAt, s.File, rule, len(s.Age), strings.Join(s.Age, ", "))
}
