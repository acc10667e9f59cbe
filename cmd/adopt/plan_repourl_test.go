package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanCheckoutRepoURL: plan --repo of a checkout made with git clone
// from a real git server, with no adopt.yaml, takes the repo's URL from the
// checkout's remote, so the Applications already in the cluster that sync
// its paths (their repoURL written as Argo CD users write it: no .git, the
// host in another case) adopt the hand-applied objects and no second
// Application is proposed. The plan records the remote; the remote's
// credentials are never printed; an Application reading another repo is a
// warning naming it and the fix; a chart-repository source is one info
// line; apply writes the remote's URL. A subdirectory, file://, a linked
// worktree and a bare clone give the same URL; a branch whose upstream is
// on another remote takes that remote; adopt.yaml's repoURL still wins.
func TestPlanCheckoutRepoURL(t *testing.T) {
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  owner: %s\n", name, name)
	}
	files := map[string]string{
		"apps/payments/main.yaml":  cm("pay-main"),
		"apps/payments/extra.yaml": cm("pay-extra"),
		"apps/web/web.yaml":        cm("web-cfg"),
		"README.md":                "gitops\n",
	}
	g, _ := gitRepo(t, "gitops", files)
	if _, err := g.CreateRepo("mirror", files); err != nil {
		t.Fatal(err)
	}
	// Cloned through localhost, so the Applications' LocalHost is the
	// same host in another case.
	port := strings.TrimPrefix(g.URL, "http://127.0.0.1:")
	url := "http://localhost:" + port + "/gitops.git"
	mirrorURL := "http://localhost:" + port + "/mirror.git"
	dir := t.TempDir()
	clone := filepath.Join(dir, "clone")
	git := func(dir string, args ...string) string { t.Helper(); return gitIn(t, dir, args...) }
	git(dir, "clone", "-q", url, clone)
	// The remote's url as some users keep it, with a token: never printed.
	const token = "t0ken-in-the-remote-url"
	git(clone, "remote", "set-url", "origin", "http://bot:"+token+"@localhost:"+port+"/gitops.git")

	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	app := func(name, repoURL, path string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: {repoURL: %q, path: %s}\n",
			name, argoNS, ns, repoURL, path)
	}
	asUsersWriteIt := "http://LocalHost:" + port + "/gitops"
	const otherURL = "https://git.example.invalid/team/other-gitops.git"
	apps := strings.Join([]string{
		app("payments", asUsersWriteIt, "apps/payments"),
		app("web", asUsersWriteIt, "apps/web"),
		app("elsewhere", otherURL, "deploy"),
		strings.Replace(app("cache", "https://charts.example.invalid", "x"), "path: x}", "chart: redis, targetRevision: 1.0.0}", 1),
	}, "---\n")
	kc(t, []byte(apps), "create", "-f", "-")
	var live []string
	for _, n := range []string{"pay-extra", "web-cfg", "loose"} {
		live = append(live, strings.Replace(cm(n), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1))
	}
	kc(t, []byte(strings.Join(live, "---\n")), "apply", "-f", "-")

	planOf := func(t *testing.T, extra ...string) (*plan.Plan, string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "plan.yaml")
		out, errOut, code := adopt(t, append([]string{"plan", "-n", ns, "--argocd-namespace", argoNS, "-o", "table", "--out", file}, extra...)...)
		if code != 0 {
			t.Fatalf("plan exited %d: %s %s", code, out, errOut)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if all := out + errOut + string(b); strings.Contains(all, token) {
			t.Fatalf("the remote's token is in the plan's output or file:\n%s", all)
		}
		return readPlan(t, file), out
	}
	finding := func(p *plan.Plan, code string) string {
		for _, f := range p.Findings {
			if f.Code == code {
				return f.Message
			}
		}
		return ""
	}

	t.Run("the checkout's origin", func(t *testing.T) {
		p, table := planOf(t, "--repo", clone)
		if p.Repo.Remote != "origin" || p.Repo.RemoteURL != url || p.Settings.RepoURL != url || p.Settings.RepoURLFrom != "remote origin (the upstream of branch main)" {
			t.Fatalf("repo %+v, settings %+v: want remote origin, %s", p.Repo, p.Settings, url)
		}
		if !strings.Contains(table, "Repo URL: "+url+" (from remote origin (the upstream of branch main))") {
			t.Errorf("the table does not say where the repo URL came from:\n%s", table)
		}
		for name, want := range map[string]string{"pay-extra": "payments", "web-cfg": "web"} {
			o := findObject(p, "ConfigMap", ns, name)
			if o == nil || o.App != want {
				t.Fatalf("%s: %+v, want it under the existing Application %s", name, o, want)
			}
		}
		for _, a := range p.Applications {
			if a.Existing == nil && a.Source != "export" {
				t.Errorf("a second Application %s (%s at %s) beside the existing ones", a.Name, a.Source, a.SourcePath)
			}
			if a.Existing == nil && a.RepoURL != url {
				t.Errorf("Application %s: repoURL %q, want the remote's %s", a.Name, a.RepoURL, url)
			}
		}
		w := finding(p, plan.CodeOtherRepo)
		for _, s := range []string{argoNS + "/elsewhere reads " + otherURL, "adopt.yaml", "--repo as that URL", "from remote origin"} {
			if !strings.Contains(w, s) {
				t.Errorf("the other-repo warning does not say %q: %q", s, w)
			}
		}
		// Other tests' Applications share the control plane, so only this
		// test's names are looked for.
		if strings.Contains(w, argoNS+"/payments ") || strings.Contains(w, argoNS+"/web ") {
			t.Errorf("the warning names an Application tied to the repo: %s", w)
		}
		if i := finding(p, plan.CodeNotGitSource); !strings.Contains(i, argoNS+"/cache (chart redis from https://charts.example.invalid)") {
			t.Errorf("the chart-repository source is not named: %q", i)
		}

		// apply writes exactly what the plan records: the remote's URL.
		planFile := filepath.Join(t.TempDir(), "plan.yaml")
		if _, errOut, code := adopt(t, "plan", "-n", ns, "--argocd-namespace", argoNS, "-q", "--repo", clone, "--out", planFile); code != 0 {
			t.Fatalf("plan: %s", errOut)
		}
		out, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", clone, "--dry-run", "-q", "--author", "T <t@example.invalid>")
		if code != 0 {
			t.Fatalf("apply --dry-run exited %d: %s", code, errOut)
		}
		if !strings.Contains(out, `repoURL: "`+url+`"`) || strings.Contains(out, token) {
			t.Errorf("apply does not write the remote's URL %s (or prints its token):\n%s", url, out)
		}
	})

	t.Run("every form of the checkout", func(t *testing.T) {
		git(clone, "worktree", "add", "-q", "-b", "linked", filepath.Join(dir, "linked"))
		git(dir, "clone", "-q", "--bare", url, filepath.Join(dir, "bare.git"))
		for _, loc := range []string{filepath.Join(clone, "apps"), "file://" + filepath.ToSlash(clone), filepath.Join(dir, "linked"), filepath.Join(dir, "bare.git")} {
			p, _ := planOf(t, "--repo", loc)
			if p.Settings.RepoURL != url || p.Repo.Remote != "origin" {
				t.Errorf("--repo %s: repo URL %q from %q, want %s", loc, p.Settings.RepoURL, p.Settings.RepoURLFrom, url)
			}
			if o := findObject(p, "ConfigMap", ns, "pay-extra"); o == nil || o.App != "payments" {
				t.Errorf("--repo %s: pay-extra %+v, want it under payments", loc, o)
			}
		}
	})

	t.Run("adopt.yaml's repoURL wins", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "adopt.yaml")
		if err := os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nrepoURL: "+otherURL+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, _ := planOf(t, "--repo", clone, "--config", cfg)
		if p.Settings.RepoURL != otherURL || p.Settings.RepoURLFrom != "adopt.yaml" || p.Repo.Remote != "origin" {
			t.Fatalf("settings %+v, repo %+v: want adopt.yaml's %s", p.Settings, p.Repo, otherURL)
		}
		if i := finding(p, plan.CodeRepoURL); !strings.Contains(i, "adopt.yaml's repoURL "+otherURL+" is used") || !strings.Contains(i, url) {
			t.Errorf("the plan does not say adopt.yaml overrides the remote: %q", i)
		}
		if o := findObject(p, "ConfigMap", ns, "pay-extra"); o == nil || o.App == "payments" {
			t.Errorf("pay-extra %+v is under payments, which reads the remote, not adopt.yaml's repo", o)
		}
		if w := finding(p, plan.CodeOtherRepo); !strings.Contains(w, argoNS+"/payments reads "+asUsersWriteIt) {
			t.Errorf("payments, not tied to adopt.yaml's repo, is not named: %q", w)
		}
	})

	t.Run("a branch whose upstream is on another remote", func(t *testing.T) {
		git(clone, "remote", "add", "mirror", mirrorURL)
		git(clone, "fetch", "-q", "mirror")
		git(clone, "checkout", "-q", "-b", "dev", "--track", "mirror/main")
		p, _ := planOf(t, "--repo", clone)
		if p.Repo.Remote != "mirror" || p.Settings.RepoURL != mirrorURL || p.Settings.RepoURLFrom != "remote mirror (the upstream of branch dev)" {
			t.Fatalf("repo %+v, settings %+v: want remote mirror, %s", p.Repo, p.Settings, mirrorURL)
		}
		if o := findObject(p, "ConfigMap", ns, "pay-extra"); o == nil || o.App == "payments" {
			t.Errorf("pay-extra %+v is under payments, which reads origin, not the mirror", o)
		}
		if w := finding(p, plan.CodeOtherRepo); !strings.Contains(w, argoNS+"/payments reads "+asUsersWriteIt) || !strings.Contains(w, "from remote mirror") {
			t.Errorf("payments, reading origin, is not named: %q", w)
		}
	})
}
