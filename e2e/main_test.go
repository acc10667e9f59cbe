// Package e2e runs the whole story of adopt against real parts, once per
// Argo CD version: the incident's estate seeded with the real kubectl, the
// adopt binary (plan, apply, finalize), a real git smart-HTTP server, a real
// Argo CD, and a real kube-scheduler that cannot place a Deployment. Each
// version gets its own control plane and Argo CD; they run in parallel. See
// docs/e2e.md.
package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/schemas"
)

// adoptBin is the adopt binary built once by TestMain. It is set before any
// test runs and never changed.
var adoptBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "adopt-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	start := time.Now()
	adoptBin = filepath.Join(dir, "adopt")
	build := exec.Command("go", "build", "-o", adoptBin, "./cmd/adopt")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: build the adopt binary: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "e2e: adopt built in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the adopt binary.
type result struct {
	out, errOut string
	code        int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.out, r.errOut)
}

// runAdopt runs the adopt binary with the control plane's kubeconfig and
// extra environment variables (NAME=value). After a run that exits 0 or 3
// (findings) it validates every plan the run wrote against schemas/.
func runAdopt(t *testing.T, kubeconfig string, env []string, args ...string) result {
	t.Helper()
	if slices.Contains(args, "finalize") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--settle") }) {
		// A short settle window; TestAdoptedStaysSynced gives its own.
		args = append(slices.Clip(args), "--settle=1s")
	}
	cmd := exec.Command(adoptBin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run adopt %s: %v", strings.Join(args, " "), err)
	}
	if code == 0 || code == 3 {
		for _, err := range schemas.Written(args, out.Bytes()) {
			t.Errorf("adopt %s: %v", strings.Join(args, " "), err)
		}
	}
	return result{out: out.String(), errOut: errb.String(), code: code}
}

// git runs the git CLI in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
