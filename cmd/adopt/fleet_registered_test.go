package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestFleetArgoCDClusters: plan --argocd-clusters takes the fleet from the
// management cluster's cluster Secrets and reaches each workload cluster
// with its Secret's own credentials. The kubeconfig has no context for
// either workload cluster, so only the Secrets' ServiceAccount tokens (and
// CA) can work. Both real workload clusters are planned (one
// ApplicationSet over them); a Secret with a bad token, one with exec
// plugin auth and Argo CD's in-cluster entry are each "not scanned" with
// the reason, the others planned; a Secret the selector does not select is
// left out, and a bare --argocd-clusters takes it too. An unmatched
// selector, a selector after a space and a missing --argocd-context are
// refused. apply --plan DIR reconnects through the Secrets, and refuses
// without --argocd-context, when a registration names another server and
// when it is gone. No token, CA or exec setting of a Secret reaches the
// output, the plan files, the index or Git.
func TestFleetArgoCDClusters(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mgmt, w2 := startControlPlane(ctx, t), startControlPlane(ctx, t)
	installApplicationCRDOn(t, mgmt)
	canaries := []string{"bad-CANARY-token", "exec-CANARY-env", "other-CANARY-token"}
	for name, w := range map[string]*testenv.ControlPlane{"workload-1": cp, "workload-2": w2} {
		tok, err := testenv.RegisterClusterOn(ctx, mgmt, argoNS, name, w, map[string]string{"fleet": "sprint"})
		if err != nil {
			t.Fatal(err)
		}
		ca, err := os.ReadFile(filepath.Join(w.Dir, "certs", "apiserver.crt"))
		if err != nil {
			t.Fatal(err)
		}
		pem := strings.Split(strings.TrimSpace(string(ca)), "\n")
		canaries = append(canaries, tok, base64.StdEncoding.EncodeToString(ca), pem[len(pem)/2])
	}
	secret := func(name, server, fleetLabel, config string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: argoNS,
			Labels: map[string]string{argoapp.SecretTypeLabel: argoapp.SecretTypeCluster, "fleet": fleetLabel}},
			StringData: map[string]string{"name": name, "server": server, "config": config}}
	}
	for _, s := range []*corev1.Secret{
		// A real API server that refuses the token.
		secret("workload-3", mgmt.Server, "sprint", `{"bearerToken":"bad-CANARY-token","tlsClientConfig":{"insecure":true}}`),
		secret("workload-exec", "https://127.0.0.1:9", "sprint", `{"execProviderConfig":{"command":"/bin/false","apiVersion":"client.authentication.k8s.io/v1beta1","env":{"S":"exec-CANARY-env"}},"tlsClientConfig":{"insecure":true}}`),
		secret("in-cluster", argoapp.InClusterServer, "sprint", `{"tlsClientConfig":{"insecure":false}}`),
		secret("other", "https://127.0.0.1:9", "other", `{"bearerToken":"other-CANARY-token","tlsClientConfig":{"insecure":true}}`),
	} {
		if _, err := mgmt.Clientset().CoreV1().Secrets(argoNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := handApplyHook(ctx, t, w2)

	kubeconfig := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"mgmt": mgmt}) // no workload context
	var leak strings.Builder
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", kubeconfig, "--request-timeout", "5s"}, args...), strings.NewReader(""), &out, &errb)
		leak.WriteString(out.String() + errb.String())
		return out.String(), errb.String(), code
	}
	plan := func(dir string, which ...string) (map[string]fleet.ClusterEntry, *fleet.Index) {
		t.Helper()
		out, errOut, code := cli(append([]string{"plan", "--argocd-context", "mgmt", "--argocd-version", "v3.2.6", "-n", ns, "--out-dir", dir, "-o", "json"}, which...)...)
		if code != 0 {
			t.Fatalf("plan %v exited %d: %s %s", which, code, out, errOut)
		}
		var ix fleet.Index
		if err := json.Unmarshal([]byte(out), &ix); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		by := map[string]fleet.ClusterEntry{}
		for _, c := range ix.Clusters {
			by[c.Context] = c
		}
		return by, &ix
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	by, ix := plan(dir, "--argocd-clusters=fleet=sprint")
	for name, w := range map[string]*testenv.ControlPlane{"workload-1": cp, "workload-2": w2} {
		if e := by[name]; e.Via != fleet.ViaArgoCDCluster || e.PlanID == "" || e.Destination != name || !argoapp.SameServer(e.Server, w.Server) || e.NotScanned != "" {
			t.Errorf("%s: %+v", name, e)
		}
	}
	for name, want := range map[string]string{
		"workload-3":    "rejected the credentials of cluster Secret " + argoNS + "/cluster-workload-3 (401)",
		"workload-exec": "exec plugin auth (execProviderConfig), which adopt does not run",
		"in-cluster":    "Argo CD's in-cluster entry (" + argoapp.InClusterServer + ")",
	} {
		if e := by[name]; !strings.Contains(e.NotScanned, want) || e.Plan != "" || e.Via != fleet.ViaArgoCDCluster || e.Server == "" {
			t.Errorf("%s: want not scanned with %q: %+v", name, want, e)
		}
	}
	if _, ok := by["other"]; ok || len(ix.Clusters) != 5 {
		t.Errorf("the selector fleet=sprint should select 5 clusters, not other: %+v", ix.Clusters)
	}
	if len(ix.ApplicationSets) != 1 || strings.Join(ix.ApplicationSets[0].Clusters, ",") != "workload-1,workload-2" {
		t.Errorf("ApplicationSets %+v (separate %v)", ix.ApplicationSets, ix.Separate)
	}
	if p := readPlan(t, filepath.Join(dir, by["workload-2"].Plan)); p.Object("ConfigMap "+ns+"/usage-hook") == nil || p.Cluster.Context != "workload-2" || p.Settings.Destination != "name:workload-2" {
		t.Errorf("workload-2's plan: context %q, destination %q", p.Cluster.Context, p.Settings.Destination)
	}

	// Bare: every registration, "other" too (unreachable: not scanned);
	// the same plan for the clusters both runs planned.
	all := filepath.Join(t.TempDir(), "fleet")
	byAll, _ := plan(all, "--argocd-clusters")
	if e, ok := byAll["other"]; !ok || e.NotScanned == "" {
		t.Errorf("bare --argocd-clusters: other %+v", e)
	}
	for _, name := range []string{"workload-1", "workload-2"} {
		a, _ := os.ReadFile(filepath.Join(dir, by[name].Plan))
		b, err := os.ReadFile(filepath.Join(all, byAll[name].Plan))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s's plan differs between the runs (%v)", name, err)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--argocd-context", "mgmt", "--argocd-clusters=fleet=nope"}, `no registered cluster's Secret matches the label selector "fleet=nope" (registered: in-cluster fleet=sprint; other fleet=other; workload-1 fleet=sprint`},
		{[]string{"--argocd-context", "mgmt", "--argocd-clusters", "fleet=sprint"}, "--argocd-clusters takes its selector after '=': --argocd-clusters=fleet=sprint"},
		{[]string{"--argocd-clusters=fleet=sprint"}, "--argocd-clusters reads the clusters registered with Argo CD on the management cluster: give --argocd-context"},
		{[]string{"--argocd-context", "mgmt", "--argocd-clusters", "--contexts", "a,b"}, "cannot be used together"},
	} {
		if out, errOut, code := cli(append([]string{"plan", "--out-dir", t.TempDir()}, c.args...)...); code != ExitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("plan %v: exit %d, want %d and %q: %s %s", c.args, code, ExitUsage, c.want, out, errOut)
		}
	}

	// apply reconnects through the Secrets: the exports come from both
	// clusters, which the kubeconfig cannot reach.
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	applyArgs := []string{"apply", "--plan", dir, "--repo", url, "--author", "T <t@example.invalid>"}
	out, errOut, code := cli(append(applyArgs, "--argocd-context", "mgmt")...)
	if code != 0 || !strings.Contains(out, "ApplicationSet "+ix.ApplicationSets[0].Name) {
		t.Fatalf("apply --plan exited %d: %s %s", code, out, errOut)
	}
	if _, errOut, code := cli(append(applyArgs, "--dry-run")...); code != ExitUsage || !strings.Contains(errOut, "was planned through its Argo CD registration (via argocd-cluster): give --argocd-context") {
		t.Errorf("apply without --argocd-context: exit %d: %s", code, errOut)
	}
	if _, errOut, code := cli("finalize", "--plan", dir); code != ExitUsage || !strings.Contains(errOut, "give --argocd-context") {
		t.Errorf("finalize without --argocd-context: exit %d: %s", code, errOut)
	}
	secrets := mgmt.Clientset().CoreV1().Secrets(argoNS)
	s, err := secrets.Get(ctx, "cluster-workload-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["server"] = []byte(mgmt.Server)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := cli(append(applyArgs, "--argocd-context", "mgmt", "--dry-run")...); code != ExitUsage || !strings.Contains(errOut, "the registration changed since the plan") {
		t.Errorf("apply with a changed registration: exit %d: %s", code, errOut)
	}
	if err := secrets.Delete(ctx, "cluster-workload-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := cli(append(applyArgs, "--argocd-context", "mgmt", "--dry-run")...); code != ExitUsage || !strings.Contains(errOut, "cluster workload-2 is no longer registered with Argo CD") {
		t.Errorf("apply with the registration gone: exit %d: %s", code, errOut)
	}

	for _, d := range []string{dir, all} {
		files, _ := filepath.Glob(filepath.Join(d, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			leak.Write(b)
		}
	}
	leak.WriteString(everything(t, g.BarePath("gitops")))
	scan := &leakScan{texts: map[string]string{"the output, plan files, index and Git": leak.String()}, secrets: map[string]string{}}
	for i, c := range canaries {
		scan.secrets[fmt.Sprintf("canary %d of the cluster Secrets (a token, CA or exec setting)", i)] = c
	}
	scan.check(t)
}
