package planner_test

import (
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's real control plane (kube-apiserver, etcd,
// kubectl), started once: the pipeline's tests plan against it.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}
