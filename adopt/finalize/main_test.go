package finalize_test

import (
	"os"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's real control plane (kube-apiserver, etcd, kubectl).
var cp *testenv.ControlPlane

// TestMain runs the journal-lock child process when asked to (see
// lockChildEnv), else every test against the real control plane.
func TestMain(m *testing.M) {
	if mode := os.Getenv(lockChildEnv); mode != "" {
		os.Exit(lockChild(mode, os.Getenv(lockChildPath)))
	}
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}
