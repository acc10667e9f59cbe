package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanKustomizeBasesAndInputs (issue 34): adopt/gitindex/testdata/inputs
// in a Git checkout, its base applied by hand with kubectl's own kustomize
// (kubectl apply -k shop/base -n <dev>): plan, then apply --dry-run, write
// a kustomize Application for the base, which overlays build on, at its
// path, and export nothing. How each of the checkout's kustomizations is
// matched and previewed is proven on the planner
// (adopt/planner's TestKustomizeBasesAndInputs).
func TestPlanKustomizeBasesAndInputs(t *testing.T) {
	ctx := context.Background()
	dev := cp.Namespace(t)
	repo := filepath.Join(t.TempDir(), "gitops")
	if err := testenv.InitRepo(repo, testdataRepo(t, "inputs", nil)); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, nil, "apply", "-k", filepath.Join(repo, "shop/base"), "-n", dev); err != nil {
		t.Fatalf("kubectl apply -k shop/base: %v\n%s", err, out)
	}
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", dev, "--repo", repo, "-q", "--out", planFile); code != 0 {
		t.Fatalf("plan: %s", errOut)
	}
	out, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", repo, "--author", "T <t@example.invalid>", "-q", "--dry-run")
	if code != 0 || !strings.Contains(out, "+++ b/argocd/apps/") || !strings.Contains(out, `path: "shop/base"`) || strings.Contains(out, "adopted/") || strings.Contains(out, "directory:") {
		t.Fatalf("apply --dry-run (%d): %s %s", code, out, errOut)
	}
}
