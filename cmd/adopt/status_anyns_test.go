package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusFollowsAppsInAnyNamespace (issue 35, apps in any namespace):
// an existing Application that lives outside Argo CD's own namespace (as
// application.namespaces allows) and already syncs a hand-applied object is
// read where it is: status shows it present and Synced, and finalize waits
// on it there; before, both looked for it in the plan's Argo CD namespace
// and said it was not in the cluster yet.
func TestStatusFollowsAppsInAnyNamespace(t *testing.T) {
	ctx := context.Background()
	ns, argoNS, teamNS := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	const repoURL = "https://git.example.invalid/org/gitops.git"
	repo := t.TempDir()
	writeTree(t, repo, map[string]string{
		"apps/team/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-cm\ndata:\n  owner: team\n",
		"adopt.yaml":        "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nrepoURL: " + repoURL + "\n",
	})
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: team, namespace: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  source: {repoURL: %s, path: apps/team}
status:
  sync: {status: Synced, revision: 0123456789abcdef0123456789abcdef01234567}
  health: {status: Healthy}
`, teamNS, ns, repoURL)
	if out, err := cp.Kubectl(ctx, []byte(app), "create", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	live := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-cm\n  namespace: " + ns + "\ndata:\n  owner: team\n"
	if out, err := cp.Kubectl(ctx, []byte(live), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--argocd-namespace", argoNS, "--repo", repo, "--config", filepath.Join(repo, "adopt.yaml"), "--out", planFile); code != 0 {
		t.Fatalf("plan: exit %d: %s%s", code, out, errOut)
	}
	p := readPlan(t, planFile)
	if len(p.Applications) != 1 || p.Applications[0].Existing == nil || p.Applications[0].Existing.Namespace != teamNS {
		t.Fatalf("plan's Applications %+v: want the existing %s/team", p.Applications, teamNS)
	}
	out, errOut, code := adopt(t, "status", "--plan", planFile, "-o", "json", "--no-coverage")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "not in the cluster yet") || !strings.Contains(out, `"Synced"`) {
		t.Errorf("status does not read %s/team where it is:\n%s", teamNS, out)
	}
	out, errOut, _ = adopt(t, "finalize", "--plan", planFile, "--timeout", "1s", "--poll-interval", "200ms", "--dry-run", "-o", "json")
	if strings.Contains(out+errOut, "not found") || strings.Contains(out+errOut, "not in the cluster") {
		t.Errorf("finalize looks for team outside %s:\n%s%s", teamNS, out, errOut)
	}
}
