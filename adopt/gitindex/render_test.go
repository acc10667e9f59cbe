package gitindex

import (
	"sort"
	"strings"
	"testing"
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
