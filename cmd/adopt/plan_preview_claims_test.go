package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
)

// TestPlanPreviewOfClaimedObjects (issue 35, item 3): `plan --preview`
// previews objects that existing Applications claim through a render the
// repo's index does not hold by path and line: a chart in Git (rendered
// for the Application) and a file at the tag an Application is pinned to,
// which main has changed since. Each is previewed with what that
// Application syncs: the chart's render, the tag's file.
func TestPlanPreviewOfClaimedObjects(t *testing.T) {
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	cm := func(name, v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: %s\n", name, v)
	}
	_, url := gitRepo(t, "gitops", map[string]string{
		"charts/simple/Chart.yaml":        "apiVersion: v2\nname: simple\nversion: 0.1.0\n",
		"charts/simple/values.yaml":       "v: from-chart\n",
		"charts/simple/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  v: {{ .Values.v }}\n",
		"apps/pinned/cm.yaml":             cm("pinned-cfg", "at-v1"),
		"apps/pinned/README.md":           "kubectl apply -f apps/pinned/\n",
	})
	dir := t.TempDir()
	git := func(dir string, args ...string) string { t.Helper(); return gitIn(t, dir, args...) }
	up := filepath.Join(dir, "up")
	git(dir, "clone", "-q", url, up)
	git(up, "tag", "v1")
	if err := os.WriteFile(filepath.Join(up, "apps/pinned/cm.yaml"), []byte(cm("pinned-cfg", "on-main")), 0o644); err != nil {
		t.Fatal(err)
	}
	git(up, "commit", "-qam", "main moves on")
	git(up, "push", "-q", "origin", "main", "v1")
	clone := filepath.Join(dir, "clone")
	git(dir, "clone", "-q", url, clone)

	app := func(name, source string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: %s\n", name, argoNS, ns, source)
	}
	kc(t, []byte(app("simple", fmt.Sprintf("{repoURL: %q, path: charts/simple, helm: {releaseName: web}}", url))+"---\n"+
		app("pinned", fmt.Sprintf("{repoURL: %q, path: apps/pinned, targetRevision: v1}", url))), "create", "-f", "-")
	// Applied by hand as they were: the chart's object one value behind,
	// the pinned file as the tag has it.
	live := strings.Replace(cm("web-cfg", "hand-set"), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1) + "---\n" +
		strings.Replace(cm("pinned-cfg", "at-v1"), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1)
	kc(t, []byte(live), "apply", "-f", "-")

	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", clone, "--preview")
	web := findObject(p, "ConfigMap", ns, "web-cfg")
	if web == nil || web.App != "simple" || web.Preview == nil || web.Preview.Outcome != preview.Changes ||
		!strings.Contains(fmt.Sprint(web.Preview.Changes), "from-chart") {
		t.Errorf("web-cfg: %+v, want it under simple, previewed with the chart's render (v: from-chart)", previewOf(web))
	}
	pinned := findObject(p, "ConfigMap", ns, "pinned-cfg")
	if pinned == nil || pinned.App != "pinned" || pinned.Preview == nil || pinned.Preview.Outcome == preview.Changes && strings.Contains(fmt.Sprint(pinned.Preview.Changes), "on-main") {
		t.Errorf("pinned-cfg: %+v, want it under pinned, previewed with v1's file (no change to v)", previewOf(pinned))
	}
}

func previewOf(o *plan.Object) string {
	if o == nil {
		return "missing"
	}
	if o.Preview == nil {
		return fmt.Sprintf("app %q, no preview, findings %+v", o.App, o.Findings)
	}
	return fmt.Sprintf("app %q, preview %+v", o.App, *o.Preview)
}
