package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestFinalizeAPIModeOnRealArgoCD runs a real Argo CD v2.14.21 on the test
// control plane. A ConfigMap applied the runbook way (client-side, then
// --server-side) is in a repo on the test git server; an Application with
// no sync yet points at it. `adopt finalize --sync` in Argo CD API mode,
// with a token from logging in as admin, must start the first sync through
// argocd-server, wait for it with argocd-server's Watch, see it Synced and
// Healthy, remove the stale annotation, and never print the token. Then Git
// deletes a key and the next sync deletes it from the cluster.
func TestFinalizeAPIModeOnRealArgoCD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	ns := cp.Namespace(t)
	app := "adopt-" + ns
	a := startArgoCD(ctx, t, "v2.14.21", app)

	data := map[string]string{"a": "1", "b": "2"}
	hand := object(configMap(ns, data), map[string]string{"team": "platform"})
	kc(t, hand, "-n", ns, "apply", "-f", "-")
	kc(t, hand, "-n", ns, "apply", "--server-side", "-f", "-")
	if _, ok := getCM(t, ns).GetAnnotations()[budget.LastAppliedKey]; !ok {
		t.Fatal("starting state lacks the last-applied annotation")
	}
	manifest := "adopted/" + ns + "/usage-hook.json"
	g := gitOpsApps(ctx, t, a, map[string]string{manifest: string(hand)}, ns)
	token, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	planFile := writePlan(t, cmObject(ns))
	api := []string{"--argocd-server", a.Address, "--plaintext"}
	noToken := func(what, s string) {
		t.Helper()
		if strings.Contains(s, token) {
			t.Errorf("the token appears in %s", what)
		}
	}

	// A bad token: one line that says what to do, and the token is not in it.
	bad := token + "x"
	out, errOut, code := adopt(t, append([]string{"finalize", "--plan", planFile, "--argocd-token", bad, "--poll-interval", "100ms"}, api...)...)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1] // before it, the progress lines
	if code != ExitError || !strings.HasPrefix(last, "error: argocd-server at "+a.Address+" rejected the token") ||
		!strings.Contains(last, "--argocd-token or $ARGOCD_AUTH_TOKEN") || strings.Count(errOut, "error:") != 1 {
		t.Fatalf("bad token: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, bad) {
		t.Fatal("the bad token appears in the output")
	}

	// The poll interval is longer than the timeout: only argocd-server's
	// Watch can wake the wait up before the timeout, when the sync is done.
	// Without it the wait ends at the timeout, not ready, and the run fails.
	out, errOut, code = adopt(t, append([]string{"finalize", "--plan", planFile, "--sync", "--argocd-token", token,
		"--timeout", "5m", "--poll-interval", "1h"}, api...)...)
	t.Logf("finalize:\n%s%s", out, errOut)
	noToken("the output of finalize --sync", out+errOut)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s\ncontroller: %s", code, out, errOut, a.LogTail("argocd-application-controller", 2000))
	}
	for _, want := range []string{
		"Argo CD v2.14.21 (from argocd-server at " + a.Address + " (version API)); Applications read through argocd-server at " + a.Address + " (Argo CD API mode)",
		"Application " + app + ": sync Synced, health Healthy, ready",
		"sync started by adopt (ServerSideApply=true, no prune)",
		"finalized",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The sync went through argocd-server (as admin, not a .operation set by
	// adopt), with server-side apply and no prune.
	u, err := dynClient(t).Resource(argoapp.ApplicationGVR).Namespace(a.Namespace).Get(ctx, app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op, _, _ := unstructured.NestedMap(u.Object, "status", "operationState", "operation")
	by, _, _ := unstructured.NestedString(op, "initiatedBy", "username")
	opts, _, _ := unstructured.NestedStringSlice(op, "sync", "syncOptions")
	prune, _, _ := unstructured.NestedBool(op, "sync", "prune")
	if by != "admin" || !reflect.DeepEqual(opts, []string{"ServerSideApply=true"}) || prune {
		t.Errorf("sync operation: initiated by %q, options %v, prune %v; want admin, [ServerSideApply=true], false", by, opts, prune)
	}
	st, err := a.ApplicationStatus(ctx, app)
	if err != nil || !testenv.SyncedHealthy(st) {
		t.Fatalf("Application %s: %s, %v", app, st, err)
	}
	after := getCM(t, ns)
	if _, ok := after.GetAnnotations()[budget.LastAppliedKey]; ok {
		t.Error("the last-applied annotation is still there")
	}
	if got := after.GetAnnotations()["team"]; got != "platform" {
		t.Errorf("annotation team = %q, want platform", got)
	}
	if got, want := after.GetAnnotations()[argoapp.AnnotationTrackingID], app+":/ConfigMap:"+ns+"/usage-hook"; got != want {
		t.Errorf("tracking id %q, want %q", got, want)
	}
	journal, err := os.ReadFile(planFile + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	noToken("the journal", string(journal))

	// Re-run with the token in $ARGOCD_AUTH_TOKEN: nothing left to do.
	t.Setenv("ARGOCD_AUTH_TOKEN", token)
	out, errOut, code = adopt(t, append([]string{"finalize", "--plan", planFile, "-o", "json", "--poll-interval", "500ms"}, api...)...)
	noToken("the output of the re-run", out+errOut)
	var rep finalize.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("re-run: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if rep.Total.Already != 1 || rep.ArgoCD == nil || rep.ArgoCD.Mode != "api" || rep.ArgoCD.Version != "v2.14.21" || rep.ArgoCD.Server != a.Address {
		t.Fatalf("re-run report: total %+v, argocd %+v", rep.Total, rep.ArgoCD)
	}

	// A user who may patch the objects but not read Applications through the
	// Kubernetes API: told to use API mode, and with $ARGOCD_SERVER set,
	// finalize switches to it by itself.
	kc(t, nil, "-n", ns, "create", "role", "finalizer", "--verb=get,patch", "--resource=configmaps")
	kc(t, nil, "-n", ns, "create", "rolebinding", "finalizer", "--role=finalizer", "--user="+testenv.ViewerUser)
	_, errOut, code = adopt(t, "--kubeconfig", cp.ViewerKubeconfig, "finalize", "--plan", planFile)
	if code != ExitError || !strings.Contains(errOut, "get applications.argoproj.io in "+a.Namespace) ||
		!strings.Contains(errOut, "or use Argo CD API mode (--argocd-server and --argocd-token)") {
		t.Fatalf("viewer without $ARGOCD_SERVER: exit %d: %s", code, errOut)
	}
	t.Setenv("ARGOCD_SERVER", a.Address)
	out, errOut, code = adopt(t, "--kubeconfig", cp.ViewerKubeconfig, "finalize", "--plan", planFile, "--plaintext", "--poll-interval", "500ms")
	noToken("the output of the viewer's run", out+errOut)
	if code != ExitOK || !strings.Contains(errOut, "using Argo CD API mode with $ARGOCD_SERVER "+a.Address) ||
		!strings.Contains(out, "Applications read through argocd-server at "+a.Address) || !strings.Contains(out, "already-finalized") {
		t.Fatalf("viewer with $ARGOCD_SERVER: exit %d\n%s\n%s", code, out, errOut)
	}

	// The decisive check: Git deletes key a, and the next sync deletes it.
	delete(data, "a")
	rev := pushFile(t, g, "gitops", manifest, object(configMap(ns, data), map[string]string{"team": "platform"}))
	if err := argoapp.TriggerSync(ctx, dynClient(t), a.Namespace, app, rev); err != nil {
		t.Fatal(err)
	}
	// The object is what decides: once the sync of rev has finished, key a
	// must be gone. Argo CD's own verdict comes after a refresh, so a
	// comparison that raced the sync's write (seen on a loaded CI
	// machine) is not taken for the result.
	status := argoapp.KubeStatus{Client: dynClient(t), Namespace: a.Namespace}
	for {
		s, err := status.Application(ctx, app)
		if err != nil {
			t.Fatalf("second sync: %v", err)
		}
		if !s.Operation && s.Phase != "" && slices.Contains(s.History, rev) {
			if s.Phase != argoapp.PhaseSucceeded {
				t.Fatalf("second sync: %+v", s)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("second sync never finished: %+v", s)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if got, _, _ := unstructured.NestedStringMap(getCM(t, ns).Object, "data"); !reflect.DeepEqual(got, data) {
		t.Fatalf("after finalize, the next sync left data %v, want %v", got, data)
	}
	kc(t, nil, "-n", a.Namespace, "annotate", "--overwrite", "applications.argoproj.io/"+app, "argocd.argoproj.io/refresh=normal")
	s, waiting, err := argoapp.Wait(ctx, status, app, argoapp.Want{Revision: rev}, 500*time.Millisecond, 5*time.Minute, nil)
	if err != nil || waiting != "" {
		t.Fatalf("after the second sync: %v, waiting: %s (%+v)", err, waiting, s)
	}
}

// TestFinalizeSyncAvoidsCSAMigrationTrapOnArgoCD3 runs a real Argo CD
// v3.2.6. Two ConfigMaps were applied client-side by hand; their Git copies
// are larger, so a client-side apply of the Git copy would pass the
// 262144-byte annotation cap. A first sync with only ServerSideApply=true
// fails in v3.2's client-side-apply migration, and finalize says why and
// what to do. `adopt finalize --sync` in API mode learns v3.2.6 from
// argocd-server, adds ClientSideApplyMigration=false, and the other
// ConfigMap is adopted: Synced, Healthy, annotation gone, field ownership
// migrated by finalize.
func TestFinalizeSyncAvoidsCSAMigrationTrapOnArgoCD3(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	trapped, adopted := cp.Namespace(t), cp.Namespace(t)
	a := startArgoCD(ctx, t, "v3.2.6", "adopt-"+trapped, "adopt-"+adopted)
	files := map[string]string{}
	for _, ns := range []string{trapped, adopted} {
		kc(t, object(configMap(ns, map[string]string{"usage_hook.py": strings.Repeat("a", 250_000)}), nil), "-n", ns, "apply", "-f", "-")
		before := getCM(t, ns)
		if n := budget.AnnotationBytes(before.GetAnnotations()); n < 250_000 || n > budget.AnnotationCap {
			t.Fatalf("starting state: annotations %d B", n)
		}
		files["adopted/"+ns+"/usage-hook.json"] = string(object(configMap(ns, map[string]string{"usage_hook.py": strings.Repeat("b", 263_000)}), nil))
	}
	gitOpsApps(ctx, t, a, files, trapped, adopted)
	token, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	planFile := writePlan(t, cmObject(trapped), cmObject(adopted))
	api := []string{"--argocd-server", a.Address, "--plaintext", "--argocd-token", token}

	// The trap: a sync with ServerSideApply=true alone, as adopt would send
	// for an unknown version.
	if err := argoapp.TriggerSync(ctx, dynClient(t), a.Namespace, "adopt-"+trapped, ""); err != nil {
		t.Fatal(err)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	st, err := a.WaitApplication(waitCtx, "adopt-"+trapped, func(s testenv.AppStatus) bool {
		return s.OperationPhase == "Failed" || s.OperationPhase == "Error" || s.OperationPhase == "Succeeded"
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trapped: %s", st)
	if st.OperationPhase != "Failed" || !strings.Contains(st.OperationMessage, "client-side apply migration") || !strings.Contains(st.OperationMessage, "Too long") {
		t.Fatalf("a first sync without ClientSideApplyMigration=false on v3.2.6: %s; want Failed in the client-side apply migration", st)
	}
	out, errOut, code := adopt(t, append([]string{"finalize", "--plan", planFile, "--app", "adopt-" + trapped, "--timeout", "1s", "--poll-interval", "100ms"}, api...)...)
	t.Logf("finalize trapped:\n%s%s", out, errOut)
	if code != ExitPartial || !strings.Contains(out, "Argo CD v3.2.6 migrates client-side-apply ownership with a client-side apply") ||
		!strings.Contains(out, "add ClientSideApplyMigration=false to the Application's spec.syncPolicy.syncOptions") {
		t.Fatalf("exit %d: the report does not explain the trap", code)
	}
	if _, ok := getCM(t, trapped).GetAnnotations()[budget.LastAppliedKey]; !ok {
		t.Fatal("the trapped object lost its annotation")
	}

	// adopt's own first sync on v3.2.6 avoids it.
	out, errOut, code = adopt(t, append([]string{"finalize", "--plan", planFile, "--app", "adopt-" + adopted, "--sync", "--timeout", "5m", "--poll-interval", "1s"}, api...)...)
	t.Logf("finalize adopted:\n%s%s", out, errOut)
	if code != ExitOK || !strings.Contains(errOut, "Argo CD v3.2.6 (from argocd-server at "+a.Address+" (version API))") ||
		!strings.Contains(out, "sync started by adopt (ServerSideApply=true, ClientSideApplyMigration=false, no prune)") {
		t.Fatalf("exit %d\ncontroller: %s", code, a.LogTail("argocd-application-controller", 2000))
	}
	st, err = a.ApplicationStatus(ctx, "adopt-"+adopted)
	if err != nil || !testenv.SyncedHealthy(st) {
		t.Fatalf("Application adopt-%s: %s, %v", adopted, st, err)
	}
	after := getCM(t, adopted)
	if _, ok := after.GetAnnotations()[budget.LastAppliedKey]; ok {
		t.Error("the last-applied annotation is still there")
	}
	if got, _, _ := unstructured.NestedString(after.Object, "data", "usage_hook.py"); got != strings.Repeat("b", 263_000) {
		t.Errorf("the Git copy was not applied (%d B of data)", len(got))
	}
	for _, m := range after.GetManagedFields() {
		if m.Manager != "argocd-controller" {
			t.Errorf("manager %s (%s) left after finalize; want argocd-controller only", m.Manager, m.Operation)
		}
	}
}

// startArgoCD starts a real Argo CD with annotation tracking for one test.
// When the test ends it stops Argo CD and removes what it installed, and
// the Applications named, from the shared control plane.
func startArgoCD(ctx context.Context, t *testing.T, version string, apps ...string) *testenv.ArgoCD {
	t.Helper()
	start := time.Now()
	a, err := testenv.StartArgoCD(ctx, cp, version)
	if err != nil {
		t.Fatal(err) // never a skip: Argo CD must start here and in CI
	}
	t.Cleanup(func() { uninstallArgoCD(t, a, apps...) })
	t.Cleanup(a.Stop) // runs first
	for _, tm := range a.Timings {
		t.Logf("argocd %s: %-45s %s", version, tm.Step, tm.Took.Round(time.Millisecond))
	}
	t.Logf("argocd %s started in %s at %s", version, time.Since(start).Round(time.Millisecond), a.Address)
	if err := a.SetConfig(ctx, map[string]string{"application.resourceTrackingMethod": "annotation"}); err != nil {
		t.Fatal(err)
	}
	return a
}

// gitOpsApps puts files into repo "gitops" on a new test git server (with
// basic auth), registers the repo with Argo CD, and creates one Application
// adopt-<ns> per namespace, for path adopted/<ns>, that has never synced.
func gitOpsApps(ctx context.Context, t *testing.T, a *testenv.ArgoCD, files map[string]string, namespaces ...string) *testenv.GitServer {
	t.Helper()
	g, err := testenv.StartGitServer("argocd", "git-"+namespaces[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	repoURL, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	resources := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: repo-gitops
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: git, url: %q, username: %q, password: %q}
`, repoURL, g.User, g.Password)
	for _, ns := range namespaces {
		resources += fmt.Sprintf(`---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: adopt-%s
spec:
  project: default
  source: {repoURL: %q, path: adopted/%s, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, ns, repoURL, ns, ns)
	}
	if err := a.CreateApplication(ctx, []byte(resources)); err != nil {
		t.Fatal(err)
	}
	return g
}

// pushFile commits one file to repo on the git server and returns the new
// commit.
func pushFile(t *testing.T, g *testenv.GitServer, repo, path string, content []byte) string {
	t.Helper()
	work := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("clone", "-q", g.BarePath(repo), ".")
	if err := os.WriteFile(filepath.Join(work, path), content, 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", path)
	git("-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "delete key a")
	git("push", "-q", "origin", "HEAD:main")
	return git("rev-parse", "HEAD")
}

// uninstallArgoCD removes what StartArgoCD and the test put into the shared
// control plane, apart from the CRDs, so that later tests of the package
// (plan reads argocd-cm) see the cluster as before.
func uninstallArgoCD(t *testing.T, a *testenv.ArgoCD, apps ...string) {
	ctx := context.Background()
	for _, args := range [][]string{
		append([]string{"delete", "-n", a.Namespace, "--ignore-not-found", "applications.argoproj.io"}, apps...),
		{"delete", "-n", a.Namespace, "--ignore-not-found", "appprojects.argoproj.io", "default"},
		{"delete", "-n", a.Namespace, "--ignore-not-found", "secret", "argocd-initial-admin-secret", "repo-gitops"},
		{"delete", "-n", a.Namespace, "--ignore-not-found", "-k", filepath.Join(a.Dir, "config")},
	} {
		if out, err := cp.Kubectl(ctx, nil, args...); err != nil {
			t.Errorf("clean up after Argo CD: kubectl %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}
