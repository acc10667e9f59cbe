package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanExistingHelmChartInGit: existing Applications sync the chart in
// Git (testdata/charts/web at apps/charts/web): one with valueFiles, values
// and parameters, one multi-source with a $values/… file from a ref
// source. Their objects were applied by hand from `helm template` with the
// same inputs (the real helm CLI). adopt renders each chart as Argo CD does:
// every object is under its existing Application with no drift.
func TestPlanExistingHelmChartInGit(t *testing.T) {
	ctx := context.Background()
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	const repoURL = "https://git.example.invalid/org/charts.git"
	repo := t.TempDir()
	src, _ := filepath.Abs("testdata/charts/web")
	chart := filepath.Join(repo, "apps/charts/web")
	if err := os.MkdirAll(filepath.Dir(chart), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", src, chart).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	writeTree(t, repo, map[string]string{
		"apps/charts/web/values-prod.yaml": "greeting: from-values-file\nservice:\n  port: 8081\n",
		"envs/prod/web.yaml":               "greeting: from-ref-source\nauth:\n  user: ops\n",
		"adopt.yaml":                       "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nrepoURL: " + repoURL + "\n",
	})
	app := func(name, sources, sync string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n%s%s", name, argoNS, ns, sources, sync)
	}
	one := app("web-one", fmt.Sprintf(`  source:
    repoURL: %s
    path: apps/charts/web
    helm:
      releaseName: one
      valueFiles: [values-prod.yaml]
      valuesObject: {auth: {user: svc}}
      parameters:
      - {name: service.port, value: "9090"}
      - {name: auth.password, value: "12345", forceString: true}
`, repoURL), "")
	two := app("web-two", fmt.Sprintf(`  sources:
  - repoURL: %s
    path: apps/charts/web
    helm:
      valueFiles: [$values/envs/prod/web.yaml]
      parameters:
      - {name: auth.password, value: s3cret}
  - repoURL: %s
    ref: values
`, repoURL, repoURL), "  syncPolicy: {automated: {}}\n")
	if out, err := cp.Kubectl(ctx, []byte(one+"---\n"+two), "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	h, err := testenv.NewHelm(cp, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"template", "one", chart, "-n", ns, "-f", filepath.Join(chart, "values-prod.yaml"), "--set", "auth.user=svc", "--set", "service.port=9090", "--set-string", "auth.password=12345"},
		{"template", "web-two", chart, "-n", ns, "-f", filepath.Join(repo, "envs/prod/web.yaml"), "--set", "auth.password=s3cret"},
	} {
		out := helmRun(ctx, t, h, args...)
		if o, err := cp.Kubectl(ctx, []byte(out), "apply", "-n", ns, "-f", "-"); err != nil {
			t.Fatalf("%v\n%s", err, o)
		}
	}

	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", repo, "--config", filepath.Join(repo, "adopt.yaml"))
	for _, f := range p.Findings {
		if f.Code == plan.CodeSourceNotRendered {
			t.Fatalf("finding: %s", f.Message)
		}
	}
	want := map[string]string{"one-cfg": "web-one", "one-auth": "web-one", "one": "web-one", "web-two-cfg": "web-two", "web-two-auth": "web-two", "web-two": "web-two"}
	if len(p.Objects) != len(want) {
		t.Fatalf("%d objects, want %d", len(p.Objects), len(want))
	}
	for _, o := range p.Objects {
		if o.App != want[o.Name] || o.Git == nil || o.Git.Path != "apps/charts/web/Chart.yaml" {
			t.Fatalf("%s/%s: app %q git %+v, want %s", o.Kind, o.Name, o.App, o.Git, want[o.Name])
		}
		if o.Drift == nil || !o.Drift.Identical() {
			t.Fatalf("%s/%s drift %+v: adopt's render differs from helm template's", o.Kind, o.Name, o.Drift)
		}
	}
	for _, a := range p.Applications {
		if a.Source != "existing" {
			t.Fatalf("a new Application was proposed: %+v", a)
		}
	}
	if strings.Contains(fmt.Sprint(p), "s3cret") {
		t.Fatal("a password reached the plan")
	}
}
