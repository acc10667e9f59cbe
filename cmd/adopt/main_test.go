package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's real control plane, started once in TestMain.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

// adopt runs the CLI in-process against the test control plane and returns
// stdout, stderr and the exit code.
func adopt(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"--kubeconfig", cp.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}
