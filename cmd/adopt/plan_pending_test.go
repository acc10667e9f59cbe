package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanPendingApplications (issue 35, app of apps): Application
// manifests in Git that are not in the cluster yet (the root has not
// synced, or nobody ran kubectl apply) count as pending Applications. The
// plan leaves their objects to them, names where each is defined, and
// proposes no second Application over their paths. One that deploys to
// another cluster claims nothing here; one already in the cluster is not
// pending. A root built with Helm (a chart whose templates are
// Applications) is read from its render.
func TestPlanPendingApplications(t *testing.T) {
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: one\n", name)
	}
	app := func(name, path, dest string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\nspec:\n  project: default\n  destination: {%s, namespace: %s}\n  source: {repoURL: REPO, path: %s}\n", name, dest, ns, path)
	}
	files := map[string]string{
		"argocd/web.yaml":                 app("web", "apps/web", "server: https://kubernetes.default.svc"),
		"argocd/prod.yaml":                app("prodonly", "apps/prodonly", "name: prod"),
		"argocd/running.yaml":             app("running", "apps/running", "server: https://kubernetes.default.svc"),
		"apps/web/cm.yaml":                cm("web-cfg"),
		"apps/prodonly/cm.yaml":           cm("prodonly-cfg"),
		"apps/running/cm.yaml":            cm("running-cfg"),
		"apps/helmapp/cm.yaml":            cm("helmapp-cfg"),
		"charts/root/Chart.yaml":          "apiVersion: v2\nname: root\nversion: 0.1.0\n",
		"charts/root/templates/apps.yaml": strings.Replace(app("{{ .Values.app }}", "apps/helmapp", "server: https://kubernetes.default.svc"), "  name: ", "  namespace: {{ .Release.Namespace }}\n  name: ", 1),
		"charts/root/values.yaml":         "app: helmapp\n",
		"argocd/root.yaml":                strings.Replace(app("root", "charts/root", "server: https://kubernetes.default.svc"), "namespace: "+ns, "namespace: "+argoNS, 1),
	}
	g, _ := gitRepo(t, "placeholder", nil)
	url := g.URL + "/gitops.git"
	for p, c := range files {
		files[p] = strings.ReplaceAll(c, "REPO", fmt.Sprintf("%q", url))
	}
	if got, err := g.CreateRepo("gitops", files); err != nil || got != url {
		t.Fatalf("repo %s, %v; want %s", got, err, url)
	}
	// running and the Helm root are in the cluster already (applied into
	// Argo CD's namespace).
	kc(t, []byte(files["argocd/running.yaml"]+"---\n"+files["argocd/root.yaml"]), "-n", argoNS, "create", "-f", "-")
	var live []string
	for _, n := range []string{"web-cfg", "prodonly-cfg", "running-cfg", "helmapp-cfg"} {
		live = append(live, strings.Replace(cm(n), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1))
	}
	kc(t, []byte(strings.Join(live, "---\n")), "apply", "-f", "-")

	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", url)
	web := findObject(p, "ConfigMap", ns, "web-cfg")
	if web == nil || web.App != "web" || !findingSays(web.Findings, plan.CodeInApplication, "defined at argocd/web.yaml:1 but not in the cluster yet") {
		t.Errorf("web-cfg: %s, want it left to the pending Application web", previewOf(web))
	}
	var pending *plan.Application
	for i, a := range p.Applications {
		if a.SourcePath == "apps/web" && a.Source != "existing" {
			t.Errorf("a new Application over the pending one's path: %+v", a)
		}
		if a.Name == "web" {
			pending = &p.Applications[i]
		}
	}
	if pending == nil || pending.Existing == nil || pending.Existing.Pending != "argocd/web.yaml:1" || pending.Existing.Namespace != argoNS {
		t.Errorf("Application web in the plan: %+v, want existing, pending at argocd/web.yaml:1 in %s", pending, argoNS)
	}
	if o := findObject(p, "ConfigMap", ns, "prodonly-cfg"); o == nil || o.App == "" || o.App == "prodonly" {
		t.Errorf("prodonly-cfg: %s, want a new Application (prodonly deploys to prod)", previewOf(o))
	}
	if o := findObject(p, "ConfigMap", ns, "helmapp-cfg"); o == nil || o.App != "helmapp" ||
		!findingSays(o.Findings, plan.CodeInApplication, "defined at charts/root/Chart.yaml (rendered for Application "+argoNS+"/root) but not in the cluster yet") {
		t.Errorf("helmapp-cfg: %s, want it left to helmapp, which the Helm root renders", previewOf(o))
	}
	if o := findObject(p, "ConfigMap", ns, "running-cfg"); o == nil || o.App != "running" || findingSays(o.Findings, plan.CodeInApplication, "not in the cluster yet") {
		t.Errorf("running-cfg: %s, want it under the running Application, not pending", previewOf(o))
	}
}
