package gitindex

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestRenderSource: what an Application's source at a path reads, decided
// as Argo CD's repo-server does.
func TestRenderSource(t *testing.T) {
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
	}
	ix := build(map[string]string{
		"apps/a.yaml":               cm("a"),
		"apps/b.yml":                cm("b"),
		"apps/skip-me.yaml":         cm("skip"),
		"apps/sub/c.yaml":           cm("c"),
		"apps/sub/deeper/d.json":    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}`,
		"kust/kustomization.yaml":   "namePrefix: k-\nresources: [cm.yaml]\n",
		"kust/cm.yaml":              cm("x"),
		"chart/Chart.yaml":          "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"chart/templates/cm.yaml":   cm("t"),
		"jsonnet/main.jsonnet":      "{}",
		"jsonnet/plain.yaml":        cm("j"),
		"broken/kustomization.yaml": "resources: [missing.yaml]\n",
	})
	names := func(dir string, d Directory) string {
		ms, err := ix.Render(dir, d)
		if err != nil {
			return "error: " + err.Error()
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		dir  string
		d    Directory
		want string
	}{
		{"apps", Directory{}, "a,b,skip"},
		{"apps/", Directory{Recurse: true}, "a,b,c,d,skip"},
		{"./apps", Directory{Recurse: true, Exclude: "skip-*"}, "a,b,c,d"},
		{"apps", Directory{Recurse: true, Include: "*.yaml"}, "a,c,skip"},
		{"apps", Directory{Recurse: true, Include: "{a.yaml,sub/*}"}, "a,c,d"},
		{"apps", Directory{Recurse: true, Include: "sub/*.yaml", Exclude: "*deeper*"}, "c"},
		{"kust", Directory{}, "k-x"},
		{"chart", Directory{}, "error: chart is a Helm chart in Git: render it with Chart"},
		{"jsonnet", Directory{Exclude: "*.jsonnet"}, "j"},
		{"apps", Directory{Include: "[a"}, `error: directory.include "[a"`},
	} {
		if got := names(c.dir, c.d); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %+v: %q, want %q", c.dir, c.d, got, c.want)
		}
	}
	if got := names("jsonnet", Directory{}); !strings.Contains(got, "Jsonnet (jsonnet/main.jsonnet)") {
		t.Errorf("jsonnet: %q", got)
	}
	if got := names("broken", Directory{}); !strings.Contains(got, `"missing.yaml" does not exist`) {
		t.Errorf("broken: %q", got)
	}
}

// TestReadsAsArgoCD: plain scalars are read as Argo CD reads them, with
// sigs.k8s.io/yaml (YAML 1.1, then JSON), the oracle here.
func TestReadsAsArgoCD(t *testing.T) {
	for _, v := range []string{"on", "yes", "y", "Y", "n", "NO", "off", "Off", "true", "True", "2024-01-01", "2024-01-01T10:00:00Z",
		"0755", "0o755", "0x1F", "1e3", "1_000", "~", "null", "1.0", "+12", "010", "1:20", `"on"`, "'yes'", "12345678901234567890"} {
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\nspec:\n  v: " + v + "\n  l: [" + v + "]\n"
		ix := build(map[string]string{"a/c.yaml": doc})
		ms := ix.Lookup("", "ConfigMap", "", "c")
		if len(ms) != 1 {
			t.Fatalf("%s: %+v", v, ix.Skipped)
		}
		var want map[string]any
		if err := sigsyaml.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(ms[0].Object["spec"])
		exp, _ := json.Marshal(want["spec"])
		if string(got) != string(exp) {
			t.Errorf("%s: adopt reads %s, Argo CD %s", v, got, exp)
		}
	}
	ix := build(map[string]string{"a/inf.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: i}\ndata: {x: .inf}\n", "a/UPPER.YAML": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\n"})
	if len(ix.Manifests()) != 0 || len(ix.Skipped) != 1 || !strings.Contains(ix.Skipped[0].Reason, ".inf is not a JSON number") {
		t.Fatalf("manifests %+v skipped %+v", ix.Manifests(), ix.Skipped)
	}
}
