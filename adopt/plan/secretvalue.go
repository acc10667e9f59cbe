package plan

import (
	"fmt"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// CodeSecretValue: a value of an object that would be exported looks like
// a secret (by value, or by its key's name).
const CodeSecretValue = "secret-value"

// Exported says whether apply exports the object from live: it is in an
// Application that is not Helm-sourced (App set, no HelmRelease), has no
// manifest in Git, and is not a Secret (a Secret is written as a
// placeholder or not at all). Build judges what such an object holds
// (SecretValues) as apply does before it writes it.
func (o *Object) Exported() bool {
	return o.App != "" && o.HelmRelease == "" && o.Git == nil && !o.IsSecret()
}

// SecretValues judges an object's clean export (export.Clean: what apply
// would write) with the one secret rule (redact.Judge.Scan) and returns a
// finding per value that looks like a secret (SecretValueFinding). Build
// adds them to the plan, and apply refuses the critical ones: both call
// it, so the plan shows every refusal apply would make.
func SecretValues(j *redact.Judge, clean map[string]any, ref objref.Ref, allow []config.AllowValue) []Finding {
	var fs []Finding
	for _, h := range j.Scan(clean) {
		fs = append(fs, SecretValueFinding(ref, h, allow))
	}
	return fs
}

// SecretValueFinding is the finding for one hit of the object: critical
// (it is not exported, and how to fix it), or info when an allowValues
// entry passes it. It names the path and the rule, never the value.
func SecretValueFinding(ref objref.Ref, h redact.Hit, allow []config.AllowValue) Finding {
	if by := config.Allowed(allow, ref.Group, ref.Kind, ref.Namespace, ref.Name, h.Path); by != "" {
		return Finding{Code: CodeSecretValue, Severity: Info, Message: fmt.Sprintf(
			"%s looks like a secret (rule %s), and adopt.yaml %s allows it: it is exported as it is", h.Path, h.Rule, by)}
	}
	return Finding{Code: CodeSecretValue, Severity: Critical, Message: fmt.Sprintf(
		"%s looks like a secret (rule %s): the object is not exported while it holds it. Move the value into a Secret and reference it (env valueFrom.secretKeyRef, envFrom, or a Secret volume), apply that, then plan again; or, after review, allow it in adopt.yaml: allowValues: [{kinds: [%s], namespaces: [%s], names: [%s], paths: [%q]}]",
		h.Path, h.Rule, ref.Kind, ref.Namespace, ref.Name, h.Path)}
}
