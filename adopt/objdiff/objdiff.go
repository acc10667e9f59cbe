// Package objdiff is adopt's one comparison of two versions of one
// Kubernetes object. Drift (gitindex: a manifest against live), the Helm
// proof (helmrelease: the release's manifest against the chart rendered
// now) and the preview (live against the first sync's dry run) all call
// Diff, so each follows the same rules: which fields count, how lists are
// matched, how a field is spelt, and the order fields are listed in.
//
// It must not read anything, print, or turn a value into text. A Field
// carries both values so that its caller can measure them (drift's bytes
// behind) or show them through the preview's hiding; a path never holds a
// value.
//
// # What is not compared
//
//   - Identity, which is how the two were paired: apiVersion (the server
//     converts between served versions), kind, metadata.name and
//     metadata.namespace.
//   - What the server sets: metadata.uid, resourceVersion, generation,
//     creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds,
//     selfLink and managedFields, and status.
//   - What tools write: the annotations kubectl's client-side apply
//     (budget.LastAppliedKey) and Argo CD's tracking (argoapp's
//     AnnotationTrackingID and AnnotationInstallationID) write.
//   - Emptiness: null, and a map or list holding nothing but those ({},
//     [], {annotations: {}}), are the same as no field, as the API server
//     drops them.
//
// A core Secret's stringData is compared as the data the server stores it
// as (each string base64-encoded), and numbers compare by value, so that
// 2, int64(2) and 2.0 are equal whichever decoder read them.
//
// # Lists
//
// A list whose items are all objects with a distinct string name (containers,
// env, volumes, ports with names, webhooks) is matched by name, spelt
// containers[name=main]; another list item by item when both have the same
// length, spelt args[0]; otherwise it differs whole.
//
// # Why not gitops-engine's pkg/diff
//
// Argo CD decides OutOfSync with github.com/argoproj/gitops-engine/pkg/diff,
// and adopt already links it through argo-cd. It answers a different
// question: its Diff re-encodes both objects as JSON, applies the
// manifest to live as a (three-way, from the last-applied annotation)
// strategic merge patch with the built-in types' defaults, and returns
// whether the predicted and normalized live objects differ, as two JSON
// documents. It names no field, so a caller would still walk those
// documents with this package to say which fields and how many bytes, and
// it costs tens of times this walk (objdiff_bench_test.go measures it on a
// ConfigMap near the annotation cap, a Deployment and a CRD; the numbers
// are in docs/architecture.md). The first sync the preview shows is
// already the server's own answer (a server-side apply dry run, what Argo
// CD's server-side diff asks for), and drift and the Helm proof compare
// documents whose values the API server would keep as written, so the
// strategic merge adds nothing they need.
package objdiff

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/argoapp"
)

// Op says which side holds a differing field.
type Op string

// The ways a field differs.
const (
	// Add: only b holds it.
	Add Op = "add"
	// Remove: only a holds it.
	Remove Op = "remove"
	// Replace: both hold it, with different values.
	Replace Op = "replace"
)

// Field is one field at which two objects differ.
type Field struct {
	// Path names the field: spec.template.spec.containers[name=main].image,
	// data.hook.py, spec.args[0]. Map keys are joined with dots as they
	// are, dots and slashes included.
	Path string
	Op   Op
	// A and B are the field's values in a and in b; nil on the side that
	// does not hold it. They are for measuring and for judged display only:
	// never print them as they are.
	A, B any
}

// Diff lists the fields at which a and b differ, sorted by path: a is the
// object as it is (live, or the release's manifest), b as it will be (the
// manifest, the chart rendered now, or the synced object). Neither is
// modified.
func Diff(a, b map[string]any) []Field {
	var fs []Field
	walk("", content(a), content(b), &fs)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	return fs
}

func walk(path string, a, b any, fs *[]Field) {
	switch ea, eb := empty(a), empty(b); {
	case ea && eb:
		return
	case ea:
		*fs = append(*fs, Field{Path: path, Op: Add, B: b})
		return
	case eb:
		*fs = append(*fs, Field{Path: path, Op: Remove, A: a})
		return
	}
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			walkMaps(path, x, y, "", fs)
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			if nx, ny := byName(x), byName(y); nx != nil && ny != nil {
				walkMaps(path, nx, ny, "name=", fs)
				return
			}
			if len(x) == len(y) {
				for i := range x {
					walk(fmt.Sprintf("%s[%d]", path, i), x[i], y[i], fs)
				}
				return
			}
		}
	default:
		if same(a, b) {
			return
		}
	}
	*fs = append(*fs, Field{Path: path, Op: Replace, A: a, B: b})
}

// walkMaps walks the keys of x and y: an object's fields (index ""), or
// a list's items by name (index "name=").
func walkMaps(path string, x, y map[string]any, index string, fs *[]Field) {
	sub := func(k string) string {
		switch {
		case index != "":
			return path + "[" + index + k + "]"
		case path == "":
			return k
		}
		return path + "." + k
	}
	for k, v := range x {
		walk(sub(k), v, y[k], fs)
	}
	for k, v := range y {
		if _, ok := x[k]; !ok {
			walk(sub(k), nil, v, fs)
		}
	}
}

// empty reports whether v is null, or a map or list holding nothing else.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if !empty(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !empty(e) {
				return false
			}
		}
		return true
	}
	return false
}

// byName indexes a list of objects by their "name" field, or returns nil
// when an item is not an object, has no string name, or shares one.
func byName(l []any) map[string]any {
	m := make(map[string]any, len(l))
	for _, it := range l {
		o, ok := it.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := o["name"].(string)
		if !ok {
			return nil
		}
		if _, dup := m[n]; dup {
			return nil
		}
		m[n] = o
	}
	return m
}

// same compares two values that are neither maps nor lists: numbers by
// value, anything else as Go values.
func same(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// serverSet reports whether a metadata field is identity or server state.
func serverSet(field string) bool {
	switch field {
	case "name", "namespace", "uid", "resourceVersion", "generation", "selfLink", "managedFields",
		"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds":
		return true
	}
	return false
}

// toolSet reports whether an annotation is one tools write, not the
// author of a manifest.
func toolSet(key string) bool {
	switch key {
	case budget.LastAppliedKey, argoapp.AnnotationTrackingID, argoapp.AnnotationInstallationID:
		return true
	}
	return false
}

// content is what Diff compares of obj: a copy, shallow except where a
// field is left out, without what the package doc says is not compared,
// and with a Secret's stringData as data.
func content(obj map[string]any) map[string]any {
	c := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "apiVersion", "kind", "status":
		case "metadata":
			c[k] = metadata(v)
		default:
			c[k] = v
		}
	}
	if obj["apiVersion"] == "v1" && obj["kind"] == "Secret" {
		secretData(c)
	}
	return c
}

func metadata(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		if serverSet(k) {
			continue
		}
		if ann, ok := v.(map[string]any); ok && k == "annotations" {
			kept := make(map[string]any, len(ann))
			for a, av := range ann {
				if !toolSet(a) {
					kept[a] = av
				}
			}
			v = kept
		}
		c[k] = v
	}
	return c
}

// secretData moves c's stringData into a copy of its data, each string
// base64-encoded, as the API server stores a Secret (a key in both takes
// stringData's value).
func secretData(c map[string]any) {
	sd, ok := c["stringData"].(map[string]any)
	if !ok {
		return
	}
	data := map[string]any{}
	if d, ok := c["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			v = base64.StdEncoding.EncodeToString([]byte(s))
		}
		data[k] = v
	}
	c["data"] = data
	delete(c, "stringData")
}
