package gitindex

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/argoapp"
)

// Drift is how a live object differs from its manifest.
type Drift struct {
	// Fields are the differing field paths (data.hook.py, spec.replicas),
	// sorted. Values are never recorded.
	Fields []string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// BytesBehind is how many bytes of the manifest's values the live object
	// lacks: for each differing value, the length of the differing span
	// between the two (after their common prefix and suffix).
	BytesBehind int `json:"bytesBehind" yaml:"bytesBehind"`
}

// Identical says the live object has every value the manifest sets.
func (d Drift) Identical() bool { return len(d.Fields) == 0 }

// comparedMeta are the metadata fields compared; everything else under
// metadata is identity or server state.
var comparedMeta = []string{"labels", "annotations"}

// ignoredAnnotations are written by tools, not by the author of a manifest.
var ignoredAnnotations = map[string]bool{
	budget.LastAppliedKey:            true,
	argoapp.AnnotationTrackingID:     true,
	argoapp.AnnotationInstallationID: true,
}

// Compare reports the fields the manifest sets that the live object does not
// hold with the same value. Fields the manifest leaves out (server defaults,
// status) are not drift. A Secret manifest's stringData is compared with the
// live data, decoded.
func Compare(manifest, live map[string]any) Drift {
	d := &Drift{}
	for k, want := range manifest {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			wm, _ := want.(map[string]any)
			lm, _ := live["metadata"].(map[string]any)
			for _, f := range comparedMeta {
				w, _ := wm[f].(map[string]any)
				l, _ := lm[f].(map[string]any)
				for key, wv := range w {
					if f == "annotations" && ignoredAnnotations[key] {
						continue
					}
					diff("metadata."+f+"."+key, wv, l[key], d)
				}
			}
		case "stringData":
			wm, _ := want.(map[string]any)
			ld, _ := live["data"].(map[string]any)
			for key, wv := range wm {
				var lv any
				if s, ok := ld[key].(string); ok {
					if dec, err := base64.StdEncoding.DecodeString(s); err == nil {
						lv = string(dec)
					}
				}
				diff("stringData."+key, wv, lv, d)
			}
		default:
			diff(k, want, live[k], d)
		}
	}
	sort.Strings(d.Fields)
	return *d
}

func diff(path string, want, got any, d *Drift) {
	switch w := want.(type) {
	case nil:
		return
	case map[string]any:
		g, ok := got.(map[string]any)
		if len(w) == 0 && got == nil {
			return
		}
		if !ok {
			d.add(path, want, got)
			return
		}
		for k, wv := range w {
			diff(path+"."+k, wv, g[k], d)
		}
	case []any:
		g, ok := got.([]any)
		if len(w) == 0 && got == nil {
			return
		}
		if !ok || len(g) != len(w) {
			d.add(path, want, got)
			return
		}
		for i := range w {
			diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], d)
		}
	default:
		if !sameScalar(want, got) {
			d.add(path, want, got)
		}
	}
}

func (d *Drift) add(path string, want, got any) {
	d.Fields = append(d.Fields, path)
	d.BytesBehind += span(repr(want), repr(got))
}

// repr is a value's bytes: a string as is, anything else as JSON; a missing
// value is empty.
func repr(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// span is the length of the differing middle of a and b: the longer one's
// length minus their common prefix and suffix.
func span(a, b string) int {
	n := len(a)
	if len(b) > n {
		n = len(b)
	}
	short := len(a)
	if len(b) < short {
		short = len(b)
	}
	p := 0
	for p < short && a[p] == b[p] {
		p++
	}
	s := 0
	for s < short-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return n - p - s
}

func sameScalar(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return repr(a) == repr(b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// FieldList renders fields for a message, at most n of them.
func FieldList(fields []string, n int) string {
	if len(fields) <= n {
		return strings.Join(fields, ", ")
	}
	return strings.Join(fields[:n], ", ") + fmt.Sprintf(" and %d more", len(fields)-n)
}
