package helmrelease

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// Redact returns a copy of values in which every secret value is a
// redact.Placeholder, the key paths it replaced, and every secret value (for
// a preview to hide): redact.Values's rule with j judging by value, where
// the values known to be secret are those the release puts into a
// Secret's data or stringData, in its manifest or in a hook's (manifests).
func Redact(j *redact.Judge, values map[string]any, manifests ...string) (map[string]any, []string, *redact.Set) {
	return redact.Values(values, SecretValues(manifests...), j)
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

// ValuesFile returns the first of files whose values, parsed as `helm
// install -f` parses a values file, equal config (a release's
// user-supplied values); "" when none does or config is empty. read
// returns a file's content.
func ValuesFile(config map[string]any, files []string, read func(string) ([]byte, error)) string {
	want, err := asJSON(config)
	if err != nil || len(config) == 0 {
		return ""
	}
	for _, f := range files {
		b, err := read(f)
		if err != nil {
			continue
		}
		m := map[string]any{}
		if yaml.Unmarshal(b, &m) != nil {
			continue
		}
		if got, err := asJSON(m); err == nil && reflect.DeepEqual(got, want) {
			return f
		}
	}
	return ""
}

// asJSON is v as JSON decodes it (numbers float64), so that values read
// from a release record and from a file compare equal.
func asJSON(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	return out, json.Unmarshal(b, &out)
}
