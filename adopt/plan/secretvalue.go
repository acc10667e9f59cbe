package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// CodeSecretValue: a value of an object that would be exported looks like
// a secret (by value, or by its key's name).
const CodeSecretValue = "secret-value"

// Exported says whether the object would be exported from live by apply
// (no manifest in Git, no Application rendering it, not a Helm release's,
// not a Secret), so that what it holds is judged for secrets.
func (o *Object) Exported() bool {
	return o.Git == nil && len(o.Ambiguous) == 0 && o.HelmRelease == "" && !o.IsSecret() && !o.inExisting()
}

// inExisting says whether an existing Application renders the object.
func (o *Object) inExisting() bool {
	for _, f := range o.Findings {
		if f.Code == CodeInApplication {
			return true
		}
	}
	return false
}

// SecretValues judges the export of a live body (export.Clean: what apply
// would write) and returns a finding per value that looks like a secret
// (SecretValueFinding): plan --preview, which reads every object, adds
// them. apply judges the live object again before it writes it.
func SecretValues(body map[string]any, j *redact.Judge, group, kind, namespace, name string, allow []config.AllowValue) []Finding {
	clean, err := export.Clean(&unstructured.Unstructured{Object: body}, export.Options{})
	if err != nil {
		return nil
	}
	var fs []Finding
	for _, h := range j.Scan(clean.Object) {
		fs = append(fs, SecretValueFinding(group, kind, namespace, name, h, allow))
	}
	return fs
}

// SecretValueFinding is the finding for one hit of the object: critical
// (it is not exported, and how to fix it), or info when an allowValues
// entry passes it.
func SecretValueFinding(group, kind, namespace, name string, h redact.Hit, allow []config.AllowValue) Finding {
	if by := config.Allowed(allow, group, kind, namespace, name, h.Path); by != "" {
		return Finding{Code: CodeSecretValue, Severity: Info, Message: fmt.Sprintf(
			"%s looks like a secret (rule %s), and adopt.yaml %s allows it: it is exported as it is", h.Path, h.Rule, by)}
	}
	return Finding{Code: CodeSecretValue, Severity: Critical, Message: fmt.Sprintf(
		"%s looks like a secret (rule %s): the object is not exported while it holds it. Move the value into a Secret and reference it (env valueFrom.secretKeyRef, envFrom, or a Secret volume), apply that, then plan again; or, after review, allow it in adopt.yaml: allowValues: [{kinds: [%s], namespaces: [%s], names: [%s], paths: [%q]}]",
		h.Path, h.Rule, kind, namespace, name, h.Path)}
}
