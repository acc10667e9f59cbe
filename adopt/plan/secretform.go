package plan

import (
	"fmt"
	"slices"
)

// SecretFormSealed is the Sealed Secrets form: apply writes a SealedSecret
// sealed with the controller's certificate, finalize marks the Secret so
// the controller takes it over in place (docs/secrets.md).
const SecretFormSealed = "sealed"

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
	// Form is SecretFormSealed or SecretFormESO.
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
}

// Sealed reports whether the object is a Secret adopted as a SealedSecret.
func (o *Object) Sealed() bool { return o.SecretForm != nil && o.SecretForm.Form == SecretFormSealed }

// ESO reports whether the object is a Secret adopted as an ExternalSecret.
func (o *Object) ESO() bool { return o.SecretForm != nil && o.SecretForm.Form == SecretFormESO }

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
	if f.Form == SecretFormESO {
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
