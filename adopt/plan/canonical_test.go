package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
)

// sameTree reports how got differs from yaml.v3's tree want, node by node.
func sameTree(got, want *yaml.Node, path string) error {
	type fields struct {
		Kind                                  yaml.Kind
		Style                                 yaml.Style
		Tag, ShortTag, Value, Anchor          string
		HeadComment, LineComment, FootComment string
		Alias                                 bool
		Line, Column, Children                int
	}
	f := func(n *yaml.Node) fields {
		return fields{n.Kind, n.Style, n.Tag, n.ShortTag(), n.Value, n.Anchor, n.HeadComment, n.LineComment, n.FootComment, n.Alias != nil, n.Line, n.Column, len(n.Content)}
	}
	if g, w := f(got), f(want); g != w {
		return fmt.Errorf("%s:\n got %+v\nwant %+v", path, g, w)
	}
	for i := range got.Content {
		if err := sameTree(got.Content[i], want.Content[i], fmt.Sprintf("%s/%d", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkCanonical fails when parseCanonical accepts data but yaml.v3
// reads it otherwise, or when Unmarshal's result or error depends on the
// fast path; it reports whether parseCanonical accepted data.
func checkCanonical(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := parseCanonical(data)
	if ok {
		var want yaml.Node
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatalf("accepted %q, which yaml.v3 refuses: %v", data, err)
		}
		if err := sameTree(got, &want, ""); err != nil {
			t.Fatalf("%q: tree differs from yaml.v3's at %v", data, err)
		}
	}
	fp, ferr := unmarshal(data, true)
	sp, serr := unmarshal(data, false)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fp, sp) {
		t.Fatalf("%q: Unmarshal with the fast path gives %+v, %v; with yaml.v3 alone %+v, %v", data, fp, ferr, sp, serr)
	}
	return ok
}

// manyPlan is a plan like the apply bench's: objects ConfigMaps grouped by
// label into apps Applications.
func manyPlan(objects, apps int) *Plan {
	cm := discover.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	res := &discover.Result{}
	for i := 0; i < objects; i++ {
		res.Objects = append(res.Objects, discover.Object{Type: cm, Namespace: "bench-apply", Name: fmt.Sprintf("cfg-%04d", i),
			Labels:   map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("svc-%03d", i%apps)},
			Managers: []discover.Manager{{Manager: "kubectl-client-side-apply", Operation: "Update"}}, AppliedBytes: 400 + i})
	}
	tr := argoapp.TrackingFromConfig(nil, "argocd", "")
	return Build(Inputs{Result: res, Tracking: tr, Cluster: Cluster{Server: "https://127.0.0.1:6443", Context: "kind"}})
}

// filledPlans are n plans of objects objects whose every field is set
// from awkward's UTF-8 strings; with flat, without maps or strings on
// several lines.
func filledPlans(n, objects int, flat bool) []*Plan {
	var plans []*Plan
	for seed := 0; seed < n; seed++ {
		p := &Plan{}
		(&filler{n: seed, flat: flat}).fill(reflect.ValueOf(p).Elem(), 0)
		for i := 0; i < objects; i++ {
			var o Object
			(&filler{n: seed*31 + i, flat: flat}).fill(reflect.ValueOf(&o).Elem(), 1)
			p.Objects = append(p.Objects, o)
		}
		p.APIVersion, p.Kind = APIVersion, Kind
		// Strings that are not UTF-8 (which no Kubernetes name or message
		// is) are written as !!binary: JSON replaces them.
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		p = &Plan{}
		if err := json.Unmarshal(b, p); err != nil {
			panic(err)
		}
		plans = append(plans, p)
	}
	return plans
}

// multiline are strings yaml.v3 writes as literal block scalars.
var multiline = []string{"multi\nline", "trailing\n", "\nleading", "a\n\nb\n", "  lead\nq", "k: v\n# no comment\n- item\n  more", "ünï\ncödé"}

// multilinePlans are flat filled plans with strings on several lines in a
// mapping, a sequence and a mapping in a sequence of each object.
func multilinePlans(n int) []*Plan {
	plans := filledPlans(n, 4, true)
	for i, p := range plans {
		for j := range p.Objects {
			o := &p.Objects[j]
			s := func(k int) string { return multiline[(i+j+k)%len(multiline)] }
			o.Evidence = s(0)
			o.Managers = append(o.Managers, s(1))
			o.Findings = append(o.Findings, Finding{Code: "c", Message: s(2)})
		}
	}
	return plans
}

// canonicalEdges are texts near the subset's edges, each either read as
// yaml.v3 reads it or refused.
var canonicalEdges = []string{
	"a: b\n", "a: b", "a: b\n\n", "a: b \n", "a:  b\n", "a:\tb\n", "a: b\r\n", " a: b\n", "a: b # c\n", "a: b#c\n", "a: 'b' # c\n",
	"a: b\n  c\n", "a: b\n c: d\n", "a:\n  b: c\n d: e\n", "a:\n  - b\n  c: d\n", "a:\n- b\n", "a:\n    - b\n", "a:\n  - b\n- c\n",
	"a:\nb: c\n", "a: b\na: c\n", "a: -\n", "a: - b\n", "a: -1\n", "a: --x\n", "- a\n", "a: [b]\n", "a: []\n", "a: {}\n", "a: [ ]\n",
	"[]: a\n", "a: {}: b\n", "'a': \"b\"\n", "a: 'it''s'\n", "a: 'x\n", "a: \"x\\\"y\\\\z\\n\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\0\\ \"\n",
	"a: \"\\/\"\n", "a: \"\\q\"\n", "a: \"\\ud800\"\n", "a: \"\\x4\"\n", "a: \"x\\\n", "a: \"\\U00110000\"\n", "a: \"\\x+1\"\n",
	"a: 'b': c\n", "a: \"b\" c\n", "a: b: c\n", "a: b:\n", "a: b:c\n", "a:b: c\n", "a: ~\n", "a: null\n", "a: 1.5\n", "a: 0x1F\n",
	"a: 2026-01-01\n", "a: yes\n", "a: !!str 1\n", "a: &x b\n", "a: *x\n", "a: |\n  b\n", "a: >\n  b\n", "a: %x\n", "a: @x\n", "a: `x\n",
	"<<: a\n", "'<<': a\n", "a: <<\n", "---\na: b\n", "--- a\n", "---: a\n", "...: a\n", "a: b\n...\n", "a: b\n---\n", "? a\n: b\n",
	"a:\n  - - b\n    - c\n  - d\n", "a:\n  - b: c\n    d:\n      - e\n  - f: {}\n", "a:\n  -\n", "a:\n  - \n", "a: ünï: ö\n", "ünï: ö\n",
	"é: 'x'\n", "a: \u00a0b\n", "a: b\u2028c\n", "a: b\u0085\n", "\ufeffa: b\n", "a: \ufeff\n", "a: \xff\n", "a: \x01\n", "a: \"\x7f\"\n",
	"a: b c  d\n", "a: b ,[]{}\n", "a: b'c\"d\n", "a: ?b\n", "a: :b\n", "a: ,b\n", "a:\n  b: c\n  -d: e\n", strings.Repeat("k", 129) + ": v\n",
	strings.Repeat("k", 128) + ": v\n", "apiVersion: adopt.dev/v1alpha1\nkind: AdoptionPlan\n", "a: b\n\tc: d\n", "a: 'b'c\n", "a: \"\"\n",
	"a: |-\n  b\n\n  c\nd: e\n", "a: |2\n\n    b\n", "a: |+\n  b\n\n", "a: |\n  b\n\nc: d\n", "a: |\n   b\n", "a: |\n b\n", "a: |-2\n  b\n",
	"a: |3\n   b\n", "a: | \n  b\n", "a: |\n", "- |\n  b\n", "a:\n  - |\n    b\n   c\n", "a:\n  - b: |-\n      c\n    d: e\n", "a: >\n  b\n",
	"a: |\n  b\n  # c\n  --- d\n", "a: |\n  b\n\n\n", "a: |2-\n     b\n  c\n", "a: |\n  b\n \n  c\n", "a: |\n  b\n  \n  c\n", "a: |\n  b\n   \n",
	"a: |\n  b  \n", "a:\n  b: |\n    c\n  \n    d\n", "a: b \n", "a: \n", "a:  \n", "- \n", "a:\n  - b\n  \n", "a: |2-\n  \n  b\n", "a: |\n  b\n \n",
}

// TestCanonicalIsYAMLv3 checks parseCanonical against yaml.v3 on the
// edges, on a sample plan and on plans filled with awkward strings: what
// it accepts has yaml.v3's tree, and Unmarshal reads the same plan with
// and without it. Every plan Encode wrote with yamlWriter alone is
// accepted, or the fast path would be a fallback in disguise.
func TestCanonicalIsYAMLv3(t *testing.T) {
	accepted := 0
	for _, s := range canonicalEdges {
		if checkCanonical(t, []byte(s)) {
			accepted++
		}
	}
	if accepted < 20 {
		t.Fatalf("only %d of the edges accepted", accepted)
	}
	real, err := os.ReadFile("testdata/plan-preview.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !checkCanonical(t, real) {
		t.Error("testdata/plan-preview.yaml (adopt plan --preview --repo) not accepted")
	}
	plans := append(append([]*Plan{samplePlan(), manyPlan(200, 50)}, filledPlans(40, 10, true)...), multilinePlans(20)...)
	for i, p := range append(plans, filledPlans(20, 10, false)...) {
		data, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if ok := checkCanonical(t, data); !ok && i < len(plans) {
			t.Errorf("plan %d: Encode's text not accepted:\n%s", i, data)
		}
	}
}

// FuzzCanonicalIsYAMLv3: whatever parseCanonical accepts, yaml.v3 reads
// into the same tree, and Unmarshal's result and error do not depend on
// the fast path.
func FuzzCanonicalIsYAMLv3(f *testing.F) {
	// Small seeds: each new input is minimized, in time per byte.
	for _, p := range append(append([]*Plan{samplePlan(), manyPlan(2, 1)}, filledPlans(2, 1, true)...), multilinePlans(1)...) {
		data, err := Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range canonicalEdges {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCanonical(t, data)
	})
}

// BenchmarkUnmarshal reads the plan of the apply bench (500 Applications,
// 2,000 objects) with yaml.v3 and with parseCanonical, the parse alone
// and the whole of Unmarshal.
func BenchmarkUnmarshal(b *testing.B) {
	p := manyPlan(2000, 500)
	if len(p.Applications) != 500 || len(p.Objects) != 2000 {
		b.Fatalf("%d Applications, %d objects", len(p.Applications), len(p.Objects))
	}
	data, err := Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, ok := parseCanonical(data); !ok {
		b.Fatal("the plan is not read by parseCanonical")
	}
	b.Run("parse/yaml.v3", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var n yaml.Node
			if err := yaml.Unmarshal(data, &n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse/canonical", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			parseCanonical(data)
		}
	})
	for _, fast := range []bool{false, true} {
		b.Run(map[bool]string{false: "Unmarshal/yaml.v3", true: "Unmarshal/canonical"}[fast], func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := unmarshal(data, fast); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
