package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestSelector: a label makes a selector only when it selects exactly the
// set's clusters among every registered one.
func TestSelector(t *testing.T) {
	result := func(ctx, dest string) Result {
		return Result{Cluster: ctx, Plan: &plan.Plan{ID: "plan-" + ctx,
			ArgoCD:       plan.ArgoCD{Management: &plan.Management{Cluster: dest}},
			Applications: []plan.Application{{Name: "adopt-shop", Namespace: "shop", SourcePath: "adopted/shop", Objects: []string{"ConfigMap shop/hook"}}}}}
	}
	results := []Result{result("a", "eu-1"), result("b", "eu-2")}
	file := func(c string) string { return c + ".yaml" }
	for _, c := range []struct {
		name       string
		registered []argoapp.Cluster
		want       map[string]string
	}{
		{"region selects exactly both", []argoapp.Cluster{
			{Name: "eu-1", Labels: map[string]string{"env": "prod", "region": "eu"}},
			{Name: "eu-2", Labels: map[string]string{"env": "prod", "region": "eu"}},
			{Name: "us-1", Labels: map[string]string{"env": "prod", "region": "us"}}}, map[string]string{"region": "eu"}},
		{"env selects a third cluster too", []argoapp.Cluster{
			{Name: "eu-1", Labels: map[string]string{"env": "prod"}},
			{Name: "eu-2", Labels: map[string]string{"env": "prod"}},
			{Name: "us-1", Labels: map[string]string{"env": "prod"}}}, nil},
		{"no labels", []argoapp.Cluster{{Name: "eu-1"}, {Name: "eu-2"}}, nil},
	} {
		ix := NewIndex(results, file, c.registered)
		if len(ix.ApplicationSets) != 1 || !reflect.DeepEqual(ix.ApplicationSets[0].Selector, c.want) {
			t.Errorf("%s: sets %+v, want selector %v", c.name, ix.ApplicationSets, c.want)
		}
	}
}

// TestIsIndex: a fleet directory or index is one; a plan, YAML or JSON,
// is not (told from its head).
func TestIsIndex(t *testing.T) {
	dir := t.TempDir()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-1"}
	yamlPlan, jsonPlan := filepath.Join(dir, "p.yaml"), filepath.Join(dir, "p.json")
	if err := plan.WriteFile(yamlPlan, p); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := p.WriteJSON(&b, true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsonPlan, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDir(filepath.Join(dir, "fleet"), []Result{{Cluster: "a", Plan: p}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{yamlPlan, jsonPlan} {
		b, _ := os.ReadFile(f)
		if !planKind.Match(b[:min(len(b), 1024)]) {
			t.Errorf("%s: its head does not tell a plan:\n%s", filepath.Base(f), b[:min(len(b), 1024)])
		}
	}
	for path, want := range map[string]bool{yamlPlan: false, jsonPlan: false, filepath.Join(dir, "fleet"): true, filepath.Join(dir, "fleet", IndexFile): true, filepath.Join(dir, "fleet", "a.yaml"): false} {
		if got := IsIndex(path); got != want {
			t.Errorf("IsIndex(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
}
