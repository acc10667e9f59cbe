package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// parallelTests is how many parallel tests run at once by default: most of
// a long test's time is waiting on a real part (Argo CD's sync, a control
// plane's start), so more than the 2 cores' worth overlap.
const parallelTests = 4

// cp is the package's real control plane, started once in TestMain.
var cp *testenv.ControlPlane

// Long tests may call t.Parallel, so that one's waits on Argo CD, Gitea or
// a control plane's start overlap another's work (go test runs them after
// every sequential test, parallelTests at once unless -parallel says
// otherwise). One may when it sets no process environment (t.Setenv panics
// in a parallel test, and adopt runs in this process) and no process-wide
// state, and takes its namespaces from ControlPlane.Namespace and its
// cluster-scoped names from the test's name. A shared Argo CD plane is one
// test's at a time (argoCDPlane, planesPerVersion of a version at most).
//
// The shared plane serves every CRD its tests need from the start
// (sharedCRDsOn): a plan records whether Argo CD is installed and lists
// every served type, so a CRD one test installed half way through
// another's runs would change that test's plans (and have reconcile
// rewrite a pull request's record between two runs).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelTests))
	}
	installAPIWarnings(os.Stderr) // as main does
	testenv.Main(m, func(c *testenv.ControlPlane) {
		cp = c
		if err := sharedCRDsOn(c); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
			c.Stop()
			os.Exit(1)
		}
	}, stopArgoPlanes, stopSharedGitea, failOnStrayJournals)
}

// failOnStrayJournals fails the run when a test left a finalize journal
// (*.journal) in the package directory: every test that runs finalize or
// reconcile gives it a temporary directory (--journal-dir, a plan file in
// t.TempDir()), so none is ever committed again.
func failOnStrayJournals() {
	stray, _ := filepath.Glob("*.journal")
	if len(stray) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "FAIL: tests left %d finalize journal(s) in cmd/adopt (%s): give the run a temporary --journal-dir (t.TempDir())\n", len(stray), strings.Join(stray, ", "))
	cp.Stop()
	os.Exit(1)
}

// adopt runs the CLI in-process against the test control plane and returns
// stdout, stderr and the exit code.
func adopt(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runAdopt(t, "adopt", append([]string{"--kubeconfig", cp.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// writeTree writes files (path: content) under dir, making directories.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitRepo starts a real git smart-HTTP server (anonymous) holding one repo
// of files, stopped when the test ends, and returns it with the repo's URL.
func gitRepo(t *testing.T, name string, files map[string]string) (*testenv.GitServer, string) {
	t.Helper()
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	url, err := g.CreateRepo(name, files)
	if err != nil {
		t.Fatal(err)
	}
	return g, url
}

// startControlPlane starts one more real kube-apiserver and etcd for t,
// stopped when t ends.
func startControlPlane(ctx context.Context, t testing.TB) *testenv.ControlPlane {
	t.Helper()
	c, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatalf("a control plane did not start: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// servedChart is a helm CLI for control plane c and a chart repository on
// loopback serving testdata/charts/<chart>, closed when the test ends.
func servedChart(ctx context.Context, t *testing.T, c *testenv.ControlPlane, chart string) (*testenv.Helm, *testenv.ChartRepo) {
	t.Helper()
	h, err := testenv.NewHelm(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(filepath.Join("testdata/charts", chart))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := testenv.ServeChartRepo(ctx, h, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(repo.Close)
	return h, repo
}

// helmRun runs the real helm CLI and fails the test when it fails.
func helmRun(ctx context.Context, t *testing.T, h *testenv.Helm, args ...string) string {
	t.Helper()
	out, err := h.Run(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gitIn runs git in dir (testenv.Git) and returns its output, failing t
// on an error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := testenv.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
