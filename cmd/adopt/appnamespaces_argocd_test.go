package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestAppOutsideWatchedNamespacesOnRealArgoCD: on a real Argo CD (the
// current GA, application.namespaces unset in argocd-cmd-params-cm), an
// Application in another namespace is never reconciled: it has no status
// after an Application created later in Argo CD's namespace has one. A
// hand-applied ConfigMap whose tracking id names it counts as untracked:
// plan says why and gives the fix, for the Application and for the
// object.
func TestAppOutsideWatchedNamespacesOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	team, work := c.Namespace(t), c.Namespace(t)
	app := func(ns, name string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  project: default
  source: {repoURL: "https://git.example.invalid/gitops.git", path: apps, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
`, name, ns, work)
	}
	if out, err := c.Kubectl(ctx, []byte(app(team, "settings")), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	id := fmt.Sprintf("%s_settings:/ConfigMap:%s/settings", team, work)
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: %s\n  annotations: {argocd.argoproj.io/tracking-id: %q}\ndata: {mode: fast}\n", work, id)
	if out, err := c.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The barrier: an Application created afterwards in Argo CD's own
	// namespace gets a status; the one in the team's namespace has none.
	witness := "witness-" + work
	if err := a.CreateApplication(ctx, []byte(app(a.Namespace, witness))); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitApplication(ctx, witness, func(s testenv.AppStatus) bool { return s.Sync != "" }); err != nil {
		t.Fatal(err)
	}
	if out, err := c.Kubectl(ctx, nil, "get", "applications.argoproj.io", "-n", team, "settings", "-o", "jsonpath={.status}"); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("Argo CD reconciled the Application in %s (status %q, %v); the test's premise is wrong", team, out, err)
	}

	var out, errb bytes.Buffer
	if code := runAdopt(t, "adopt", []string{"--kubeconfig", c.Kubeconfig, "plan", "-n", work, "-o", "json", "-q"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("plan exited %d: %s", code, errb.String())
	}
	var p plan.Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Tracking.AppNamespacesRead || len(p.Tracking.AppNamespaces) != 0 {
		t.Errorf("tracking %+v: want application.namespaces read, and empty", p.Tracking)
	}
	fix := "add " + team + " there (and to its AppProject's sourceNamespaces)"
	ob := p.Object("ConfigMap " + work + "/settings")
	if ob == nil || !strings.Contains(ob.StaleTracking, "Application "+team+"/settings is not run by Argo CD") || !strings.Contains(ob.StaleTracking, fix) {
		t.Fatalf("ConfigMap %s/settings: %+v; want untracked, its mark stale because Argo CD does not run %s/settings", work, ob, team)
	}
	var found bool
	for _, f := range p.Findings {
		if f.Code == plan.CodeAppNotRun && strings.Contains(f.Message, team+"/settings") && strings.Contains(f.Message, fix) {
			found = true
		}
	}
	if !found {
		t.Errorf("no %s finding for %s/settings: %+v", plan.CodeAppNotRun, team, p.Findings)
	}
}
