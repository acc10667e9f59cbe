package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanPreview runs `adopt plan --preview` on hand-applied objects whose
// Git copies differ: a newer ConfigMap, a Deployment with a new image, and a
// Service whose clusterIP Git tries to change (the live address is
// allocated, Git's comes from the static band). It checks the per-object
// verdicts, --fail-on, and that nothing in the cluster moved.
func TestPlanPreview(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cm := func(data string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  namespace: %s\ndata:\n  hook.py: %q\n", ns, data)
	}
	deploy := func(image string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: %s}]
`, ns, image)
	}
	svc := func(clusterIP string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: %s}\nspec:\n%s  selector: {app: web}\n  ports: [{port: 80}]\n", ns, clusterIP)
	}
	gitIP := cp.StaticClusterIP(t)
	live := strings.Repeat("a", 1000)
	if _, err := cp.Kubectl(ctx, []byte(cm(live)+"---\n"+deploy("nginx:1.27")+"---\n"+svc("")), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "gitops")
	err := testenv.InitRepo(repo, map[string]string{
		"apps/hook.yaml": cm(live + strings.Repeat("b", 500)),
		"apps/web.yaml":  deploy("nginx:1.28"),
		"apps/svc.yaml":  svc("  clusterIP: " + gitIP + "\n"),
		"apps/README.md": "kubectl apply -f apps/\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	before := resourceVersions(t, ns)

	p := planJSON(t, "-n", ns, "--repo", repo, "--preview")
	if p.Summary.Preview == nil {
		t.Fatal("no preview summary")
	}
	get := func(kind string) *preview.Result {
		for _, o := range p.Objects {
			if o.Kind == kind && o.Preview != nil {
				return o.Preview
			}
		}
		t.Fatalf("%s not previewed", kind)
		return nil
	}
	if r := get("ConfigMap"); r.Outcome != preview.Changes || len(r.Changes) != 1 || !strings.Contains(r.Changes[0].Text, "data.hook.py +500 B") {
		t.Fatalf("ConfigMap preview: %+v", r)
	}
	if r := get("Deployment"); r.Outcome != preview.Changes || r.Rollout == nil || r.Rollout.PodsReplaced != 2 {
		t.Fatalf("Deployment preview: %+v", r)
	}
	if r := get("Service"); r.Outcome != preview.WouldFail || !strings.Contains(r.Verdict, `["`+gitIP+`"]`) || !strings.Contains(r.Verdict, "may not change once set") {
		t.Fatalf("Service preview: %+v", r)
	}
	if p.Summary.Preview.WouldFail != 1 {
		t.Fatalf("summary %+v", p.Summary.Preview)
	}

	out, _, code := adopt(t, "plan", "-n", ns, "--repo", repo, "--preview", "-q", "--fail-on", "critical")
	if code != ExitFindings || !strings.Contains(out, "FIRST SYNC") || !strings.Contains(out, "the API server says:") || !strings.Contains(out, "rollout: 2 pods replaced") {
		t.Fatalf("exit %d, table:\n%s", code, out)
	}
	if after := resourceVersions(t, ns); after != before {
		t.Fatalf("--preview wrote to the cluster:\nbefore %s\nafter  %s", before, after)
	}
}

// resourceVersions lists the namespace's ConfigMaps, Deployments and
// Services with their resourceVersions.
func resourceVersions(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	cs := cp.Clientset()
	var b strings.Builder
	cms, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		fmt.Fprintf(&b, "cm/%s=%s ", o.Name, o.ResourceVersion)
	}
	ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ds.Items {
		fmt.Fprintf(&b, "deploy/%s=%s ", o.Name, o.ResourceVersion)
	}
	ss, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ss.Items {
		fmt.Fprintf(&b, "svc/%s=%s ", o.Name, o.ResourceVersion)
	}
	return b.String()
}
