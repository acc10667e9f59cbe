package reconcile

import (
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's real control plane (kube-apiserver, etcd), started
// once for the tests that need one: the Lease, the namespace labels.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}
