package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestPlanForAnotherClusterIsRefused: apply and finalize refuse a plan made
// for another cluster in one line, before reading or writing anything (apply
// would otherwise export this cluster's objects under another cluster's plan).
func TestPlanForAnotherClusterIsRefused(t *testing.T) {
	ns := cp.Namespace(t)
	planFile := writePlan(t, cmObject(ns))
	p := readPlan(t, planFile)
	p.Cluster.Server = "https://10.9.8.7:6443"
	p.Cluster.Context = "prod"
	writePlanFile(t, planFile, p)
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("other-cluster", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"apply":    {"apply", "--plan", planFile, "--repo", url, "-q"},
		"finalize": {"finalize", "--plan", planFile, "-q"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := adopt(t, args...)
			if code != ExitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
				!strings.Contains(errOut, "was made for cluster https://10.9.8.7:6443") || !strings.Contains(errOut, "--context") {
				t.Fatalf("exit %d, want %d with one line naming both clusters:\n%s%s", code, ExitUsage, out, errOut)
			}
		})
	}
	if got := commitsOn(t, filepath.Join(g.Root, "other-cluster.git"), "adopt/"+apply.AdoptionID(p)); len(got) != 0 {
		t.Fatal("apply wrote to the repo with another cluster's plan")
	}
}
