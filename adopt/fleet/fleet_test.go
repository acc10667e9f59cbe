package fleet

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/objref"
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
		ix, err := NewIndex(results, file, c.registered)
		if err != nil {
			t.Fatal(err)
		}
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

// twoClusters are the same Application on clusters a and b, registered as
// destA and destB, under tracking t, its one object's first sync
// predicted at csa.
func twoClusters(destA, destB string, t argoapp.Tracking, csa judge.CSAMigration) []Result {
	ref := objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "hook"}
	result := func(ctx, dest string) Result {
		return Result{Cluster: ctx, Plan: &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Tracking: t,
			Cluster:      plan.Cluster{Server: "https://" + ctx + ".example:6443"},
			ArgoCD:       plan.ArgoCD{Management: &plan.Management{Cluster: dest}},
			Applications: []plan.Application{{Name: "adopt-shop", Namespace: "shop", SourcePath: "adopted/shop", Objects: []string{ref.String()}}},
			Objects:      []plan.Object{{Ref: ref, App: "adopt-shop", CSAMigration: csa}}}}
	}
	return []Result{result("a", destA), result("b", destB)}
}

// TestLabelTrackingLongNames: under label tracking a generated
// <cluster>-<app> longer than 63 characters refuses the fleet plan, naming
// each name, its length and what to do, and nothing is written; at 63 it
// is planned, and annotation tracking (or annotation+label, where Argo CD
// cuts the label) takes any length.
func TestLabelTrackingLongNames(t *testing.T) {
	label := argoapp.Tracking{Method: argoapp.TrackingLabel, InstanceLabelKey: argoapp.DefaultInstanceLabelKey}
	fits := strings.Repeat("e", 63-len("-adopt-shop")) // the generated name is exactly 63
	long := fits + "x"
	dir := filepath.Join(t.TempDir(), "fleet")
	_, err := WriteDir(dir, twoClusters(long, "eu-2", label, judge.CSAMigration{}), nil)
	var le *LabelError
	if !errors.As(err, &le) || len(le.Names) != 1 {
		t.Fatalf("a 64-character generated name under label tracking: %v, want a LabelError naming it", err)
	}
	for _, want := range []string{long + "-adopt-shop (64 characters, cluster " + long + ")", "at most 63", "application.resourceTrackingMethod: annotation", "shorten", "no fleet plan was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused fleet plan wrote %s (%v)", dir, err)
	}
	for name, tr := range map[string]argoapp.Tracking{
		"label, 63 characters": label,
		"annotation":           {Method: argoapp.TrackingAnnotation},
		"annotation+label":     {Method: argoapp.TrackingAnnotationAndLabel},
	} {
		dest := long
		if tr.Method == argoapp.TrackingLabel {
			dest = fits
		}
		ix, err := WriteDir(filepath.Join(t.TempDir(), "fleet"), twoClusters(dest, "eu-2", tr, judge.CSAMigration{}), nil)
		if err != nil || len(ix.ApplicationSets) != 1 {
			t.Errorf("%s: %v, sets %+v", name, err, ix)
		}
	}
}

// TestGeneratedNameCSA: an object whose client-side-apply migration writes
// exactly the cap under the plan's Application name passes it under the
// name the ApplicationSet generates; the written plan records the
// generated name's bytes, the critical finding naming that Application and
// the summary counting it, so apply adds ClientSideApplyMigration=false to
// the set's template.
func TestGeneratedNameCSA(t *testing.T) {
	tr := argoapp.Tracking{Method: argoapp.TrackingAnnotation, Version: "v3.2.6", VersionSource: "--argocd-version"}
	atCap := judge.CSAMigration{Runs: true, Bytes: budget.AnnotationCap}
	dir := filepath.Join(t.TempDir(), "fleet")
	ix, err := WriteDir(dir, twoClusters("eu-1", "eu-22", tr, atCap), nil)
	if err != nil || len(ix.ApplicationSets) != 1 {
		t.Fatalf("%v %+v", err, ix)
	}
	for ctx, dest := range map[string]string{"a": "eu-1", "b": "eu-22"} {
		p, err := plan.ReadFile(filepath.Join(dir, PlanFile(ctx)))
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != ix.Entry(ctx).PlanID {
			t.Errorf("cluster %s: plan %s, index records %s", ctx, p.ID, ix.Entry(ctx).PlanID)
		}
		o := p.Objects[0]
		// The tracking id holds the name in the annotation and again in
		// last-applied's copy of it.
		want := budget.AnnotationCap + 2*len(dest+"-")
		if o.CSAMigration.Bytes != want || !o.CSAMigration.Fails || o.Risk != plan.Critical || p.Summary.Critical != 1 {
			t.Errorf("cluster %s: %+v risk %s critical %d, want %d B failing, critical", ctx, o.CSAMigration, o.Risk, p.Summary.Critical, want)
		}
		if len(o.Findings) != 1 || o.Findings[0].Code != plan.CodeCSAMigrationFails || !strings.Contains(o.Findings[0].Message, "Application "+GeneratedName(dest, "adopt-shop")) {
			t.Errorf("cluster %s: findings %+v", ctx, o.Findings)
		}
		if p.Applications[0].Name != "adopt-shop" {
			t.Errorf("cluster %s: the plan's Application was renamed to %s", ctx, p.Applications[0].Name)
		}
	}
}
