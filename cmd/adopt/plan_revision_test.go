package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanExistingApplicationsAsArgoCDRunsThem (issue 35, items 1 and 2):
// an existing Application is rendered at its own targetRevision (an
// annotated tag, a branch the clone has only as its remote's, a commit),
// resolved in the user's clone, not at the checkout's HEAD; a revision the
// clone lacks is a finding naming it and the fetch. And only Applications
// that deploy to this cluster claim its objects: one whose destination is
// another cluster leaves them to be adopted here.
func TestPlanExistingApplicationsAsArgoCDRunsThem(t *testing.T) {
	cm := func(name, v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %s\n", name, v)
	}
	_, url := gitRepo(t, "gitops", map[string]string{
		"apps/web/cm.yaml":      cm("web-cfg", "one"),
		"apps/web/old.yaml":     cm("web-old", "one"),
		"apps/db/cm.yaml":       cm("db-cfg", "one"),
		"apps/cache/cm.yaml":    cm("cache-cfg", "one"),
		"apps/gone/cm.yaml":     cm("gone-cfg", "one"),
		"apps/release/cm.yaml":  cm("release-cfg", "one"),
		"apps/inprod/cm.yaml":   cm("inprod-cfg", "one"),
		"apps/byname/cm.yaml":   cm("byname-cfg", "one"),
		"apps/elsename/cm.yaml": cm("elsename-cfg", "one"),
	})
	dir := t.TempDir()
	git := func(dir string, args ...string) string { t.Helper(); return gitIn(t, dir, args...) }
	// v1 is what was applied by hand: tagged, and a release branch; then
	// main moves on: web-cfg changes, web-old goes, db and release too.
	up := filepath.Join(dir, "up")
	git(dir, "clone", "-q", url, up)
	one := git(up, "rev-parse", "HEAD")
	git(up, "tag", "-a", "v1", "-m", "v1")
	git(up, "branch", "release")
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(up, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apps/web/cm.yaml", cm("web-cfg", "two"))
	write("apps/db/cm.yaml", cm("db-cfg", "two"))
	write("apps/release/cm.yaml", cm("release-cfg", "two"))
	git(up, "rm", "-q", "apps/web/old.yaml")
	git(up, "commit", "-qam", "two")
	git(up, "push", "-q", "origin", "main", "release", "v1")
	clone := filepath.Join(dir, "clone")
	git(dir, "clone", "-q", url, clone)

	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	app := func(name, path, rev, dest string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  project: default\n  destination: {%s, namespace: %s}\n  source: {repoURL: %q, path: %s, targetRevision: %q}\n",
			name, argoNS, dest, ns, url, path, rev)
	}
	const here = "server: https://kubernetes.default.svc"
	// A cluster Secret registers prod elsewhere and this cluster again by
	// its own URL, as "me".
	secret := func(name, server string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {argocd.argoproj.io/secret-type: cluster}\nstringData: {name: %s, server: %q, config: '{}'}\n", name, argoNS, name, server)
	}
	kc(t, []byte(strings.Join([]string{
		secret("prod", "https://prod.example.invalid"),
		secret("me", cp.RESTConfig().Host),
		app("web", "apps/web", "v1", here),
		app("db", "apps/db", one, here),
		app("release", "apps/release", "release", here),
		app("cache", "apps/cache", "HEAD", here),
		app("gone", "apps/gone", "v9", here),
		app("inprod", "apps/inprod", "", "server: https://prod.example.invalid"),
		app("byname", "apps/byname", "", "name: me"),
		app("elsename", "apps/elsename", "", "name: prod"),
	}, "---\n")), "create", "-f", "-")
	var live []string
	for _, n := range []string{"web-cfg", "web-old", "db-cfg", "release-cfg", "cache-cfg", "gone-cfg", "inprod-cfg", "byname-cfg", "elsename-cfg"} {
		live = append(live, strings.Replace(cm(n, "one"), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1))
	}
	kc(t, []byte(strings.Join(live, "---\n")), "apply", "-f", "-")

	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", clone)
	for _, c := range []struct{ name, app, rev string }{
		{"web-cfg", "web", one}, {"web-old", "web", one}, {"db-cfg", "db", one}, {"release-cfg", "release", one},
		{"cache-cfg", "cache", ""}, {"byname-cfg", "byname", ""},
	} {
		o := findObject(p, "ConfigMap", ns, c.name)
		if o == nil || o.App != c.app || o.Git == nil || o.Git.Revision != c.rev || !o.Drift.Identical() {
			t.Errorf("%s: %+v (git %+v), want it under %s read at %q, equal to live", c.name, o, gitOf(o), c.app, c.rev)
		}
	}
	// inprod and elsename deploy to prod: their objects here are not
	// theirs, and get a new Application.
	for _, n := range []string{"inprod-cfg", "elsename-cfg"} {
		o := findObject(p, "ConfigMap", ns, n)
		if o == nil || o.App == "" || o.App == "inprod" || o.App == "elsename" || findingSays(o.Findings, plan.CodeInApplication, "") {
			t.Errorf("%s: %+v, want a new Application, not one deploying to prod", n, o)
		}
	}
	var gone string
	for _, f := range p.Findings {
		if f.Code == plan.CodeSourceNotRendered && strings.Contains(f.Message, argoNS+"/gone") {
			gone = f.Message
		}
	}
	if !strings.Contains(gone, "targetRevision v9") || !strings.Contains(gone, "git fetch origin") {
		t.Errorf("the Application pinned to a revision the clone lacks is not named with the fetch: %q", gone)
	}
}

func gitOf(o *plan.Object) any {
	if o == nil || o.Git == nil {
		return nil
	}
	return *o.Git
}
