package plan

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/yamlenc"
)

// awkward are strings yaml.v3 writes in every style: plain, single- and
// double-quoted, literal blocks, and the ones that would read back as
// another type.
var awkward = []string{
	"", "plain", "ok-name_1.x/y", "true", "False", "yes", "N", "off", "null", "~", "<<", "1", "-1", "1.5", "0x1F", "1e3",
	".inf", "1:20", "2026-01-01", "-", "- a", "a: b", "a:b", "key:", "a #b", "a#b", "#x", "'q'", `"dq"`, "it's", "multi\nline",
	"trailing\n", "\nleading", " lead", "trail ", "tab\there", "ünïcödé", "日本", "\x01ctrl", "\xffbad utf8", "@at", "%p", "a,b",
	"[x]", "{y}", "*star", "&amp", "!bang", "|pipe", ">gt", "`bt", "?q", strings.Repeat("long words ", 30), "kubectl (Apply)",
	"no source in Git checked (no --repo): the live object would be exported to Git", "---", "...", "ConfigMap ns/a", "a  b", "it's: x", "note #1", "x:", "a:b c", "Yes please", "Yes", "a'b", "z\\q", "ab\"c", "ends with space ", "a\u2028b", "\u00a0nbsp", "x\r\ny", "\n\n", "\n",
}

// filler sets every field reachable from a value, taking strings from
// awkward in turn and alternating empty and filled lists, nil and set
// pointers; with flat, no maps and no strings on several lines.
type filler struct {
	n    int
	flat bool
	// ascii keeps to the strings yamlenc.AppendASCII renders.
	ascii bool
}

func (f *filler) fill(v reflect.Value, depth int) {
	f.n++
	switch v.Kind() {
	case reflect.String:
		s := awkward[f.n%len(awkward)]
		for f.flat && strings.ContainsAny(s, "\n\r\u2028") || f.ascii && !renders(s) {
			f.n++
			s = awkward[f.n%len(awkward)]
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(f.n%2 == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(f.n%7) * int64(f.n%3-1) * 1000)
	case reflect.Float64, reflect.Float32:
		v.SetFloat([]float64{0, 12.5, 1e21, 0.1, -3}[f.n%5])
	case reflect.Pointer:
		if f.n%3 != 0 && depth < 6 {
			v.Set(reflect.New(v.Type().Elem()))
			f.fill(v.Elem(), depth+1)
		}
	case reflect.Slice:
		if depth >= 6 {
			return
		}
		n := f.n % 3
		if n == 0 && f.n%2 == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			f.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth >= 6 || f.n%2 == 0 || f.flat {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := 0; i < 2; i++ {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	case reflect.Interface:
		if f.n%2 == 0 && v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(awkward[f.n%len(awkward)]))
		}
	}
}

// yamlv3Encode is how Encode wrote plans with yaml.v3 alone: the head,
// then each list encoded as a document and indented under its key.
func yamlv3Encode(t *testing.T, p *Plan) string {
	head := *p
	head.Objects, head.Skipped, head.NotScanned = nil, nil, nil
	enc := func(v any) string {
		var b bytes.Buffer
		e := yaml.NewEncoder(&b)
		e.SetIndent(2)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		e.Close()
		return b.String()
	}
	out := strings.TrimSuffix(enc(&head), "objects: []\n")
	list := func(key string, n int, v any, omitEmpty bool) {
		switch {
		case n == 0 && omitEmpty:
		case n == 0:
			out += key + ": []\n"
		default:
			out += key + ":\n"
			for _, line := range strings.SplitAfter(enc(v), "\n") {
				if line != "" {
					out += "  " + line
				}
			}
		}
	}
	list("objects", len(p.Objects), p.Objects, false)
	list("skipped", len(p.Skipped), p.Skipped, true)
	list("notScanned", len(p.NotScanned), p.NotScanned, true)
	return out
}

// TestEncodeIsYAMLv3 checks that Encode writes, byte for byte, what
// yaml.v3 writes, for plans whose every field is filled with strings of
// every YAML style, empty and nil lists, nil pointers and maps, and that
// a whole document decodes to the same plan.
func TestEncodeIsYAMLv3(t *testing.T) {
	plans := []*Plan{samplePlan(), {APIVersion: APIVersion, Kind: Kind}}
	for seed := 0; seed < 20; seed++ {
		p := &Plan{}
		(&filler{n: seed}).fill(reflect.ValueOf(p).Elem(), 0)
		for i := 0; i < 20; i++ {
			var o Object
			(&filler{n: seed*31 + i, flat: i%2 == 0}).fill(reflect.ValueOf(&o).Elem(), 1)
			p.Objects = append(p.Objects, o)
		}
		plans = append(plans, p)
	}
	// Several blocks, encoded at once (ordered), still in order.
	many := &Plan{APIVersion: APIVersion, Kind: Kind}
	for i := 0; i < orderBlock+3; i++ {
		var o Object
		(&filler{n: i, flat: i%5 != 0}).fill(reflect.ValueOf(&o).Elem(), 1)
		many.Objects = append(many.Objects, o)
	}
	plans = append(plans, many)
	fast := 0
	for i, p := range plans {
		p.Summary.Objects, p.Summary.Skipped, p.Summary.NotScanned = len(p.Objects), len(p.Skipped), len(p.NotScanned)
		want := yamlv3Encode(t, p)
		var got bytes.Buffer
		if err := Encode(&got, p); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			g, w := strings.Split(got.String(), "\n"), strings.Split(want, "\n")
			for j := 0; j < len(g) && j < len(w); j++ {
				if g[j] != w[j] {
					t.Fatalf("plan %d, line %d:\n got %q\nwant %q", i, j+1, g[j], w[j])
				}
			}
			t.Fatalf("plan %d: %d lines, want %d", i, len(g), len(w))
		}
		for j := range p.Objects {
			if yamlenc.New().Item(reflect.ValueOf(&p.Objects[j]), 2) == nil {
				fast++
			}
		}
	}
	// Some filled objects carry strings whose blocks go through yaml.v3
	// (a first line starting with a space or a line feed); the test must
	// still see the fast path at work.
	t.Logf("%d objects took yamlenc's path", fast)
	if fast < 100 {
		t.Fatalf("only %d objects took yamlenc's path", fast)
	}
}

func renders(s string) bool {
	_, ok := yamlenc.AppendASCII(nil, s)
	return ok
}

// TestObjectYAMLIsYAMLv3 checks appendObjectYAML against yaml.v3 on
// objects whose every field is filled (so a field added to Object and not
// to appendObjectYAML fails it) with the strings it renders; objects with
// other strings, a drift or a preview go through yamlenc, which
// TestEncodeIsYAMLv3 checks.
func TestObjectYAMLIsYAMLv3(t *testing.T) {
	for i := range 2000 {
		var o Object
		(&filler{n: i, ascii: true}).fill(reflect.ValueOf(&o).Elem(), 1)
		o.Drift, o.Preview, o.SecretForm = nil, nil, nil
		var want bytes.Buffer
		e := yaml.NewEncoder(&want)
		e.SetIndent(2)
		if err := e.Encode([]Object{o}); err != nil {
			t.Fatal(err)
		}
		e.Close()
		got, ok := appendObjectYAML([]byte("x\n"), &o)
		w := "x\n  " + strings.ReplaceAll(strings.TrimSuffix(want.String(), "\n"), "\n", "\n  ") + "\n"
		if !ok || string(got) != w {
			t.Fatalf("object %d (ok %v):\n got %s\nwant %s", i, ok, got, w)
		}
	}
	for name, o := range map[string]Object{
		"drift":      {Drift: &gitindex.Drift{}},
		"preview":    {Preview: &preview.Result{}},
		"secretForm": {SecretForm: &SecretForm{Form: SecretFormSealed}},
		"NaN":        {Budget: budget.Budget{PercentOfCap: math.NaN()}},
		"not ASCII":  {Ref: objref.Ref{Name: "ünï"}},
		"indicator":  {Findings: []Finding{{Message: "- x"}}},
	} {
		if b, ok := appendObjectYAML(nil, &o); ok || len(b) != 0 {
			t.Errorf("%s: written by hand (%q), not left to yamlenc", name, b)
		}
	}
}
