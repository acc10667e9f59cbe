package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanRendersProposedPathsWhole (issue 35, item 4): a new Application
// syncs its whole path, not only the objects adopted through it.
//   - apps/shop is a kustomization of three ConfigMaps; two were applied by
//     hand. The third would be created by the first sync: a warning names
//     it, and the Application is still proposed.
//   - apps/bundle is a kustomization that pulls in apps/legacy, which an
//     existing Application syncs. An Application at apps/bundle would take
//     legacy's objects (SharedResourceWarning): it is never proposed, and
//     its hand-applied object says why, critical.
func TestPlanRendersProposedPathsWhole(t *testing.T) {
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  v: one\n", name)
	}
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	_, url := gitRepo(t, "gitops", map[string]string{
		"apps/shop/kustomization.yaml":   "resources: [a.yaml, b.yaml, c.yaml]\n",
		"apps/shop/a.yaml":               cm("shop-a"),
		"apps/shop/b.yaml":               cm("shop-b"),
		"apps/shop/c.yaml":               cm("shop-c"),
		"apps/legacy/kustomization.yaml": "resources: [old.yaml]\n",
		"apps/legacy/old.yaml":           cm("legacy-old"),
		"apps/bundle/kustomization.yaml": "resources: [new.yaml, ../legacy]\n",
		"apps/bundle/new.yaml":           cm("bundle-new"),
	})
	kc(t, []byte(fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: legacy\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: {repoURL: %q, path: apps/legacy}\n", argoNS, ns, url)), "create", "-f", "-")
	var live []string
	for _, n := range []string{"shop-a", "shop-b", "legacy-old", "bundle-new"} {
		live = append(live, strings.Replace(cm(n), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1))
	}
	kc(t, []byte(strings.Join(live, "---\n")), "apply", "-f", "-")

	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", url)
	var shop *plan.Application
	for i, a := range p.Applications {
		if a.SourcePath == "apps/bundle" {
			t.Errorf("an Application at apps/bundle is proposed: %+v", a)
		}
		if a.SourcePath == "apps/shop" {
			shop = &p.Applications[i]
		}
	}
	if shop == nil || len(shop.Objects) != 2 {
		t.Fatalf("apps/shop: %+v, want an Application adopting shop-a and shop-b", shop)
	}
	var creates string
	for _, f := range p.Findings {
		if f.Code == plan.CodeSyncCreates && f.Severity == plan.Warning && strings.Contains(f.Message, "Application "+shop.Name+" ") {
			creates = f.Message
		}
	}
	if !strings.Contains(creates, "ConfigMap "+ns+"/shop-c") || strings.Contains(creates, "shop-a") {
		t.Errorf("the first sync of %s creates shop-c; the plan says %q", shop.Name, creates)
	}
	o := findObject(p, "ConfigMap", ns, "bundle-new")
	if o == nil || o.App != "" || o.Risk != plan.Critical || !findingSays(o.Findings, plan.CodePathShared, "ConfigMap "+ns+"/legacy-old (Application "+argoNS+"/legacy renders it)") {
		t.Errorf("bundle-new: app %q risk %s findings %+v, want no Application and a critical finding naming legacy-old and its Application", o.App, o.Risk, o.Findings)
	}
	if o := findObject(p, "ConfigMap", ns, "legacy-old"); o == nil || o.App != "legacy" {
		t.Errorf("legacy-old: %+v, want it left to Application legacy", o)
	}
}
