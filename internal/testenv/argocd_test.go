package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestArgoCDv2AdoptsHandAppliedConfigMap(t *testing.T) {
	testArgoCDAdoptsHandAppliedConfigMap(t, "v2.14.21")
}

func TestArgoCDv3AdoptsHandAppliedConfigMap(t *testing.T) {
	testArgoCDAdoptsHandAppliedConfigMap(t, "v3.2.6")
}

// testArgoCDAdoptsHandAppliedConfigMap hand-applies a large ConfigMap with
// the real kubectl (client-side, so it carries the last-applied
// annotation), puts a slightly newer copy in a repo on the real git server
// (with basic auth, so the repo-server's git askpass runs), and has a real
// Argo CD Application with ServerSideApply=true take it over. It expects
// Synced/Healthy, the Git copy in the cluster, the tracking id, and
// argocd-controller as the only field manager.
func testArgoCDAdoptsHandAppliedConfigMap(t *testing.T, version string) {
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	start := time.Now()
	a, err := StartArgoCD(ctx, cp, version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	for _, tm := range a.Timings {
		t.Logf("argocd %s: %-45s %s", version, tm.Step, tm.Took.Round(time.Millisecond))
	}
	t.Logf("argocd %s: started in %s; server %s", version, time.Since(start).Round(time.Millisecond), a.Server)
	if err := a.SetConfig(ctx, map[string]string{"application.resourceTrackingMethod": "annotation"}); err != nil {
		t.Fatal(err)
	}

	ns := cp.Namespace(t)
	hook := usageHook(150 << 10)
	handApplied := configMapYAML(ns, map[string]string{"usage_hook.py": hook})
	if _, err := cp.Kubectl(ctx, []byte(handApplied), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	cms := cp.Clientset().CoreV1().ConfigMaps(ns)
	before, err := cms.Get(ctx, "usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Fatalf("kubectl apply left no last-applied annotation on ConfigMap %s/usage-hook", ns)
	}
	t.Logf("before: annotations %d B, managers %v", annotationBytes(before.Annotations), managers(before.ManagedFields))

	g, err := StartGitServer("argocd", "git-"+randomToken()[:8])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	inGit := configMapYAML(ns, map[string]string{"usage_hook.py": hook, "added-in-git": "yes"})
	repoURL, err := g.CreateRepo("gitops", map[string]string{"apps/usage-hook/configmap.yaml": inGit})
	if err != nil {
		t.Fatal(err)
	}
	repoSecret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: repo-gitops
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: git, url: %q, username: %q, password: %q}
`, repoURL, g.User, g.Password)
	if err := a.CreateApplication(ctx, []byte(repoSecret)); err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: usage-hook
spec:
  project: default
  source: {repoURL: %q, path: apps/usage-hook, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    automated: {}
    syncOptions: [ServerSideApply=true]
`, repoURL, ns)
	syncStart := time.Now()
	if err := a.CreateApplication(ctx, []byte(app)); err != nil {
		t.Fatal(err)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	st, err := a.WaitApplication(waitCtx, "usage-hook", SyncedHealthy)
	if err != nil {
		t.Fatalf("%v\nrepo-server: %s\ncontroller: %s", err, lastLines(a.LogTail("argocd-repo-server", 3000), 5), lastLines(a.LogTail("argocd-application-controller", 3000), 5))
	}
	t.Logf("argocd %s: Application %s in %s", version, st, time.Since(syncStart).Round(time.Millisecond))

	after, err := cms.Get(ctx, "usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Data["added-in-git"] != "yes" {
		t.Errorf("the Git copy was not applied: data key added-in-git = %q", after.Data["added-in-git"])
	}
	wantID := "usage-hook:/ConfigMap:" + ns + "/usage-hook"
	if got := after.Annotations["argocd.argoproj.io/tracking-id"]; got != wantID {
		t.Errorf("tracking id %q, want %q", got, wantID)
	}
	_, lastApplied := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]
	t.Logf("after: annotations %d B (last-applied kept: %v), managers %v", annotationBytes(after.Annotations), lastApplied, managers(after.ManagedFields))
	if got := managers(after.ManagedFields); strings.Join(got, ",") != "argocd-controller Apply" {
		t.Errorf("managers after sync %v, want [argocd-controller Apply]", got)
	}

	// API mode: a token from logging in as admin reads the same Application.
	token, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	apiSync, err := apiSyncStatus(ctx, a.Server, token, "usage-hook")
	if err != nil {
		t.Fatal(err)
	}
	if apiSync != "Synced" {
		t.Errorf("argocd-server API says sync status %q, want Synced", apiSync)
	}
	v, err := a.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, version) {
		t.Errorf("argocd-server reports version %q, want %s", v, version)
	}
	t.Logf("argocd-server version %s", v)
}

// usageHook is n bytes of Python-like text, like the incident's hook.
func usageHook(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "def gated_model_%05d(request):  # usage hook line %d\n    return request.model in GATED\n", i, i)
	}
	return b.String()[:n]
}

func configMapYAML(ns string, data map[string]string) string {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "usage-hook", "namespace": ns},
		"data":     data,
	}
	b, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// annotationBytes counts the way the API server does: keys plus values.
func annotationBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

func managers(mf []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, m := range mf {
		out = append(out, m.Manager+" "+string(m.Operation))
	}
	sort.Strings(out)
	return out
}

func apiSyncStatus(ctx context.Context, server, token, app string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/api/v1/applications/"+app, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /api/v1/applications/%s: %s", app, resp.Status)
	}
	var out struct {
		Status struct {
			Sync struct{ Status string } `json:"sync"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	return out.Status.Sync.Status, nil
}
