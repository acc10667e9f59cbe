package preview

import (
	"context"
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/redact"
)

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// hidden is what a preview of one object may not show: the caller's secret
// values (Input.Hide), every value of the live object and of the manifest
// that the one secret rule finds (j.Hide; the server's answer is added
// once it comes), and the values of every Secret the live object or the
// manifest reads (env valueFrom.secretKeyRef, envFrom secretRef, secret
// volumes and projections), read from the cluster. When such a Secret
// cannot be read, every env value is hidden (allEnv) and a note says why.
func (p *Previewer) hidden(ctx context.Context, j *redact.Judge, in Input, r *Result) (set *redact.Set, allEnv bool) {
	set = &redact.Set{}
	if in.Hide != nil {
		*set = *in.Hide
	}
	j.Hide(set, in.Live.Object)
	j.Hide(set, in.Manifest.Object)
	names := map[string]bool{}
	secretRefs(in.Live.Object, names)
	secretRefs(in.Manifest.Object, names)
	ns := in.Live.GetNamespace()
	for _, name := range slices.Sorted(maps.Keys(names)) {
		s, err := p.Client.Resource(secretsResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			allEnv = true
			r.Notes = append(r.Notes, "env values are hidden: Secret "+ns+"/"+name+", which this object reads, could not be read to tell its values apart: "+strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		data, _, _ := unstructured.NestedStringMap(s.Object, "data")
		for _, v := range data {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil {
				set.Add(string(b))
			}
		}
	}
	return set, allEnv
}

// secretRefs adds to names every Secret a pod spec anywhere in v reads:
// secretKeyRef.name, envFrom's secretRef.name, a volume's
// secret.secretName and a projected volume's secret.name.
func secretRefs(v any, names map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			m, _ := e.(map[string]any)
			switch {
			case (k == "secretKeyRef" || k == "secretRef") && m != nil:
				if n, _ := m["name"].(string); n != "" {
					names[n] = true
				}
			case k == "secret" && m != nil:
				for _, f := range []string{"secretName", "name"} {
					if n, _ := m[f].(string); n != "" {
						names[n] = true
					}
				}
			}
			secretRefs(e, names)
		}
	case []any:
		for _, e := range x {
			secretRefs(e, names)
		}
	}
}

// isEnvPath reports whether a change path is an env var's value.
func isEnvPath(path string) bool {
	return strings.Contains(path, ".env[") || strings.Contains(path, ".env.") || strings.HasSuffix(path, ".env")
}

// mask hides every secret value in the result's messages (a server's
// verdict or note may quote the manifest): the known set's, and what the
// judge finds.
func mask(r *Result, set *redact.Set, j *redact.Judge) {
	hide := func(s string) string { return j.Mask(set.Mask(s)) }
	r.Verdict = hide(r.Verdict)
	for i := range r.Notes {
		r.Notes[i] = hide(r.Notes[i])
	}
	for i := range r.Warnings {
		r.Warnings[i] = hide(r.Warnings[i])
	}
}

// maskedError is an error whose message has every secret value hidden; it
// unwraps to the original, so callers can still tell its kind.
type maskedError struct {
	err  error
	hide *redact.Set
}

func (e maskedError) Error() string { return e.hide.Mask(e.err.Error()) }
func (e maskedError) Unwrap() error { return e.err }
