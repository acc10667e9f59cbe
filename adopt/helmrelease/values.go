package helmrelease

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// PlaceholderPrefix starts every value Redact puts in place of a secret.
const PlaceholderPrefix = "adopt:redacted:"

// Placeholder is the value that replaces the secret at key path p.
func Placeholder(p string) string { return PlaceholderPrefix + p }

// secretKey matches key names that hold secrets; notSecretKey the names
// that only point at one (existingSecret, secretName, tokenRef...).
var (
	secretKey    = regexp.MustCompile(`(?i)(password|passwd|token|secret|key|credential)`)
	notSecretKey = regexp.MustCompile(`(?i)(^existing|name$|ref$|enabled$|create$)`)
)

// Redact returns a copy of values in which every secret-like value is a
// Placeholder, and the key paths it replaced (sorted, as a.b[0].c). A value
// is secret-like when its key matches password, token, secret, key or
// credentials (but not a name that only refers to a secret, such as
// existingSecret, secretName or tokenRef), or when the manifest puts it
// into a Secret's data or stringData.
func Redact(values map[string]any, manifest string) (map[string]any, []string) {
	inSecret := secretData(manifest)
	var paths []string
	var walk func(v any, path, last string) any
	walk = func(v any, path, last string) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, join(path, k), k)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, fmt.Sprintf("%s[%d]", path, i), last)
			}
			return out
		case string:
			if x == "" {
				return x
			}
			if (secretKey.MatchString(last) && !notSecretKey.MatchString(last)) || landsInSecret(x, inSecret) {
				paths = append(paths, path)
				return Placeholder(path)
			}
		}
		return v
	}
	out, _ := walk(values, "", "").(map[string]any)
	sort.Strings(paths)
	return out, paths
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// landsInSecret reports whether a value is, or is inside, a Secret's value.
// Short values (under 4 bytes) are not matched, nor are values under 8
// bytes by containment only, so booleans and small numbers do not count.
func landsInSecret(v string, data []string) bool {
	if len(v) < 4 {
		return false
	}
	for _, d := range data {
		if d == v || len(v) >= 8 && strings.Contains(d, v) {
			return true
		}
	}
	return false
}

// secretData is every data (decoded) and stringData value of the Secrets
// in a manifest.
func secretData(manifest string) []string {
	var out []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
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
				out = append(out, string(b))
			}
		}
		for _, v := range o.StringData {
			out = append(out, v)
		}
	}
	return out
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
