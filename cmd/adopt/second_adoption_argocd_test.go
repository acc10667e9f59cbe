package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestSecondAdoptionKeepsTheFirstOnRealArgoCD (issue 43): plan and apply
// run twice in one namespace on a real Argo CD (the current GA), with the
// first adoption merged, synced and finalized between, auto-sync and
// prune on. A ConfigMap applied by hand is adopted; a week later a second
// one is applied by hand and adopted. The second apply extends the
// Application the first wrote instead of replacing it: after the second
// merge and sync both ConfigMaps exist and carry the Application's
// tracking id. Replacing it, as apply did before, made Argo CD prune the
// first. In the second variant a reviewer renamed the Application (its
// file and its name) before the first merge: finalize finds it by its
// source path and namespace, and the second adoption extends the renamed
// file under its new name, writing no second Application.
func TestSecondAdoptionKeepsTheFirstOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	for _, rename := range []bool{false, true} {
		t.Run(fmt.Sprintf("renamed in review %t", rename), func(t *testing.T) { secondAdoption(ctx, t, c, a, rename) })
	}
}

func secondAdoption(ctx context.Context, t *testing.T, c *testenv.ControlPlane, a *testenv.ArgoCD, rename bool) {
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
	git := func(dir string, args ...string) {
		t.Helper()
		if b, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	handApply := func(name, value string) {
		t.Helper()
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {v: \"" + value + "\"}\n"
		if out, err := c.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	// A reviewer renames the group's Application on its branch: file and
	// name, as `git mv` and an edit would.
	renamed := "search-" + ns[len(ns)-6:]
	review := func(branch, file string) string {
		t.Helper()
		dir := t.TempDir()
		git(dir, "clone", "-q", "-b", branch, bare, ".")
		git(dir, "-c", "user.name=R", "-c", "user.email=r@example.invalid", "mv", file, path.Join(path.Dir(file), renamed+".yaml"))
		moved := filepath.Join(dir, path.Dir(file), renamed+".yaml")
		b, err := os.ReadFile(moved)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(path.Base(file), ".yaml")
		edited := strings.Replace(string(b), `name: "`+name+`"`, `name: "`+renamed+`"`, 1)
		if edited == string(b) {
			t.Fatalf("the Application file has no name %q to rename:\n%s", name, b)
		}
		if err := os.WriteFile(moved, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		git(dir, "add", "-A")
		git(dir, "-c", "user.name=R", "-c", "user.email=r@example.invalid", "commit", "-q", "-m", "review: name it after the service")
		git(dir, "push", "-q", "origin", branch)
		return path.Join(path.Dir(file), renamed+".yaml")
	}
	// adopt plans, applies on branch (renamed in review the first time,
	// with rename), merges it (a fast-forward of main) and has Argo CD
	// create or update the Application from main, waits until it is
	// Synced and Healthy at main's head, and finalizes the plan.
	adoptOnce := func(branch string, first bool) string {
		t.Helper()
		planFile := filepath.Join(t.TempDir(), "plan.yaml")
		run("plan", "-n", ns, "--repo", url, "--out", planFile, "-q")
		run("apply", "--plan", planFile, "--repo", url, "--branch", branch, "--auto-sync", "--prune", "--author", "T <t@example.invalid>", "-q")
		p := readPlan(t, planFile)
		name, file := p.Applications[0].Name, p.Settings.AppsDir+"/"+p.Applications[0].Name+".yaml"
		if rename {
			if first {
				file = review(branch, file)
			}
			name, file = renamed, p.Settings.AppsDir+"/"+renamed+".yaml"
		}
		git(bare, "update-ref", "refs/heads/main", "refs/heads/"+branch)
		if err := a.CreateApplication(ctx, []byte(fileText(t, tipOf(t, bare, "main"), file))); err != nil {
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
		out := run("finalize", "--plan", planFile, "--timeout", "2m", "--poll-interval", "500ms", "-o", "json")
		if rename && !strings.Contains(out, "was renamed "+renamed+" before it merged") {
			t.Errorf("finalize of a renamed Application does not say it found it by its source:\n%.3000s", out)
		}
		return name
	}

	handApply("tuning", "fast")
	first := adoptOnce("adopt-1", true)
	handApply("synonyms", "car,auto")
	if second := adoptOnce("adopt-2", false); second != first {
		t.Fatalf("the second adoption wrote Application %s, the first %s: this test wants the same group", second, first)
	}
	if rename {
		files, err := tipOf(t, bare, "main").Files()
		if err != nil {
			t.Fatal(err)
		}
		var apps []string
		_ = files.ForEach(func(f *gitobject.File) error {
			if strings.HasPrefix(f.Name, "argocd/apps/") {
				apps = append(apps, f.Name)
			}
			return nil
		})
		if len(apps) != 1 || path.Base(apps[0]) != renamed+".yaml" {
			t.Errorf("Application files on main after the second adoption: %v; want only the renamed one", apps)
		}
	}
	for _, name := range []string{"tuning", "synonyms"} {
		cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ConfigMap %s/%s after the second adoption: %v (pruned?)", ns, name, err)
		}
		if id := cm.Annotations["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, first+":") {
			t.Errorf("ConfigMap %s/%s: tracking id %q, want one of Application %s", ns, name, id, first)
		}
		if _, ok := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			t.Errorf("ConfigMap %s/%s still carries last-applied-configuration after finalize", ns, name)
		}
	}
}
