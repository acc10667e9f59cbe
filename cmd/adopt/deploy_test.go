package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// deployChart is the Helm chart that runs adopt reconcile in a cluster;
// deployManifests its plain manifests, rendered from it with
// deploySampleValues (go test -run TestDeployChart -update rewrites them).
const (
	deployChart     = "../../deploy/helm/adopt"
	deployManifests = "../../deploy/manifests/adopt-reconcile.yaml"
)

var deploySampleValues = []string{"--set", "git.repo=https://git.example.invalid/org/gitops.git", "--set", "git.provider=gitea"}

// renderDeploy renders the chart as release adopt in namespace ns, with
// the sample values and extra --set flags, with the real helm CLI.
func renderDeploy(ctx context.Context, t *testing.T, h *testenv.Helm, ns string, extra ...string) string {
	t.Helper()
	args := append([]string{"template", "adopt", deployChart, "--namespace", ns}, deploySampleValues...)
	return helmRun(ctx, t, h, append(args, extra...)...)
}

// TestDeployChart (issue 37): the chart passes helm lint; deploy/manifests
// is exactly its render with the sample values; and the render is accepted
// by the real kube-apiserver's server-side dry run.
func TestDeployChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := testenv.NewHelm(cp, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	helmRun(ctx, t, h, append([]string{"lint", deployChart, "--strict"}, deploySampleValues...)...)
	if out, err := h.Run(ctx, "template", "adopt", deployChart); err == nil || !strings.Contains(out, "git.repo is required") {
		t.Errorf("the chart renders without git.repo (%v): %.200s", err, out)
	}
	rendered := renderDeploy(ctx, t, h, "adopt")
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
	dry := renderDeploy(ctx, t, h, ns, "--set", "argocdNamespace="+argoNS, "--set", "sync=true", "--set", "groupPRsBy=team")
	if !strings.Contains(dry, "--group-prs-by=team") {
		t.Errorf("the render with groupPRsBy=team does not pass --group-prs-by=team")
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
