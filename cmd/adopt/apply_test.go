package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const secretCanary = "s3cret-CANARY-value-7781"

// handApplied creates the test's objects the way the incident's were: with
// client-side kubectl apply, so last-applied copies (a Secret's included)
// sit in annotations.
func handApplied(t *testing.T, ns string) {
	t.Helper()
	m := `apiVersion: v1
kind: ConfigMap
metadata: {name: hook}
data: {usage_hook.py: "print('v1')\n"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27}]
      volumes: [{name: tmp, emptyDir: {}}]
---
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: ` + secretCanary + `}
`
	if out, err := cp.Kubectl(context.Background(), []byte(m), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
}

func tipOf(t *testing.T, repoPath, branch string) *gitobject.Commit {
	t.Helper()
	r, err := git.PlainOpen(repoPath)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("branch %s: %v", branch, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// everything returns every file of every commit and every commit message
// of the repo, for leak checks.
func everything(t *testing.T, repoPath string) string {
	t.Helper()
	r, err := git.PlainOpen(repoPath)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	iter, err := r.CommitObjects()
	if err != nil {
		t.Fatal(err)
	}
	_ = iter.ForEach(func(c *gitobject.Commit) error {
		b.WriteString(c.Message)
		files, _ := c.Files()
		return files.ForEach(func(f *gitobject.File) error {
			s, _ := f.Contents()
			b.WriteString(f.Name + "\n" + s)
			return nil
		})
	})
	return b.String()
}

func dryRunCreate(t *testing.T, appYAML string) {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(appYAML), &u.Object); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	if _, err := dynClient(t).Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
		t.Fatalf("server-side dry-run create refused the generated Application: %v\n%s", err, appYAML)
	}
}

// TestApplyOverSmartHTTP runs the CLI against the real API server and a
// real git smart-HTTP server with basic auth: files, branch and commit as
// expected, the Application accepted by the API server, a second run that
// changes nothing, a changed object that adds one commit, a dry run that
// writes nothing, an auth failure in one redacted line, and a Secret's
// value nowhere.
func TestApplyOverSmartHTTP(t *testing.T) {
	ns := cp.Namespace(t)
	handApplied(t, ns)
	g, err := testenv.StartGitServer("alice", "right-token-5150")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("gitops", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", planFile); code != 0 {
		t.Fatalf("plan: %s", errOut)
	}
	p := readPlan(t, planFile)
	id := apply.AdoptionID(p)
	var logs strings.Builder
	run := func(extra ...string) (string, int) {
		args := append([]string{"apply", "--plan", planFile, "--repo", url, "--git-user", "alice", "--author", "Test <t@example.invalid>", "-q"}, extra...)
		out, errOut, code := adopt(t, args...)
		logs.WriteString(out + errOut)
		return out + errOut, code
	}

	out, code := run("--git-token", "right-token-5150", "--dry-run")
	if code != 0 || !strings.Contains(out, "+++ b/argocd/apps/adopt-"+ns+".yaml") || !strings.Contains(out, "nothing was written") {
		t.Fatalf("dry run (%d): %s", code, out)
	}
	if r, _ := git.PlainOpen(g.BarePath("gitops")); r != nil {
		if _, err := r.Reference(plumbing.NewBranchReferenceName("adopt/"+id), true); err == nil {
			t.Fatal("dry run created the branch")
		}
	}

	t.Setenv("ADOPT_GIT_TOKEN", "right-token-5150")
	out, code = run()
	if code != 0 {
		t.Fatalf("apply exited %d: %s", code, out)
	}
	tip := tipOf(t, g.BarePath("gitops"), "adopt/"+id)
	appFile := "argocd/apps/adopt-" + ns + ".yaml"
	want := []string{appFile, "adopted/" + ns + "/configmap-hook.yaml", "adopted/" + ns + "/deployment-web.yaml"}
	for _, f := range want {
		if _, err := tip.File(f); err != nil {
			t.Errorf("%s not committed: %v\n%s", f, err, out)
		}
	}
	if _, err := tip.File("adopted/" + ns + "/secret-db.yaml"); err == nil {
		t.Error("the Secret was written with --secrets=skip")
	}
	if !strings.HasPrefix(tip.Message, "adopt: 1 Argo CD Application for 3 hand-applied objects (plan "+id+")") || !strings.Contains(tip.Message, "Secret "+ns+"/db") || tip.Author.Email != "t@example.invalid" {
		t.Errorf("commit message or author:\n%s\n%s", tip.Message, tip.Author)
	}
	app := fileText(t, tip, appFile)
	a, err := argoapp.DecodeApplication([]byte(app))
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.Source.RepoURL != url || a.Spec.Source.Path != "adopted/"+ns || a.Spec.Source.TargetRevision != "main" || a.Spec.Destination.Namespace != ns || a.Labels[argoapp.PlanIDLabel] != id || a.Spec.SyncPolicy.Automated != nil {
		t.Errorf("Application:\n%s", app)
	}
	dryRunCreate(t, app)
	dep := fileText(t, tip, "adopted/"+ns+"/deployment-web.yaml")
	if !strings.Contains(dep, "emptyDir: {}") || strings.Contains(dep, "last-applied") || strings.Contains(dep, "resourceVersion") {
		t.Errorf("exported Deployment:\n%s", dep)
	}

	out, code = run()
	if code != 0 || !strings.Contains(out, "up to date") || tipOf(t, g.BarePath("gitops"), "adopt/"+id).Hash != tip.Hash {
		t.Fatalf("second run was not a no-op (%d): %s", code, out)
	}

	kc(t, nil, "-n", ns, "patch", "configmap", "hook", "--type=merge", "-p", `{"data":{"usage_hook.py":"print('v2')\n"}}`)
	out, code = run()
	next := tipOf(t, g.BarePath("gitops"), "adopt/"+id)
	if code != 0 || next.NumParents() != 1 || next.ParentHashes[0] != tip.Hash || !strings.Contains(fileText(t, next, "adopted/"+ns+"/configmap-hook.yaml"), "v2") {
		t.Fatalf("changed object did not add exactly one commit (%d): %s", code, out)
	}

	t.Setenv("ADOPT_GIT_TOKEN", "")
	out, code = run("--git-token", "wrong-token-CANARY-42")
	if code != ExitError || strings.Count(strings.TrimSpace(out), "\n") != 0 || strings.Contains(out, "wrong-token-CANARY-42") || !strings.Contains(out, "authentication") {
		t.Fatalf("auth failure (%d) is not one redacted line: %q", code, out)
	}

	planText, _ := os.ReadFile(planFile)
	scan := &leakScan{secrets: map[string]string{"the Secret's value": secretCanary}, texts: map[string]string{
		"repo (all commits, files, messages)": everything(t, g.BarePath("gitops")), "plan file": string(planText), "logs": logs.String()}}
	scan.check(t)
}

// TestApplyLocalRepoPointsAtGitAndFixesRunbooks: a local bare repo (no
// network) whose k8s/system already holds the adopted ConfigMap's manifest,
// next to other files, and a README that applies it by hand. The
// Application points at k8s/system with directory.include, nothing is
// copied, the runbook line is reported and, with --fix-runbooks, rewritten.
func TestApplyLocalRepoPointsAtGitAndFixesRunbooks(t *testing.T) {
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: litellm-test-usage-hook}\ndata: {a: b}\n"), "apply", "-n", ns, "-f", "-")
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.CreateRepo("local", map[string]string{
		"k8s/system/litellm-test-usage-hook-cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: litellm-test-usage-hook}\ndata: {a: b}\n",
		"k8s/system/other.yaml":                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
		"k8s/system/README.md":                       "Update the hook:\n\n    kubectl -n " + ns + " apply -f k8s/system/litellm-test-usage-hook-cm.yaml\n",
	}); err != nil {
		t.Fatal(err)
	}
	bare := g.BarePath("local")
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", planFile); code != 0 {
		t.Fatalf("plan: %s", errOut)
	}
	p := readPlan(t, planFile)
	for i := range p.Objects {
		p.Objects[i].Git = &plan.GitMatch{Path: "k8s/system/litellm-test-usage-hook-cm.yaml", Line: 1}
	}
	writePlanFile(t, planFile, p)
	out, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", bare, "--author", "T <t@example.invalid>", "-q")
	if code != 0 || !strings.Contains(out, "k8s/system/README.md:3: this runbook still applies an adopted file by hand") {
		t.Fatalf("apply (%d): %s %s", code, out, errOut)
	}
	id := apply.AdoptionID(p)
	tip := tipOf(t, bare, "adopt/"+id)
	app := fileText(t, tip, "argocd/apps/adopt-"+ns+".yaml")
	a, err := argoapp.DecodeApplication([]byte(app))
	if err != nil {
		t.Fatal(err)
	}
	if a.Spec.Source.Path != "k8s/system" || a.Spec.Source.Directory == nil || a.Spec.Source.Directory.Include != "litellm-test-usage-hook-cm.yaml" || !strings.HasPrefix(a.Spec.Source.RepoURL, "file://") {
		t.Fatalf("Application does not point at the Git copy:\n%s", app)
	}
	dryRunCreate(t, app)
	if _, err := tip.File("adopted/" + ns + "/configmap-litellm-test-usage-hook.yaml"); err == nil {
		t.Fatal("an object already in Git was copied")
	}
	if !strings.Contains(tip.Message, "k8s/system/README.md:3") {
		t.Fatalf("commit message lacks the runbook finding:\n%s", tip.Message)
	}

	out, errOut, code = adopt(t, "apply", "--plan", planFile, "--repo", bare, "--author", "T <t@example.invalid>", "-q", "--fix-runbooks")
	fixed := tipOf(t, bare, "adopt/"+id)
	readme := fileText(t, fixed, "k8s/system/README.md")
	if code != 0 || fixed.ParentHashes[0] != tip.Hash || !strings.Contains(readme, "apply --server-side -f k8s/system/litellm-test-usage-hook-cm.yaml") || !strings.Contains(readme, `Application "adopt-`+ns+`"`) {
		t.Fatalf("--fix-runbooks (%d): %s %s\n%s", code, out, errOut, readme)
	}
}

func readPlan(t *testing.T, path string) *plan.Plan {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fileText(t *testing.T, c *gitobject.Commit, p string) string {
	t.Helper()
	f, err := c.File(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
