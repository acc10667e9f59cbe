package gitindex

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestChartDirs: a chart is found by the name and version in its
// Chart.yaml, wherever it is; a chart vendored in another chart's charts/
// is not (its parent renders it); its values files are every YAML file
// but Chart.yaml and what templates/, charts/ and crds/ hold.
func TestChartDirs(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	ix := build(map[string]string{
		"charts/web/Chart.yaml":                   "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"charts/web/values.yaml":                  "greeting: hi\n",
		"charts/web/values-production.yaml":       "greeting: prod\n",
		"charts/web/env/staging.yml":              "greeting: staging\n",
		"charts/web/templates/cm.yaml":            cm,
		"charts/web/crds/crd.yaml":                "kind: x\n",
		"charts/web/Chart.lock":                   "dependencies: []\n",
		"apps/web/Chart.yaml":                     "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"apps/web/templates/cm.yaml":              cm,
		"old/web/Chart.yaml":                      "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"umbrella/Chart.yaml":                     "apiVersion: v2\nname: umbrella\nversion: 0.1.0\ndependencies:\n- {name: web, version: 1.2.3}\n",
		"umbrella/charts/web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"umbrella/charts/web/templates/cm.yaml":   cm,
		"partial/Chart.yaml":                      "apiVersion: v2\nname: partial\nversion: 0.1.0\ndependencies:\n- {name: redis, version: 17.x, repository: https://charts.example.invalid}\n- {name: web, version: 1.2.3}\n",
		"partial/charts/web/Chart.yaml":           "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"partial/charts/web/templates/cm.yaml":    cm,
		"partial/templates/cm.yaml":               cm,
		"charts/web/charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.0.1\n",
		"charts/web/charts/sub/templates/cm.yaml": cm,
	})
	if got, want := ix.ChartDirs("web", "1.2.3"), []string{"apps/web", "charts/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ChartDirs(web 1.2.3) = %v, want %v", got, want)
	}
	if got := ix.ChartDirs("web", "9.9.9"); len(got) != 0 {
		t.Errorf("ChartDirs(web 9.9.9) = %v", got)
	}
	if got, want := ix.ValuesFiles("charts/web"), []string{"env/staging.yml", "values-production.yaml", "values.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ValuesFiles = %v, want %v", got, want)
	}
	if _, err := ix.Chart("umbrella"); err != nil {
		t.Errorf("umbrella, its dependency vendored: %v", err)
	}
	_, err := ix.Chart("partial")
	var de *DependencyError
	if !errors.As(err, &de) || de.Dir != "partial" || len(de.Missing) != 1 || de.Missing[0].Name != "redis" {
		t.Fatalf("partial: %v", err)
	}
	for _, want := range []string{"redis 17.x from https://charts.example.invalid", "partial/charts", "helm dependency build partial"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
