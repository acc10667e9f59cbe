package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// hubApp creates an Application on the management cluster with a
// destination and, when given, the status Argo CD's controller writes.
func hubApp(t *testing.T, dyn dynamic.Interface, name string, dest, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": argoNS},
		"spec": map[string]any{"project": "default", "destination": dest,
			"source": map[string]any{"repoURL": "https://git.example.invalid/gitops.git", "path": "x", "targetRevision": "main"}},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	if _, err := dyn.Resource(argoapp.ApplicationGVR).Namespace(argoNS).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestHubAndSpoke: Argo CD on a management cluster (a second real
// kube-apiserver), the workload cluster registered there by a cluster
// Secret with a bearer token. plan reads tracking and Applications from the
// management cluster, names the registered destination, and counts a mark
// only when its Application deploys to this cluster; apply writes that
// destination; finalize waits on the management cluster and patches the
// workload cluster. An unregistered cluster blocks apply. The cluster
// Secret's token is in no output, plan file, journal or commit.
func TestHubAndSpoke(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	const token = "hub-CANARY-bearer-9931"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mgmt := startControlPlane(ctx, t)
	installApplicationCRDOn(t, mgmt)
	mdyn, err := dynamic.NewForConfig(mgmt.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-workload-1", Namespace: argoNS,
			Labels: map[string]string{argoapp.SecretTypeLabel: argoapp.SecretTypeCluster, "env": "test"}},
		StringData: map[string]string{"name": "workload-1", "server": cp.Server,
			"config": `{"bearerToken":"` + token + `","tlsClientConfig":{"insecure":true}}`},
	}
	if _, err := mgmt.Clientset().CoreV1().Secrets(argoNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ns := cp.Namespace(t)
	hubApp(t, mdyn, "here", map[string]any{"name": "workload-1", "namespace": ns}, nil)
	hubApp(t, mdyn, "elsewhere", map[string]any{"server": "https://10.255.0.1:6443", "namespace": ns}, nil)
	cm := func(name, trackingID string) []byte {
		ann := ""
		if trackingID != "" {
			ann = ", annotations: {" + argoapp.AnnotationTrackingID + ": '" + trackingID + "'}"
		}
		return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ann + "}\ndata: {k: v}\n")
	}
	kc(t, cm("tracked", "here:/ConfigMap:"+ns+"/tracked"), "apply", "-n", ns, "-f", "-")
	kc(t, cm("foreign", "elsewhere:/ConfigMap:"+ns+"/foreign"), "apply", "-n", ns, "-f", "-")
	kc(t, cm("hook", ""), "apply", "-n", ns, "-f", "-")

	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.yaml")
	hub := []string{"--argocd-kubeconfig", mgmt.Kubeconfig}
	var outputs []string
	out, errOut, code := adopt(t, append([]string{"plan", "-n", ns, "-q", "--out", planFile, "--argocd-version", "v3.2.6"}, hub...)...)
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("plan exited %d: %s %s", code, out, errOut)
	}
	p := readPlan(t, planFile)
	m := p.ArgoCD.Management
	if m == nil || m.Cluster != "workload-1" || m.Server != mgmt.Server || p.Settings.Destination != "name:workload-1" {
		t.Fatalf("management %+v, destination %q", m, p.Settings.Destination)
	}
	if p.Summary.Tracked != 1 || len(p.Objects) != 2 {
		t.Fatalf("tracked %d, objects %d: %+v", p.Summary.Tracked, len(p.Objects), p.Objects)
	}
	foreign := p.Object("ConfigMap " + ns + "/foreign")
	if foreign == nil || !strings.Contains(foreign.StaleTracking, "names Application argocd/elsewhere, which deploys to server https://10.255.0.1:6443, not this cluster") {
		t.Fatalf("the mark of an Application deploying elsewhere: %+v", foreign)
	}

	// apply writes the registered destination into the management
	// cluster's Argo CD namespace; a different management cluster is refused.
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	out, errOut, code = adopt(t, append([]string{"apply", "--plan", planFile, "--repo", url, "--author", "T <t@example.invalid>", "-q"}, hub...)...)
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("apply exited %d: %s %s", code, out, errOut)
	}
	app := committedApp(t, g.BarePath("gitops"), p, p.Settings.AppsDir+"/"+p.Applications[0].Name+".yaml")
	if app.Spec.Destination.Name != "workload-1" || app.Spec.Destination.Server != "" || app.Namespace != argoNS {
		t.Fatalf("committed destination %+v in namespace %s", app.Spec.Destination, app.Namespace)
	}
	_, errOut, code = adopt(t, "apply", "--plan", planFile, "--repo", url, "-q", "--dry-run", "--argocd-kubeconfig", cp.Kubeconfig)
	if code != ExitUsage || !strings.Contains(errOut, "was made with Argo CD on "+mgmt.Server) {
		t.Errorf("apply with another management cluster: exit %d, %s", code, errOut)
	}

	// finalize: waits on the management cluster, patches the workload.
	appName := p.Applications[0].Name
	hook := p.Object("ConfigMap " + ns + "/hook")
	hubApp(t, mdyn, appName, map[string]any{"name": "workload-1", "namespace": ns}, syncedStatus("Healthy"))
	for _, o := range p.Objects {
		argoApply(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": o.Name, "namespace": ns}, "data": map[string]any{"k": "v"}}, appName+":/ConfigMap:"+ns+"/"+o.Name)
	}
	_, errOut, code = adopt(t, "finalize", "--plan", planFile, "-q")
	if code != ExitUsage || !strings.Contains(errOut, "pass --argocd-context") {
		t.Errorf("finalize without the management cluster: exit %d, %s", code, errOut)
	}
	out, errOut, code = adopt(t, append([]string{"finalize", "--plan", planFile, "--poll-interval", "100ms"}, hub...)...)
	outputs = append(outputs, out, errOut)
	if code != 0 || !strings.Contains(out, "finalized") {
		t.Fatalf("finalize exited %d: %s %s", code, out, errOut)
	}
	live, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, hook.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := live.Annotations[budget.LastAppliedKey]; ok {
		t.Errorf("the workload object kept its last-applied annotation")
	}

	// Not registered: the plan says so (critical), and apply refuses.
	if err := mgmt.Clientset().CoreV1().Secrets(argoNS).Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	unreg := filepath.Join(dir, "unregistered.yaml")
	out, errOut, code = adopt(t, append([]string{"plan", "-n", ns, "-q", "--out", unreg, "--argocd-version", "v3.2.6"}, hub...)...)
	outputs = append(outputs, out, errOut)
	pu := readPlan(t, unreg)
	if code != 0 || pu.ArgoCD.Management == nil || pu.ArgoCD.Management.Cluster != "" || !planFinding(pu, plan.CodeNotRegistered) {
		t.Fatalf("unregistered plan: exit %d, %+v, findings %+v", code, pu.ArgoCD.Management, pu.Findings)
	}
	_, errOut, code = adopt(t, "apply", "--plan", unreg, "--repo", url, "-q", "--dry-run")
	if code != ExitUsage || !strings.Contains(errOut, "is not registered with the Argo CD on") {
		t.Errorf("apply of an unregistered cluster's plan: exit %d, %s", code, errOut)
	}

	for _, f := range []string{planFile, unreg, planFile + ".journal"} {
		b, _ := os.ReadFile(f)
		outputs = append(outputs, string(b))
	}
	outputs = append(outputs, everything(t, g.BarePath("gitops")))
	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{"the cluster Secret's token": token}}
	for i, o := range outputs {
		scan.add(fmt.Sprintf("output %d", i), o)
	}
	scan.check(t)
}

func planFinding(p *plan.Plan, code string) bool {
	for _, f := range p.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}
