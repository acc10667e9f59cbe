package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestReachWithoutTheHub: a cluster planned by its kubeconfig context is
// reached by it again (no registration), with or without a management
// cluster; one planned through its registration cannot be reached
// without the management cluster, and NeedsHub names the first such
// cluster with a plan (one not scanned needs nothing).
func TestReachWithoutTheHub(t *testing.T) {
	f := &Fleet{Index: &Index{Clusters: []ClusterEntry{
		{Context: "eu-1", Plan: "eu-1.yaml"},
		{Context: "down", Via: ViaArgoCDCluster, NotScanned: "unreachable"},
		{Context: "eu-2", Via: ViaArgoCDCluster, Plan: "eu-2.yaml"},
	}}, Plans: map[string]*plan.Plan{"eu-1": {}, "eu-2": {}}}
	var r Reach
	ctx := context.Background()
	if reg, err := r.Registration(ctx, f, "eu-1"); reg != nil || err != nil {
		t.Errorf("eu-1: %+v, %v: want its context", reg, err)
	}
	var re *ReachError
	if reg, err := r.Registration(ctx, f, "eu-2"); reg != nil || !errors.As(err, &re) || !strings.Contains(err.Error(), "cluster eu-2 was planned through its Argo CD registration") {
		t.Errorf("eu-2 without the hub: %+v, %v: want a ReachError naming it", reg, err)
	}
	if err := f.NeedsHub(); !errors.As(err, &re) || !strings.Contains(err.Error(), "cluster eu-2 ") {
		t.Errorf("NeedsHub: %v, want eu-2's ReachError", err)
	}
	f.Index.Clusters = f.Index.Clusters[:2]
	if err := f.NeedsHub(); err != nil {
		t.Errorf("NeedsHub with no registered cluster planned: %v", err)
	}
}
