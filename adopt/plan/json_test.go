package plan

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
)

// TestWriteJSONIsEncodingJSON checks that the streaming encoder writes the
// same bytes as json.Encoder, compact and indented, for empty, nil and
// filled lists, and lists of several blocks encoded at once.
func TestWriteJSONIsEncodingJSON(t *testing.T) {
	full := &Plan{APIVersion: APIVersion, Kind: Kind, ID: "plan-x", Cluster: Cluster{Server: "https://127.0.0.1:6443"},
		Applications: []Application{{Name: "a", Objects: []string{"/ConfigMap ns/a"}}},
		Objects: []Object{{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Name: "a<b>&", Namespace: "ns"}, Budget: budget.Budget{}, Managers: []string{"kubectl (Apply)"}},
			{Ref: objref.Ref{Version: "v1", Kind: "Secret", Name: "s", Namespace: "ns"}}},
		Skipped:    []Skipped{{Kind: "Pod", Name: "p", Reason: "owned"}},
		NotScanned: []NotScanned{{Type: "widgets.example.com", Reason: "forbidden"}},
		Findings:   []Finding{{Code: "x", Message: "m"}}}
	many := &Plan{APIVersion: APIVersion, Kind: Kind, Objects: make([]Object, 3*orderBlock+5)}
	for i := range many.Objects {
		many.Objects[i] = Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmtName(i)}}
	}
	for name, p := range map[string]*Plan{
		"full":        full,
		"many blocks": many,
		"nil objects": {APIVersion: APIVersion, Kind: Kind},
		"no objects":  {APIVersion: APIVersion, Kind: Kind, Objects: []Object{}, Skipped: []Skipped{{Kind: "Pod", Name: "p", Reason: "r"}}},
		"only notScanned": {APIVersion: APIVersion, Kind: Kind, Objects: []Object{{Ref: objref.Ref{Name: "o", Kind: "K", Version: "v1"}}},
			NotScanned: []NotScanned{{Type: "t", Reason: "r"}}},
	} {
		for _, indent := range []bool{false, true} {
			var want, got bytes.Buffer
			e := json.NewEncoder(&want)
			if indent {
				e.SetIndent("", "  ")
			}
			if err := e.Encode(p); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteJSON(&got, indent); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("%s (indent %v):\n got %s\nwant %s", name, indent, got.String(), want.String())
			}
		}
	}
}

func fmtName(i int) string { return "cm-" + strconv.Itoa(i) }

// TestAppendIndentIsJSONIndent checks appendIndent against json.Indent on
// what json.Marshal writes for nested values: empty and filled objects and
// arrays at every depth, and strings holding quotes, backslashes,
// brackets, commas, colons, escapes and non-ASCII text.
func TestAppendIndentIsJSONIndent(t *testing.T) {
	strs := []string{"", `"`, `\`, `\"`, `a"b\c`, "{[,:]}", "<&>", "tab\tnl\n", "ü€😀", "\u2028", "\x00", "end\\"}
	r := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(7); {
		case depth > 4 || k == 0:
			return strs[r.IntN(len(strs))]
		case k == 1:
			return r.IntN(2000) - 1000
		case k == 2:
			return []any{}
		case k == 3:
			return map[string]any{}
		case k == 4:
			return []any{nil, true, r.Float64()}
		case k == 5:
			a := make([]any, r.IntN(4))
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		default:
			m := map[string]any{}
			for range r.IntN(4) {
				m[strs[r.IntN(len(strs))]+strconv.Itoa(r.IntN(9))] = value(depth + 1)
			}
			return m
		}
	}
	for i := range 2000 {
		raw, err := json.Marshal(value(0))
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, raw, "    ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := appendIndent([]byte("x"), raw, "    ", "  "); string(got) != "x"+want.String() {
			t.Fatalf("value %d, %s:\n got %s\nwant %s", i, raw, got, want.String())
		}
	}
}

// BenchmarkEncode writes a plan of 20,000 objects the three ways a plan
// run does: the id's digest (compact JSON), -o json (indented) and the
// plan file (YAML).
func BenchmarkEncode(b *testing.B) {
	p := manyPlan(20000, 500)
	file := filepath.Join(b.TempDir(), "plan.yaml")
	for _, c := range []struct {
		name  string
		write func(w io.Writer) error
	}{
		{"json", func(w io.Writer) error { return p.WriteJSON(w, false) }},
		{"json-indent", func(w io.Writer) error { return p.WriteJSON(w, true) }},
		{"yaml", func(w io.Writer) error { return Encode(w, p) }},
		{"file", func(io.Writer) error { return WriteFile(file, p) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
