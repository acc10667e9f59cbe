package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestChartsByRender: two charts in Git share the release's chart name and
// version (as helm-apps/many-envs-chart and helm-apps/simple-chart do in
// codefresh-contrib/gitops-certification-examples). The one whose render
// with the release's values equals the release's manifest comes first,
// whatever the path order, and why says how each rendered.
func TestChartsByRender(t *testing.T) {
	chart := func(kind string) map[string]string {
		return map[string]string{
			"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"values.yaml":      "greeting: hello\n",
			"templates/x.yaml": "apiVersion: v1\nkind: " + kind + "\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting }}\n",
		}
	}
	files := map[string]string{}
	for dir, kind := range map[string]string{"a-first": "ConfigMap", "b-installed": "Secret"} {
		for p, c := range chart(kind) {
			files[dir+"/"+p] = c
		}
	}
	dst := t.TempDir()
	if err := testenv.WriteFiles(dst, files); err != nil {
		t.Fatal(err)
	}
	ix, err := gitindex.Load(context.Background(), gitindex.Source{Location: dst})
	if err != nil {
		t.Fatal(err)
	}
	dirs := ix.ChartDirs("web", "1.0.0")
	if strings.Join(dirs, ",") != "a-first,b-installed" {
		t.Fatalf("chart dirs %v", dirs)
	}
	ch, err := ix.Chart("b-installed")
	if err != nil {
		t.Fatal(err)
	}
	config := map[string]any{"greeting": "hi"}
	out, err := helmrelease.Renderer{}.Render(ch, "web", "shop", config)
	if err != nil {
		t.Fatal(err)
	}
	rel := &helmrelease.Release{Name: "web", Namespace: "shop", Chart: "web", Version: "1.0.0", Config: config, Manifest: out.Manifest}
	got, why := chartsByRender(ix, helmrelease.Renderer{}, dirs, rel)
	if strings.Join(got, ",") != "b-installed,a-first" {
		t.Errorf("order %v, want the chart the release was installed from first", got)
	}
	want := "b-installed renders what the release recorded; a-first renders 2 of the release's 2 objects differently"
	if !strings.Contains(why, want) {
		t.Errorf("why %q, want it to say %q", why, want)
	}
}
