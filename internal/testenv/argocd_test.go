package testenv

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

// TestFirstSyncByVersion measures what each tested Argo CD does at the
// first sync (ServerSideApply=true) of a hand-applied object, on real
// controllers, for docs/argocd-versions.md. Each case is a ConfigMap of its
// own namespace with its own Application:
//
//   - big: applied client-side at 98.1% of the annotation cap, its Git copy
//     6 KB larger. On 3.1.0-3.3.1 the client-side-apply migration writes
//     last-applied as the old manager, passes the cap and fails the sync,
//     leaving the object as it was (issue 10); elsewhere it syncs.
//   - big-fixed: the same with ClientSideApplyMigration=false: syncs on all.
//   - csa: a small one applied client-side (manager
//     kubectl-client-side-apply, an Update): last-applied is gone after the
//     first sync.
//   - runbook: applied client-side, then `kubectl apply --server-side` (the
//     runbook's migration; kubectl-last-applied owns the annotation, an
//     Apply): last-applied stays, for finalize to remove.
//
// It also counts the dry-run requests the API server serves for
// ConfigMaps while the synced csa Application is refreshed: server-side
// diff does one per resource, client-side diff none. The repository needs
// basic auth, so the repo-server's git askpass runs; the csa object carries
// the version's default tracking mark (the instance label on v2, the
// tracking id on v3) and argocd-controller as its only manager; and
// argocd-server's API, with a token from logging in as admin, reads the
// same Application and reports the version.
func TestFirstSyncByVersion(t *testing.T) {
	for _, tc := range []struct {
		version        string
		trap           bool // the big one fails its first sync
		serverSideDiff bool // a refresh does dry-run applies
	}{
		{ArgoCDOldest, false, false},
		{ArgoCDTrap, true, false},
		{ArgoCDCurrent, false, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel() // each version on its own shared plane: the waits overlap
			firstSync(t, tc.version, tc.trap, tc.serverSideDiff)
		})
	}
}

func firstSync(t *testing.T, version string, trap, serverSideDiff bool) {
	cp, a := sharedArgoCD(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	g, err := StartGitServer("argocd", "git-"+randomToken()[:8])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	const target = 257270 // the incident's annotations, 98.1% of 262144
	extra := usageHook(6 << 10)
	files := map[string]string{}
	namespaces := map[string]string{}
	for _, name := range []string{"big", "big-fixed"} {
		ns := cp.Namespace(t)
		namespaces[name] = ns
		hook := hookForAnnotationBytes(t, cp, ns, target)
		files["apps/"+name+"/configmap.yaml"] = configMapYAML(ns, map[string]string{"usage_hook.py": hook, "added-in-git": extra})
	}
	for _, name := range []string{"csa", "runbook"} {
		ns := cp.Namespace(t)
		namespaces[name] = ns
		modes := []string{"--server-side=false"}
		if name == "runbook" {
			modes = append(modes, "--server-side")
		}
		for _, m := range modes {
			if out, err := cp.Kubectl(ctx, []byte(configMapYAML(ns, map[string]string{"usage_hook.py": "v1"})), "apply", m, "-f", "-"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}
		files["apps/"+name+"/configmap.yaml"] = configMapYAML(ns, map[string]string{"usage_hook.py": "v1", "added-in-git": "yes"})
	}
	repoURL, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddRepository(ctx, "first-sync", repoURL, g.User, g.Password); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]string{
		"big":       "[ServerSideApply=true]",
		"big-fixed": "[ServerSideApply=true, ClientSideApplyMigration=false]",
		"csa":       "[ServerSideApply=true]",
		"runbook":   "[ServerSideApply=true]",
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
	get := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cp.Clientset().CoreV1().ConfigMaps(namespaces[name]).Get(ctx, "usage-hook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

	st, err := a.WaitApplication(waitCtx, "big", func(s AppStatus) bool { return s.Failed() || SyncedHealthy(s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s big: %s", version, st)
	if st.Failed() != trap {
		t.Fatalf("%s: the first sync of the 98.1%% object without ClientSideApplyMigration=false failed: %v, want %v (%s)", version, st.Failed(), trap, st)
	}
	if trap {
		msg := strings.Join(st.Resources, "; ")
		for _, want := range []string{"client-side apply migration", "Too long: may not be more than 262144 bytes"} {
			if !strings.Contains(msg, want) {
				t.Errorf("sync failure %q does not contain %q", msg, want)
			}
		}
		if _, ok := get("big").Data["added-in-git"]; ok {
			t.Errorf("the failed sync changed the object: key added-in-git is present")
		}
	}
	for _, name := range []string{"big-fixed", "csa", "runbook"} {
		if st, err := a.WaitApplication(waitCtx, name, SyncedHealthy); err != nil {
			t.Fatalf("%s %s: %v", version, name, err)
		} else {
			t.Logf("%s %s: %s", version, name, st)
		}
		cm := get(name)
		if _, ok := cm.Data["added-in-git"]; !ok {
			t.Errorf("%s %s: the Git copy was not applied", version, name)
		}
		_, kept := cm.Annotations[lastApplied]
		t.Logf("%s %s after the first sync: last-applied kept %v, managers %v", version, name, kept, managers(cm.ManagedFields))
		if want := name == "runbook"; kept != want {
			t.Errorf("%s %s: last-applied kept %v after the first sync, want %v (managers %v)", version, name, kept, want, managers(cm.ManagedFields))
		}
	}
	csa := get("csa")
	if got := managers(csa.ManagedFields); strings.Join(got, ",") != "argocd-controller Apply" {
		t.Errorf("%s csa: managers after sync %v, want [argocd-controller Apply]", version, got)
	}
	if strings.HasPrefix(version, "v2.") {
		if got := csa.Labels["app.kubernetes.io/instance"]; got != "csa" {
			t.Errorf("%s csa: instance label %q, want csa (label tracking, v2's default)", version, got)
		}
	} else if got, want := csa.Annotations["argocd.argoproj.io/tracking-id"], "csa:/ConfigMap:"+namespaces["csa"]+"/usage-hook"; got != want {
		t.Errorf("%s csa: tracking id %q, want %q (annotation tracking, v3's default)", version, got, want)
	}
	token, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if apiSync, err := apiSyncStatus(ctx, a.Server, token, "csa"); err != nil || apiSync != "Synced" {
		t.Errorf("%s: argocd-server's API says csa is %q (%v), want Synced", version, apiSync, err)
	}
	if v, err := a.ServerVersion(ctx); err != nil || !strings.HasPrefix(v, version) {
		t.Errorf("argocd-server reports version %q (%v), want %s", v, err, version)
	}

	// Server-side diff: dry-run requests while the synced csa Application
	// is refreshed (the hard-refresh annotation is removed when it is done).
	before, err := dryRunRequests(ctx, cp, "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "applications.argoproj.io", "csa", "argocd.argoproj.io/refresh=hard", "--overwrite"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := a.WaitApplication(waitCtx, "csa", func(s AppStatus) bool { return s.Refresh == "" }); err != nil {
		t.Fatal(err)
	}
	after, err := dryRunRequests(ctx, cp, "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: a hard refresh of csa made %d dry-run requests for ConfigMaps", version, after-before)
	if got := after > before; got != serverSideDiff {
		t.Errorf("%s: a refresh made %d dry-run requests; want server-side diff %v", version, after-before, serverSideDiff)
	}
}

// dryRunRequests is the API server's count of dry-run requests for
// resource so far (apiserver_request_total with dry_run="All").
func dryRunRequests(ctx context.Context, cp *ControlPlane, resource string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.Server+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+cp.AdminToken)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `dry_run="All"`) || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			n += int(v)
		}
	}
	return n, nil
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
