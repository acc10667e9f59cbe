package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// plHook is the incident's ConfigMap with a data value of n bytes.
func plHook(ns string, n int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: litellm-test-usage-hook\n  namespace: %s\ndata:\n  usage_hook.py: %s\n", ns, strings.Repeat("a", n))
}

const plWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %s
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`

// TestPlanMatchesGit matches live objects with a GitOps repo served over
// real smart HTTP (cloned in memory) and read as a local clone: in Git at
// path:line, identical, live behind Git by its byte count, not in Git,
// ambiguous, and the next client-side apply that would fail. It also checks
// the grouping by Git directory with directory.include, and that two scans
// give byte-identical plan files that record the repo revision.
func TestPlanMatchesGit(t *testing.T) {
	ns := cp.Namespace(t)
	const live, behind = 255000, 8126
	// The cluster holds the older hook, applied client-side by a runbook.
	plKubectl(t, plHook(ns, live), "apply", "-f", "-")
	plKubectl(t, fmt.Sprintf(plWeb, ns), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "twice", nil, nil), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "only-live", nil, nil), "apply", "-f", "-")

	g, err := testenv.StartGitServer("alice", "canary-pass-7731")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	files := map[string]string{
		"k8s/system/litellm-test-usage-hook-cm.yaml": "# generated\n" + plHook(ns, live+behind),
		"k8s/system/README.md":                       "kubectl apply -f k8s/system/litellm-test-usage-hook-cm.yaml\n",
		"k8s/system/not-deployed.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-deployed}\n",
		"apps/web/web.yaml":                          fmt.Sprintf(plWeb, ns),
		"dup/a.yaml":                                 plCM(ns, "twice", nil, nil),
		"dup/b.yaml":                                 "---\n" + strings.Replace(plCM(ns, "twice", nil, nil), "  namespace: "+ns+"\n", "", 1),
		"kust/kustomization.yaml":                    "resources: [x.yaml]\n",
		"chart/templates/t.yaml":                     "metadata:\n  name: {{ .Values.name }}\n  labels: {{ toYaml . }}\n",
	}
	url, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "--git-dir", g.BarePath("gitops"), "rev-parse", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ADOPT_GIT_USERNAME", "alice")
	t.Setenv("ADOPT_GIT_TOKEN", "canary-pass-7731")
	out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "-o", "json", "--repo", url)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out+errOut, "canary-pass-7731") {
		t.Fatal("the Git token reached the output")
	}
	p := planJSON(t, "-n", ns, "--repo", url)
	if p.Repo == nil || p.Repo.Revision != strings.TrimSpace(string(head)) || p.Repo.Source != url {
		t.Fatalf("repo %+v", p.Repo)
	}
	obj := plNames(p, ns)

	hook := obj["litellm-test-usage-hook"]
	if hook == nil || hook.Git == nil || hook.Git.Path != "k8s/system/litellm-test-usage-hook-cm.yaml" || hook.Git.Line != 2 {
		t.Fatalf("hook match: %+v", hook)
	}
	if hook.Drift == nil || hook.Drift.BytesBehind != behind || strings.Join(hook.Drift.Fields, ",") != "data.usage_hook.py" {
		t.Fatalf("hook drift: %+v", hook.Drift)
	}
	if !hook.NextApply.Fails || hook.NextApply.Bytes <= 262144 || hook.Level != "critical" {
		t.Fatalf("hook next apply %+v level %s", hook.NextApply, hook.Level)
	}
	if !hasFinding(hook, plan.CodeNextApplyFails) || !hasFinding(hook, plan.CodeStaleVsGit) {
		t.Fatalf("hook findings: %+v", hook.Findings)
	}
	if web := obj["web"]; web == nil || web.Git == nil || web.Drift == nil || !web.Drift.Identical() {
		t.Fatalf("web (server defaults must not be drift): %+v", web)
	}
	if tw := obj["twice"]; tw == nil || tw.Git != nil || len(tw.Ambiguous) != 2 || !hasFinding(tw, plan.CodeAmbiguous) {
		t.Fatalf("ambiguous: %+v", tw)
	}
	if ol := obj["only-live"]; ol == nil || ol.Git != nil || !hasFinding(ol, plan.CodeNotInGit) {
		t.Fatalf("not in git: %+v", ol)
	}
	if p.Summary.NotInGit != 2 || p.Summary.Ambiguous != 1 || p.Summary.Drifted != 1 {
		t.Fatalf("summary %+v", p.Summary)
	}
	if len(p.Repo.Kustomizations) != 1 || len(p.Repo.SkippedFiles) != 1 || !strings.Contains(p.Repo.SkippedFiles[0].Reason, "template") {
		t.Fatalf("kustomizations %v skipped %+v", p.Repo.Kustomizations, p.Repo.SkippedFiles)
	}
	// Grouping by Git directory: k8s/system holds another manifest, so the
	// Application includes only the hook's file.
	var sys, web *plan.Application
	for i := range p.Applications {
		switch p.Applications[i].SourcePath {
		case "k8s/system":
			sys = &p.Applications[i]
		case "apps/web":
			web = &p.Applications[i]
		}
	}
	if sys == nil || sys.Source != "git" || strings.Join(sys.Include, ",") != "litellm-test-usage-hook-cm.yaml" || sys.RepoURL != url || hook.App != sys.Name {
		t.Fatalf("k8s/system app: %+v", sys)
	}
	if web == nil || len(web.Include) != 0 || len(web.Objects) != 1 {
		t.Fatalf("apps/web app: %+v", web)
	}

	// The table says it the way the post-mortem did.
	table, _, _ := adopt(t, "plan", "-n", ns, "-q", "--repo", url)
	if !strings.Contains(table, "8,126 B behind") || !strings.Contains(table, "not in Git") || !strings.Contains(table, "ambiguous (2)") {
		t.Fatalf("table:\n%s", table)
	}

	// A local clone gives the same matches, and two scans the same bytes.
	clone := filepath.Join(t.TempDir(), "gitops")
	if out, err := exec.Command("git", "clone", "-q", strings.Replace(url, "http://", "http://alice:canary-pass-7731@", 1), clone).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	dir := t.TempDir()
	var plans [2][]byte
	for i := range plans {
		f := filepath.Join(dir, fmt.Sprintf("p%d.yaml", i))
		if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--repo", clone, "--out", f); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if plans[i], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(plans[0], plans[1]) {
		t.Fatal("two scans with --repo gave different plan files")
	}
	pf, err := plan.Unmarshal(plans[0])
	if err != nil {
		t.Fatal(err)
	}
	if pf.Repo.Revision != strings.TrimSpace(string(head)) || pf.Cluster.Server != cp.Server || pf.Cluster.Context != "adopt-local" || pf.Tracking.Method == "" || !strings.HasPrefix(pf.ID, "plan-") {
		t.Fatalf("plan file header: %+v %+v %+v %s", pf.Repo, pf.Cluster, pf.Tracking, pf.ID)
	}
	if h := pf.Object(hook.Ref.String()); h == nil || h.Drift.BytesBehind != behind {
		t.Fatalf("plan file lost the drift: %+v", h)
	}
	if err := plan.CheckCluster(pf, cp.Server, "adopt-local"); err != nil {
		t.Fatal(err)
	}
	if err := plan.CheckCluster(pf, "https://10.1.2.3:6443", "prod"); err == nil || !strings.Contains(err.Error(), cp.Server) {
		t.Fatalf("plan for another cluster accepted: %v", err)
	}
}

func hasFinding(o *plan.Object, code string) bool {
	for _, f := range o.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// TestPlanFailOnAndFormats checks --fail-on exit codes and the Markdown and
// YAML outputs.
func TestPlanFailOnAndFormats(t *testing.T) {
	ns := cp.Namespace(t)
	plKubectl(t, plHook(ns, 240000), "apply", "-f", "-") // about 91.6%: critical
	if _, _, code := adopt(t, "plan", "-n", ns, "-q", "--fail-on", "critical"); code != ExitFindings {
		t.Fatalf("--fail-on critical with a critical object: exit %d", code)
	}
	ok := cp.Namespace(t)
	plKubectl(t, plCM(ok, "small", nil, nil), "apply", "-f", "-")
	if _, errOut, code := adopt(t, "plan", "-n", ok, "-q", "--fail-on", "warning"); code != 0 {
		t.Fatalf("--fail-on warning with nothing at risk: exit %d: %s", code, errOut)
	}
	if _, errOut, code := adopt(t, "plan", "-n", ok, "--fail-on", "sometimes"); code != ExitUsage || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("bad --fail-on: %d %q", code, errOut)
	}
	md, _, code := adopt(t, "plan", "-n", ns, "-q", "-o", "markdown")
	if code != 0 || !strings.Contains(md, "## Application `adopt-"+ns+"`") || !strings.Contains(md, "next-client-side-apply") && !strings.Contains(md, "critical") {
		t.Fatalf("markdown (%d):\n%s", code, md)
	}
	y, _, code := adopt(t, "plan", "-n", ns, "-q", "-o", "yaml")
	if code != 0 || !strings.HasPrefix(y, "apiVersion: adopt.dev/v1alpha1\nkind: AdoptionPlan\n") {
		t.Fatalf("yaml (%d):\n%.300s", code, y)
	}
	table, _, _ := adopt(t, "plan", "-n", ns, "-q")
	if !strings.Contains(table, "1 objects, 1 at risk (1 critical, 0 warning), 1 not in Git, ") || !strings.Contains(table, "Application adopt-"+ns) {
		t.Fatalf("table:\n%s", table)
	}
}
