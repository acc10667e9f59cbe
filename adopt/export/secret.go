package export

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SecretMode says what to do with a Secret.
type SecretMode string

// Secret modes.
const (
	// SecretsSkip leaves Secrets out entirely (the default).
	SecretsSkip SecretMode = "skip"
	// SecretsPlaceholder writes the Secret with its keys and empty values.
	SecretsPlaceholder SecretMode = "placeholder"
)

// PlaceholderAnnotation marks a Secret placeholder written by adopt.
const PlaceholderAnnotation = "adopt.dev/secret-placeholder"

// SecretPlaceholder returns a Secret with the live Secret's name, namespace,
// labels, type and keys, and every value empty. Annotations are dropped:
// a Secret's last-applied copy holds its values.
func SecretPlaceholder(live *unstructured.Unstructured, o Options) *unstructured.Unstructured {
	keys := SecretKeys(live)
	data := map[string]any{}
	for _, k := range keys {
		data[k] = ""
	}
	md := map[string]any{"name": live.GetName(), "annotations": map[string]any{PlaceholderAnnotation: "keys only; supply the values from a secret-management source (SealedSecret, ExternalSecret, SOPS)"}}
	if ns := live.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if l := live.GetLabels(); len(l) > 0 {
		lm := map[string]any{}
		for k, v := range l {
			if k != o.InstanceLabelKey && k != "app.kubernetes.io/instance" {
				lm[k] = v
			}
		}
		if len(lm) > 0 {
			md["labels"] = lm
		}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md, "stringData": data}
	if t, ok := live.Object["type"].(string); ok && t != "" {
		obj["type"] = t
	}
	return &unstructured.Unstructured{Object: obj}
}

// SecretKeys lists a Secret's keys (from data and stringData), sorted.
func SecretKeys(live *unstructured.Unstructured) []string {
	seen := map[string]bool{}
	for _, f := range []string{"data", "stringData"} {
		if m, ok := live.Object[f].(map[string]any); ok {
			for k := range m {
				seen[k] = true
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
