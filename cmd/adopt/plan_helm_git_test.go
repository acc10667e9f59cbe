package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// helmGitPassword is a password given with --set to a release of a chart in
// Git; it must never reach the plan or anything plan prints.
const helmGitPassword = "gitchart-CANARY-9d8c7b6a"

// helmGitRepo writes a GitOps repo into dir, the files given and chart web
// 1.2.3 at charts/web (testdata/charts/web with a default password in
// values.yaml, and values-production.yaml), and returns every file by its
// path in the repo.
func helmGitRepo(t *testing.T, dir string, more map[string]string) map[string]string {
	t.Helper()
	src, err := filepath.Abs("testdata/charts/web")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", src, filepath.Join(dir, "charts/web")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	files := map[string]string{
		"charts/web/values.yaml":            "greeting: hello\nauth:\n  user: web\n  password: default-pw\nservice:\n  port: 8080\n",
		"charts/web/values-production.yaml": "# production\ngreeting: production\nauth:\n  user: ops\n  password: prod-pw\nservice:\n  port: 9090\n",
	}
	for p, c := range more {
		files[p] = c
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestPlanHelmChartInGit: releases installed by the real helm CLI with
// `helm upgrade --install NAME <checkout>/charts/web` from a chart directory
// of the GitOps repo, which a served chart repository (added with helm repo
// add) also holds at the same name and version:
//
//   - web-default with no values: a Helm Application at path charts/web,
//     no values, no values files;
//   - web-prod with -f charts/web/values-production.yaml: that file as
//     valueFiles, no inline values;
//   - web-inline with --set (a password among them): inline values, the
//     password a placeholder, in nothing plan prints;
//   - deps, whose chart's dependency was built for the install and is not
//     in the repo (charts/deps/charts absent): still an Application, and a
//     helm-chart-dependencies finding saying what, where and what to do.
//
// Every web release picks Git over the repository and says so; each is
// proven equal by rendering the chart from Git (plan --preview).
func TestPlanHelmChartInGit(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	const repoURL = "https://git.example.invalid/org/gitops.git"
	h, chartRepo := servedChart(ctx, t, cp, "web")
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	helmRun(ctx, t, h, "repo", "add", "stable", chartRepo.URL)
	repo := t.TempDir()
	helmGitRepo(t, repo, map[string]string{
		"charts/deps/Chart.yaml":        "apiVersion: v2\nname: deps\nversion: 0.1.0\ndependencies:\n- name: web\n  version: 1.2.3\n  repository: " + chartRepo.URL + "\n",
		"charts/deps/values.yaml":       "web:\n  auth:\n    password: dep-pw\n",
		"charts/deps/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-own\ndata:\n  k: v\n",
		"adopt.yaml":                    "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nrepoURL: " + repoURL + "\n",
	})
	web, deps := filepath.Join(repo, "charts/web"), filepath.Join(repo, "charts/deps")
	helmRun(ctx, t, h, "upgrade", "--install", "web-default", web, "-n", ns)
	helmRun(ctx, t, h, "upgrade", "--install", "web-prod", web, "-n", ns, "-f", filepath.Join(web, "values-production.yaml"))
	helmRun(ctx, t, h, "upgrade", "--install", "web-inline", web, "-n", ns, "--set", "auth.password="+helmGitPassword, "--set", "greeting=inline")
	helmRun(ctx, t, h, "dependency", "build", deps)
	helmRun(ctx, t, h, "upgrade", "--install", "deps", deps, "-n", ns)
	if err := os.RemoveAll(filepath.Join(deps, "charts")); err != nil { // not committed
		t.Fatal(err)
	}

	args := []string{"plan", "-n", ns, "--repo", repo, "--config", filepath.Join(repo, "adopt.yaml"), "--preview", "-q"}
	out, errOut, code := adopt(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	printed := out + errOut
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, format := range []string{"table", "markdown", "yaml"} {
		o, e, _ := adopt(t, append(args, "-o", format)...)
		printed += o + e
	}
	if strings.Contains(printed, helmGitPassword) {
		t.Fatal("the --set password reached plan's output")
	}

	apps := map[string]*plan.Application{}
	for i, a := range p.Applications {
		if a.Helm != nil {
			apps[a.Helm.ReleaseName] = &p.Applications[i]
		}
	}
	for _, tc := range []struct {
		rel, path, valueFiles string
		values                map[string]any
		identical             int
	}{
		{rel: "web-default", path: "charts/web", identical: 3},
		{rel: "web-prod", path: "charts/web", valueFiles: "values-production.yaml", identical: 3},
		{rel: "web-inline", path: "charts/web", values: map[string]any{"greeting": "inline", "auth": map[string]any{"password": "adopt:redacted:auth.password"}}, identical: 2},
		{rel: "deps", path: "charts/deps"},
	} {
		a := apps[tc.rel]
		if a == nil {
			t.Errorf("%s: no Helm Application; applications %+v, findings %+v", tc.rel, p.Applications, p.Findings)
			continue
		}
		hs := a.Helm
		if a.Source != "helm" || a.Namespace != ns || a.RepoURL != repoURL || hs.Path != tc.path || hs.RepoURL != "" || strings.Join(hs.ValueFiles, ",") != tc.valueFiles {
			t.Errorf("%s: source %s namespace %s repoURL %s, helm %+v", tc.rel, a.Source, a.Namespace, a.RepoURL, hs)
		}
		if got, _ := json.Marshal(hs.Values); tc.values != nil && string(got) != string(mustJSON(t, tc.values)) || tc.values == nil && hs.Values != nil {
			t.Errorf("%s: values %s, want %v", tc.rel, got, tc.values)
		}
		// Each object is matched with the chart in Git, rendered as the
		// Application will render it, and equals it (a Secret's data
		// aside: placeholders in the values, kept from live); a chart whose
		// dependencies are not vendored does not render: no match.
		for _, ref := range a.Objects {
			ob := p.Object(ref)
			switch {
			case ob == nil:
				t.Errorf("%s: %s not in the plan", tc.rel, ref)
			case tc.rel == "deps" && ob.Git != nil:
				t.Errorf("deps: %s matched %+v, though the chart cannot render", ref, ob.Git)
			case tc.rel != "deps" && (ob.Git == nil || ob.Git.Path != tc.path+"/Chart.yaml" || ob.Git.Line != 0 || ob.Drift == nil || !ob.Drift.Identical()):
				t.Errorf("%s: %s matched %+v, drift %+v; want %s/Chart.yaml, identical", tc.rel, ref, ob.Git, ob.Drift, tc.path)
			}
		}
		if tc.rel == "deps" {
			if hs.Proof == nil || !strings.Contains(hs.Proof.Error, "not vendored") {
				t.Errorf("deps: proof %+v, want the dependency named", hs.Proof)
			}
			continue
		}
		if !strings.HasPrefix(hs.SourceFrom, "Git: chart directory charts/web") || !strings.Contains(hs.SourceFrom, `also in Helm repository "stable"`) || !strings.Contains(hs.SourceFrom, "the chart in Git wins") {
			t.Errorf("%s: sourceFrom %q", tc.rel, hs.SourceFrom)
		}
		if hs.Proof == nil || !hs.Proof.Equal() || hs.Proof.Objects != 3 || hs.Proof.Identical != tc.identical {
			t.Errorf("%s: proof %+v", tc.rel, hs.Proof)
		}
		if len(a.Objects) != 3 {
			t.Errorf("%s: objects %v", tc.rel, a.Objects)
		}
	}
	if a := apps["web-inline"]; a != nil && strings.Join(a.Helm.Placeholders, ",") != "auth.password" {
		t.Errorf("web-inline: placeholders %v", a.Helm.Placeholders)
	}
	chose, dep := 0, false
	for _, f := range p.Findings {
		switch f.Code {
		case plan.CodeHelmBlocked:
			t.Errorf("blocked: %s", f.Message)
		case plan.CodeHelmChartSource:
			chose++
		case plan.CodeHelmDependencies:
			dep = f.Severity == plan.Warning && strings.Contains(f.Message, "Helm release "+ns+"/deps") &&
				strings.Contains(f.Message, "dependency web 1.2.3 from "+chartRepo.URL+" is not vendored in charts/deps/charts") &&
				strings.Contains(f.Message, "helm dependency build charts/deps") && strings.Contains(f.Message, "Argo CD's repo-server runs `helm dependency build` itself")
			if !dep {
				t.Errorf("dependency finding: %s", f.Message)
			}
		}
	}
	if chose != 3 || !dep {
		t.Errorf("%d helm-chart-source findings (want 3), dependency finding %v: %+v", chose, dep, p.Findings)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
