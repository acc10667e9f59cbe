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
	// A plane of its own: it sets annotation tracking in argocd-cm, which
	// the shared planes' other tests must not see.
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	a, err := StartArgoCD(ctx, cp, version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
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
	if err := a.AddRepository(ctx, "gitops", repoURL, g.User, g.Password); err != nil {
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

// TestArgoCDv3ClientSideApplyMigrationTrap reproduces issue 10 on a real
// Argo CD v3.2.6: a hand-applied ConfigMap at about 98% of the annotation
// cap, whose Git copy is about 6 KB larger, fails its first sync with
// ServerSideApply=true, because the client-side apply migration writes the
// last-applied annotation with the old manager and passes the cap; the
// object is left untouched. The same object with
// ClientSideApplyMigration=false syncs.
func TestArgoCDv3ClientSideApplyMigrationTrap(t *testing.T) {
	cp, a := sharedArgoCD(t, "v3.2.6")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	g, err := StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	const target = 257270 // the incident's annotations, 98.1% of 262144
	extra := usageHook(6 << 10)
	files := map[string]string{}
	namespaces := map[string]string{}
	for _, name := range []string{"trap", "fixed"} {
		ns := cp.Namespace(t)
		namespaces[name] = ns
		hook := hookForAnnotationBytes(t, cp, ns, target)
		files["apps/"+name+"/configmap.yaml"] = configMapYAML(ns, map[string]string{"usage_hook.py": hook, "added-in-git": extra})
	}
	repoURL, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]string{
		"trap":  "[ServerSideApply=true]",
		"fixed": "[ServerSideApply=true, ClientSideApplyMigration=false]",
	} {
		app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
spec:
  project: default
  source: {repoURL: %q, path: apps/%s, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy:
    automated: {}
    syncOptions: %s
`, name, repoURL, name, namespaces[name], opts)
		if err := a.CreateApplication(ctx, []byte(app)); err != nil {
			t.Fatal(err)
		}
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()

	st, err := a.WaitApplication(waitCtx, "trap", func(s AppStatus) bool { return s.Failed() || s.Sync == "Synced" })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trap: %s", st)
	if !st.Failed() {
		t.Fatalf("without ClientSideApplyMigration=false the first sync should fail on v3.2.6; got %s", st)
	}
	msg := strings.Join(st.Resources, "; ")
	for _, want := range []string{"client-side apply migration", "Too long: may not be more than 262144 bytes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("sync failure %q does not contain %q", msg, want)
		}
	}
	cms := cp.Clientset().CoreV1().ConfigMaps(namespaces["trap"])
	cm, err := cms.Get(ctx, "usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data["added-in-git"]; ok {
		t.Errorf("the failed sync changed the object: key added-in-git is present")
	}
	t.Logf("trap object after the failed sync: annotations %d B, managers %v", annotationBytes(cm.Annotations), managers(cm.ManagedFields))

	st, err = a.WaitApplication(waitCtx, "fixed", SyncedHealthy)
	if err != nil {
		t.Fatal(err)
	}
	cm, err = cp.Clientset().CoreV1().ConfigMaps(namespaces["fixed"]).Get(ctx, "usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data["added-in-git"]; !ok {
		t.Errorf("fixed: the Git copy was not applied")
	}
	if _, ok := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Errorf("fixed: the last-applied annotation survived the sync")
	}
	if got := managers(cm.ManagedFields); strings.Join(got, ",") != "argocd-controller Apply" {
		t.Errorf("fixed: managers after sync %v, want [argocd-controller Apply]", got)
	}
	t.Logf("fixed: %s; annotations %d B, managers %v", st, annotationBytes(cm.Annotations), managers(cm.ManagedFields))
}

// hookForAnnotationBytes hand-applies ConfigMap ns/usage-hook with the real
// kubectl (client-side) so that its annotations total target bytes, give
// or take one, and returns the hook text it used.
func hookForAnnotationBytes(t *testing.T, cp *ControlPlane, ns string, target int) string {
	t.Helper()
	ctx := context.Background()
	apply := func(hook string) int {
		if _, err := cp.Kubectl(ctx, []byte(configMapYAML(ns, map[string]string{"usage_hook.py": hook})), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		cm, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "usage-hook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return annotationBytes(cm.Annotations)
	}
	escaped := func(s string) int { b, _ := json.Marshal(s); return len(b) }
	hook := usageHook(1 << 10)
	overhead := apply(hook) - escaped(hook)
	full := usageHook(target)
	n := target - overhead
	for n > 0 && escaped(full[:n])+overhead > target {
		n--
	}
	hook = full[:n]
	got := apply(hook)
	if got > target || got < target-1 {
		t.Fatalf("hand-applied ConfigMap %s/usage-hook has %d B of annotations, want %d", ns, got, target)
	}
	t.Logf("hand-applied %s/usage-hook: data %d B, annotations %d B (%.1f%% of 262144)", ns, len(hook), got, float64(got)*100/262144)
	return hook
}
