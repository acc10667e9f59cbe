package helmrelease

import (
	"encoding/base64"
	"sort"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// Redact returns a copy of values in which every secret value is a
// redact.Placeholder, the key paths it replaced, and every secret value (for
// a preview to hide): redact.Values's rule, where the values known to be
// secret are those the release puts into a Secret's data or stringData, in
// its manifest or in a hook's (manifests).
func Redact(values map[string]any, manifests ...string) (map[string]any, []string, *redact.Set) {
	return redact.Values(values, SecretValues(manifests...))
}

// SecretValues is every data (decoded) and stringData value of the Secrets
// in the manifests, for redact.Values and for the preview to hide.
func SecretValues(manifests ...string) *redact.Set {
	s := &redact.Set{}
	for _, m := range manifests {
		for _, doc := range releaseutil.SplitManifests(m) {
			var o struct {
				Kind       string            `json:"kind"`
				Data       map[string]string `json:"data"`
				StringData map[string]string `json:"stringData"`
			}
			if yaml.Unmarshal([]byte(doc), &o) != nil || o.Kind != "Secret" {
				continue
			}
			for _, v := range o.Data {
				if b, err := base64.StdEncoding.DecodeString(v); err == nil {
					s.Add(string(b))
				}
			}
			for _, v := range o.StringData {
				s.Add(v)
			}
		}
	}
	return s
}

// Secrets names the Secrets in a manifest (namespace defaulting to ns), as
// namespace/name: their data is kept from live at sync (Argo CD
// ignoreDifferences with RespectIgnoreDifferences), so placeholders and
// values a chart generates (randAlphaNum) never overwrite a live secret.
func Secrets(manifest, ns string) []string {
	var out []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &o) != nil || o.Kind != "Secret" || o.Metadata.Name == "" {
			continue
		}
		n := o.Metadata.Namespace
		if n == "" {
			n = ns
		}
		out = append(out, n+"/"+o.Metadata.Name)
	}
	sort.Strings(out)
	return out
}
