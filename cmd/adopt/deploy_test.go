package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// deployChart is the Helm chart that runs adopt reconcile in a cluster;
// deployManifests its plain manifests, rendered from it with
// deploySampleValues and deployManifestValues (go test -run
// TestDeployChart -update rewrites them).
const (
	deployChart     = "../../deploy/helm/adopt"
	deployManifests = "../../deploy/manifests/adopt-reconcile.yaml"
)

var (
	deploySampleValues = []string{"--set", "git.repo=https://git.example.invalid/org/gitops.git", "--set", "git.provider=gitea", "--set", "clusterName=prod-eu"}
	// deployManifestValues scope the sample install to two namespaces.
	deployManifestValues = []string{"--set-json", `namespaces=["team-a","team-b"]`}
)

// renderDeploy renders the chart as release release in namespace ns, with
// the sample values and extra --set flags, with the real helm CLI.
func renderDeploy(ctx context.Context, t *testing.T, h *testenv.Helm, release, ns string, extra ...string) string {
	t.Helper()
	args := append([]string{"template", release, deployChart, "--namespace", ns}, deploySampleValues...)
	return helmRun(ctx, t, h, append(args, extra...)...)
}

// TestDeployChart (issue 37): the chart passes helm lint; values that
// would give its token more than a run needs are refused, each saying
// what to do instead (issue 43); deploy/manifests is exactly its render
// with the sample values; and the render is accepted by the real
// kube-apiserver's server-side dry run.
func TestDeployChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := testenv.NewHelm(cp, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	helmRun(ctx, t, h, append(append([]string{"lint", deployChart, "--strict"}, deploySampleValues...), deployManifestValues...)...)
	if out, err := h.Run(ctx, "template", "adopt", deployChart); err == nil || !strings.Contains(out, "git.repo is required") {
		t.Errorf("the chart renders without git.repo (%v): %.200s", err, out)
	}
	// Values that would give the token more than a run needs are refused,
	// each with what to do instead.
	for _, r := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "sync=true"}, "set argocd.server (host:port) and argocd.tokenSecret.name"},
		{[]string{"--set", "sync=true", "--set", "argocd.server=argocd-server.argocd:443"}, "set argocd.server (host:port) and argocd.tokenSecret.name"},
		{[]string{"--set", "stateNamespace=argocd"}, `the state namespace "argocd" is the Argo CD namespace`},
		{[]string{"--set", "clusterName="}, "clusterName is required"},
		{[]string{"--namespace", "argocd"}, `the state namespace "argocd" is the Argo CD namespace`},
		{[]string{"--set-json", "namespaces=[]"}, "a cluster-wide install (namespaces empty) grants finalize's patches only where finalize.namespaces lists"},
		{[]string{"--set-json", `finalize.namespaces=["argocd"]`}, `finalize.namespaces names the Argo CD namespace "argocd"`},
		{[]string{"--set-json", `finalize.types=[{"apiGroup":"argoproj.io","resources":["applications"]}]`}, "finalize.types names argoproj.io"},
		{[]string{"--set-json", `finalize.types=[{"apiGroup":"","resources":["*"]}]`}, "name each adopted type"},
		{[]string{"--set", "secrets.read=true", "--set", "secrets.sealedSecretsController=sealed-secrets-controller"}, "secrets.read needs secrets.sealedSecretsController as namespace/name"},
		{[]string{"--set", "secrets.read=true", "--set-json", `config={"secrets":{"sealedSecretsController":"ops/other"}}`}, "differs from secrets.sealedSecretsController"},
		{[]string{"--set", "secrets.externalSecrets=true"}, "secrets.externalSecrets needs secrets.read"},
	} {
		args := append(append(append([]string{"template", "adopt", deployChart, "--namespace", "adopt"}, deploySampleValues...), deployManifestValues...), r.set...)
		if out, err := h.Run(ctx, args...); err == nil || !strings.Contains(out, r.want) {
			t.Errorf("helm template %s: %v; want it refused with %q: %.300s", strings.Join(r.set, " "), err, r.want, out)
		}
	}
	// Metrics: pushed to a Pushgateway, and written to a file on a
	// writable volume of its own (the root filesystem is read-only); a
	// hung run is stopped and a late one skipped.
	withMetrics := renderDeploy(ctx, t, h, "adopt", "adopt", append(append([]string(nil), deployManifestValues...),
		"--set", "metrics.file=/var/run/adopt-metrics/adopt.prom", "--set", "metrics.pushgateway=http://pushgateway.monitoring:9091")...)
	for _, want := range []string{"- --metrics-file=/var/run/adopt-metrics/adopt.prom", "- --metrics-pushgateway=http://pushgateway.monitoring:9091",
		"mountPath: /var/run/adopt-metrics", "activeDeadlineSeconds: 1500", "startingDeadlineSeconds: 300", "- --cluster-name=prod-eu"} {
		if !strings.Contains(withMetrics, want) {
			t.Errorf("the render with metrics lacks %q", want)
		}
	}
	// finalize.clusterWide is the one way to patch in every namespace.
	wide := renderedObjects(renderDeploy(ctx, t, h, "adopt", "adopt", "--set-json", "namespaces=[]", "--set", "finalize.clusterWide=true"))
	if !slices.Contains(wide, "ClusterRoleBinding/adopt-reconcile-finalize") {
		t.Errorf("finalize.clusterWide=true renders %v; want a ClusterRoleBinding adopt-reconcile-finalize", wide)
	}
	if scoped := renderedObjects(renderDeploy(ctx, t, h, "adopt", "adopt", deployManifestValues...)); slices.ContainsFunc(scoped, func(o string) bool {
		return strings.HasPrefix(o, "ClusterRoleBinding/") && o != "ClusterRoleBinding/adopt-reconcile-applications"
	}) {
		t.Errorf("a scoped install renders %v; want no ClusterRoleBinding but the Applications' reads", scoped)
	}
	rendered := renderDeploy(ctx, t, h, "adopt", "adopt", deployManifestValues...)
	if *updateGolden {
		if err := os.WriteFile(deployManifests, []byte(rendered), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(deployManifests)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != rendered {
		t.Errorf("%s is not the chart's render: run go test ./cmd/adopt -run TestDeployChart -update", filepath.Base(deployManifests))
	}
	ns := cp.Namespace(t)
	argoNS := cp.Namespace(t)
	team := cp.Namespace(t)
	dry := renderDeploy(ctx, t, h, ns, ns, "--set", "argocdNamespace="+argoNS, "--set-json", `namespaces=["`+team+`"]`, "--set", "sync=true",
		"--set", "argocd.server=argocd-server."+argoNS+":443", "--set", "argocd.tokenSecret.name=adopt-argocd", "--set", "groupPRsBy=team")
	for _, want := range []string{"--group-prs-by=team", "--sync", "--argocd-server=argocd-server." + argoNS + ":443", "name: ARGOCD_AUTH_TOKEN", "--lock-namespace=" + ns} {
		if !strings.Contains(dry, want) {
			t.Errorf("the render with groupPRsBy=team and sync=true does not pass %s", want)
		}
	}
	if out, err := cp.Kubectl(ctx, []byte(dry), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --dry-run=server of the chart's render: %v: %s", err, out)
	}
	var kinds []string
	for _, doc := range strings.Split(dry, "\n---") {
		var m struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &m); err == nil && m.Kind != "" {
			kinds = append(kinds, m.Kind)
		}
	}
	if got := strings.Join(kinds, ","); !bytes.Contains([]byte(got), []byte("CronJob")) || !strings.Contains(got, "ServiceAccount") || !strings.Contains(got, "Role") {
		t.Errorf("the render holds %s; want a CronJob, a ServiceAccount and its roles", got)
	}
}

// renderedObjects are the render's objects, as Kind/name.
func renderedObjects(rendered string) []string {
	var out []string
	for _, doc := range strings.Split(rendered, "\n---") {
		var m struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err == nil && m.Kind != "" {
			out = append(out, m.Kind+"/"+m.Metadata.Name)
		}
	}
	return out
}
