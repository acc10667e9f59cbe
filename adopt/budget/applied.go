package budget

import "encoding/json"

// AppliedConfig is what a client-side `kubectl apply` of obj writes into
// last-applied-configuration: obj as JSON (sorted keys, one trailing
// newline) without that annotation, with namespace set when obj has none.
// obj is not modified.
func AppliedConfig(obj map[string]any, namespace string) ([]byte, error) {
	c := copyMap(obj)
	meta := copyMap(asMap(c["metadata"]))
	if namespace != "" && meta["namespace"] == nil {
		meta["namespace"] = namespace
	}
	if ann := asMap(meta["annotations"]); len(ann) > 0 {
		ann = copyMap(ann)
		delete(ann, LastAppliedKey)
		if len(ann) == 0 {
			delete(meta, "annotations")
		} else {
			meta["annotations"] = ann
		}
	}
	c["metadata"] = meta
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
