package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanExistingApplications: objects an existing Application renders
// from the repo get no new Application; the plan names that Application
// and whether it syncs by itself. An object two existing Applications
// render is a critical finding. An object no Application renders gets a
// new one, as before.
func TestPlanExistingApplications(t *testing.T) {
	ctx := context.Background()
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	const repoURL = "https://git.example.invalid/org/gitops.git"
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  owner: %s\n", name, name)
	}
	repo := t.TempDir()
	writeTree(t, repo, map[string]string{
		"apps/payments/main.yaml":   cm("pay-main"),
		"apps/payments/extra.yaml":  cm("pay-extra"),
		"apps/payments/shared.yaml": cm("pay-shared"),
		"apps/billing/shared.yaml":  cm("pay-shared"),
		"apps/other/new.yaml":       cm("pay-new"),
		"adopt.yaml":                "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nrepoURL: " + repoURL + "\n",
	})
	// payments syncs apps/payments by itself (the URL as Argo CD users
	// write it: no .git, another case); billing syncs apps/billing by hand.
	app := func(name, path, sync string) string {
		return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: {repoURL: %s, path: %s}\n%s",
			name, argoNS, ns, strings.TrimSuffix(strings.Replace(repoURL, "gitops", "GitOps", 1), ".git"), path, sync)
	}
	apps := app("payments", "apps/payments", "  syncPolicy: {automated: {}}\n") + "---\n" + app("billing", "apps/billing", "")

	if out, err := cp.Kubectl(ctx, []byte(apps), "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var live []string
	for _, n := range []string{"pay-extra", "pay-shared", "pay-new"} {
		live = append(live, strings.Replace(cm(n), "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1))
	}
	if out, err := cp.Kubectl(ctx, []byte(strings.Join(live, "---\n")), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	planNow := func() *plan.Plan {
		return planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", repo, "--config", filepath.Join(repo, "adopt.yaml"))
	}
	// No Application syncs the apps directory (argocd/apps) yet.
	if p := planNow(); p.ArgoCD.Root != nil {
		t.Fatalf("root %+v with no Application syncing argocd/apps", p.ArgoCD.Root)
	}
	// root is an app of apps: it syncs argocd/apps and below (Argo CD's
	// globs: * matches /).
	root := strings.Replace(app("root", "argocd", "  syncPolicy: {automated: {}}\n"), "path: argocd}", "path: argocd, directory: {recurse: true, include: 'apps/*.yaml'}}", 1)
	if out, err := cp.Kubectl(ctx, []byte(root), "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p := planNow()
	if r := p.ArgoCD.Root; r == nil || r.Application != argoNS+"/root" || !r.Automated {
		t.Fatalf("root %+v, want %s/root", r, argoNS)
	}
	extra := findObject(p, "ConfigMap", ns, "pay-extra")
	if extra == nil || extra.App != "payments" || extra.Git == nil || extra.Git.Path != "apps/payments/extra.yaml" || !extra.Drift.Identical() {
		t.Fatalf("pay-extra: %+v", extra)
	}
	if !findingSays(extra.Findings, plan.CodeInApplication, "Application "+argoNS+"/payments") {
		t.Fatalf("pay-extra findings: %+v", extra.Findings)
	}
	shared := findObject(p, "ConfigMap", ns, "pay-shared")
	if shared == nil || shared.App != "" || shared.Risk != plan.Critical || !findingSays(shared.Findings, plan.CodeSharedResource, argoNS+"/billing, "+argoNS+"/payments") {
		t.Fatalf("pay-shared: %+v", shared)
	}
	byName := map[string]plan.Application{}
	for _, a := range p.Applications {
		byName[a.Name] = a
	}
	pay, ok := byName["payments"]
	if !ok || pay.Source != "existing" || pay.Existing == nil || !pay.Existing.Automated || pay.Existing.Namespace != argoNS || strings.Join(pay.Objects, ",") != "ConfigMap "+ns+"/pay-extra" {
		t.Fatalf("payments: %+v", pay)
	}
	if len(p.Applications) != 2 {
		t.Fatalf("Applications %+v, want payments (existing) and one new for apps/other", p.Applications)
	}
	for _, a := range p.Applications {
		if a.Name != "payments" && (a.Source != "git" || a.SourcePath != "apps/other" || a.Existing != nil) {
			t.Fatalf("new Application %+v", a)
		}
	}
}

func findingSays(fs []plan.Finding, code, text string) bool {
	for _, f := range fs {
		if f.Code == code && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}
