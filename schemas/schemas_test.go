package schemas

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestCommittedSchemasMatchTypes fails when a plan or adopt.yaml type
// changed and the committed schema was not regenerated.
func TestCommittedSchemasMatchTypes(t *testing.T) {
	files, err := Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{PlanFile, FleetFile, ConfigFile} {
		committed, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, files[file]) {
			t.Errorf("schemas/%s disagrees with the Go types: run go generate ./schemas and commit it", file)
		}
	}
	if !bytes.Equal(Plan(), files[PlanFile]) || !bytes.Equal(Fleet(), files[FleetFile]) || !bytes.Equal(Config(), files[ConfigFile]) {
		t.Error("the embedded schemas are not the committed files")
	}
}

// samplePlan builds a plan the way adopt plan does, from collected objects.
func samplePlan(t *testing.T) *plan.Plan {
	t.Helper()
	cm := discover.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	ann := map[string]string{budget.LastAppliedKey: strings.Repeat("x", 240000)}
	res := &discover.Result{Objects: []discover.Object{
		{Type: cm, Namespace: "litellm-test", Name: "hook", Budget: budget.MeasureBudget(ann), Managers: []discover.Manager{{Manager: "kubectl-client-side-apply", Operation: "Update"}}, AppliedBytes: 263000},
		{Type: cm, Namespace: "litellm-test", Name: "small", Labels: map[string]string{"app.kubernetes.io/part-of": "litellm"}},
	}}
	tr := argoapp.TrackingFromConfig(nil, "argocd", "")
	return plan.Build(plan.Inputs{Result: res, Tracking: tr, Cluster: plan.Cluster{Server: "https://127.0.0.1:6443", Context: "kind"}})
}

// TestWrittenPlanValidates: the plan file WriteFile writes, and the plan
// printed as YAML and JSON, validate against the committed schema.
func TestWrittenPlanValidates(t *testing.T) {
	p := samplePlan(t)
	path := filepath.Join(t.TempDir(), "plan.yaml")
	if err := plan.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidatePlan(b); err != nil {
		t.Fatalf("plan.WriteFile's output: %v", err)
	}
	for _, f := range []string{"yaml", "json"} {
		var out bytes.Buffer
		if err := printer.Print(&out, p, f, printer.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := ValidatePlan(out.Bytes()); err != nil {
			t.Errorf("-o %s: %v", f, err)
		}
	}
}

// TestEmptyPlanJSONValidates: encoding/json writes the empty lists of a
// plan with nothing to adopt as null, and the schema allows that.
func TestEmptyPlanJSONValidates(t *testing.T) {
	p := plan.Build(plan.Inputs{Result: &discover.Result{}, Tracking: argoapp.TrackingFromConfig(nil, "argocd", ""), Cluster: plan.Cluster{Server: "https://x"}})
	p.Objects, p.Applications = nil, nil // as a plan read back from "objects: null" has them
	var out bytes.Buffer
	if err := printer.Print(&out, p, "json", printer.Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"objects": null`)) {
		t.Fatalf("expected null lists in:\n%s", out.String())
	}
	if err := ValidatePlan(out.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// TestPlanSchemaRejects: the validation can fail, on the changes a
// hand edit or a newer adopt would make.
func TestPlanSchemaRejects(t *testing.T) {
	good, err := plan.Marshal(samplePlan(t))
	if err != nil {
		t.Fatal(err)
	}
	s := string(good)
	cases := map[string]string{
		"unknown field":   strings.Replace(s, "kind: AdoptionPlan\n", "kind: AdoptionPlan\nextra: 1\n", 1),
		"other kind":      strings.Replace(s, "kind: AdoptionPlan\n", "kind: Plan\n", 1),
		"newer version":   strings.Replace(s, "apiVersion: adopt.dev/v1alpha1", "apiVersion: adopt.dev/v2", 1),
		"no objects":      s[:strings.Index(s, "\nobjects:")+1],
		"string for int":  strings.Replace(s, "dataBytes: 0", "dataBytes: many", 1),
		"unknown in item": strings.Replace(s, "    kind: ConfigMap\n", "    kind: ConfigMap\n    colour: red\n", 1),
	}
	for name, doc := range cases {
		if doc == s {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if err := ValidatePlan([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestExamplesValidate: every adopt.yaml example names the committed
// schema for editors, validates against it, and adopt reads it.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("kind: "+config.Kind)) {
			continue
		}
		n++
		first, _, _ := bytes.Cut(b, []byte("\n"))
		if want := "# yaml-language-server: $schema=" + BaseURL + ConfigFile; string(first) != want {
			t.Errorf("%s: first line %q, want %q", f, first, want)
		}
		if err := ValidateConfig(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if _, err := config.Parse(b); err != nil {
			t.Errorf("%s: adopt refuses it: %v", f, err)
		}
	}
	if n < 2 {
		t.Fatalf("%d adopt.yaml examples in examples/, want at least 2", n)
	}
}

// TestConfigSchemaAgreesWithParse: what the schema refuses, adopt refuses.
func TestConfigSchemaAgreesWithParse(t *testing.T) {
	base := "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\n"
	cases := map[string]string{
		"unknown field":      base + "colour: red\n",
		"unknown rule field": base + "exclusions:\n- kind: [Secret]\n",
		"no kind":            "apiVersion: adopt.dev/v1alpha1\n",
		"list for string":    base + "project: [a]\n",
	}
	for name, doc := range cases {
		if err := ValidateConfig([]byte(doc)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
		if _, err := config.Parse([]byte(doc)); err == nil {
			t.Errorf("%s: adopt accepts it", name)
		}
	}
	if err := ValidateConfig([]byte(base)); err != nil {
		t.Errorf("the smallest adopt.yaml: %v", err)
	}
}

// TestWrittenFleetValidates: what `adopt plan --contexts ... --out-dir`
// writes (each cluster's plan and fleet.yaml) and prints (-o json|yaml)
// validates, through Written as the tests that run adopt call it; and
// Written reports a bad fleet.yaml, a bad plan beside it, a document of
// another kind, and an --out-dir with no plan in it.
func TestWrittenFleetValidates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	results := []fleet.Result{{Cluster: "kind", Plan: samplePlan(t)}, {Cluster: "down", Err: errors.New("cannot reach the API server")}}
	ix, err := fleet.WriteDir(dir, results, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"json", "yaml"} {
		var out bytes.Buffer
		if err := printer.Fleet(&out, ix, f); err != nil {
			t.Fatal(err)
		}
		args := []string{"--kubeconfig", "kc", "plan", "--contexts", "kind,down", "--out-dir", dir, "-o", f}
		if errs := Written(args, out.Bytes()); len(errs) != 0 {
			t.Errorf("-o %s: %v", f, errs)
		}
	}
	index, err := os.ReadFile(filepath.Join(dir, fleet.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateFleet(index); err != nil {
		t.Fatalf("fleet.yaml: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":     strings.Replace(string(index), "kind: FleetAdoptionPlan\n", "kind: FleetAdoptionPlan\nextra: 1\n", 1),
		"clusters a string": strings.Replace(string(index), "clusters:\n", "clusters: all\nold:\n", 1),
		"no clusters":       "apiVersion: adopt.dev/v1alpha1\nkind: FleetAdoptionPlan\n",
		"another kind":      strings.Replace(string(index), "kind: FleetAdoptionPlan\n", "kind: Fleet\n", 1),
	} {
		if doc == string(index) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if err := Validate([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, fleet.IndexFile), []byte("apiVersion: adopt.dev/v1alpha1\nkind: FleetAdoptionPlan\nclusters: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "kind.yaml"), []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptionPlan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := Written([]string{"plan", "--out-dir=" + bad}, nil); len(errs) != 2 {
		t.Errorf("a bad fleet.yaml and plan: %v, want two errors", errs)
	}
	if errs := Written([]string{"plan", "--out-dir", t.TempDir()}, nil); len(errs) != 1 {
		t.Errorf("an empty --out-dir: %v, want one error", errs)
	}
	if errs := Written([]string{"plan", "-o", "yaml"}, []byte("kind: ConfigMap\n")); len(errs) != 1 {
		t.Errorf("a ConfigMap on stdout: %v, want one error", errs)
	}
	if errs := Written([]string{"status", "--plan", filepath.Join(bad, "kind.yaml"), "-o", "json"}, []byte("{}")); len(errs) != 0 {
		t.Errorf("status writes no plan: %v", errs)
	}
}
