package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestSecondAdoptionKeepsTheFirstOnRealArgoCD (issue 43): plan and apply
// run twice in one namespace on a real Argo CD (the current GA), with the
// first adoption merged and synced between, auto-sync and prune on. A
// ConfigMap applied by hand is adopted; a week later a second one is
// applied by hand and adopted. The second apply extends the Application
// the first wrote (same name, same path) instead of replacing it: after
// the second merge and sync both ConfigMaps exist and carry the
// Application's tracking id. Replacing it, as apply did before, made Argo
// CD prune the first.
func TestSecondAdoptionKeepsTheFirstOnRealArgoCD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	bare := g.BarePath("gitops")
	ns := c.Namespace(t)
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("adopt %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}
	handApply := func(name, value string) {
		t.Helper()
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {v: \"" + value + "\"}\n"
		if out, err := c.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	// adopt plans, applies on branch, merges it (a fast-forward of main)
	// and has Argo CD create or update the Application from main, then
	// waits until it is Synced and Healthy at main's head.
	adoptOnce := func(branch string) string {
		t.Helper()
		planFile := filepath.Join(t.TempDir(), "plan.yaml")
		run("plan", "-n", ns, "--repo", url, "--out", planFile, "-q")
		run("apply", "--plan", planFile, "--repo", url, "--branch", branch, "--auto-sync", "--prune", "--author", "T <t@example.invalid>", "-q")
		if b, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", "refs/heads/"+branch).CombinedOutput(); err != nil {
			t.Fatalf("merge %s: %v: %s", branch, err, b)
		}
		p := readPlan(t, planFile)
		name := p.Applications[0].Name
		if err := a.CreateApplication(ctx, []byte(fileText(t, tipOf(t, bare, "main"), p.Settings.AppsDir+"/"+name+".yaml"))); err != nil {
			t.Fatal(err)
		}
		// Argo CD polls Git every few minutes; a refresh reads main now.
		if out, err := c.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "--overwrite", "applications.argoproj.io", name, "argocd.argoproj.io/refresh=normal"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		head := tipOf(t, bare, "main").Hash.String()
		waitCtx, waitCancel := context.WithTimeout(ctx, 3*time.Minute)
		defer waitCancel()
		if _, err := a.WaitApplication(waitCtx, name, func(s testenv.AppStatus) bool { return testenv.SyncedHealthy(s) && s.Revision == head }); err != nil {
			st, _ := a.ApplicationStatus(ctx, name)
			t.Fatalf("%s after %s, not Synced and Healthy at %.12s: %v; status %s\ncontroller: %s", name, branch, head, err, st, a.LogTail("argocd-application-controller", 2000))
		}
		return name
	}

	handApply("tuning", "fast")
	first := adoptOnce("adopt-1")
	handApply("synonyms", "car,auto")
	if second := adoptOnce("adopt-2"); second != first {
		t.Fatalf("the second adoption proposed Application %s, the first %s: this test wants the same group", second, first)
	}
	for _, name := range []string{"tuning", "synonyms"} {
		cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ConfigMap %s/%s after the second adoption: %v (pruned?)", ns, name, err)
		}
		if id := cm.Annotations["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, first+":") {
			t.Errorf("ConfigMap %s/%s: tracking id %q, want one of Application %s", ns, name, id, first)
		}
	}
}
