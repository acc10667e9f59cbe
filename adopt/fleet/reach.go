package fleet

import (
	"context"
	"fmt"

	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/argoapp"
)

// Reach finds again how plan reached each cluster of a fleet plan: by its
// kubeconfig context, or (via argocd-cluster) through the management
// cluster's cluster Secret, listed once per Argo CD namespace. Apply,
// finalize and status reconnect through it.
type Reach struct {
	// Hub is the management cluster (nil: none was named).
	Hub  *kubeconn.Cluster
	regs map[string][]argoapp.Registration
}

// ReachError is a cluster that cannot be reached the way the index
// records with what was given: no management cluster for a registered
// cluster, or a registration that is gone or names another server now.
type ReachError struct{ Err error }

func (e *ReachError) Error() string { return e.Err.Error() }
func (e *ReachError) Unwrap() error { return e.Err }

// Registration is the registration f's cluster name is reached through,
// or nil when it is reached by its kubeconfig context. It makes no
// connection to the cluster.
func (r *Reach) Registration(ctx context.Context, f *Fleet, name string) (*argoapp.Registration, error) {
	e := f.Index.Entry(name)
	if e.Via != ViaArgoCDCluster {
		return nil, nil
	}
	if r.Hub == nil {
		return nil, &ReachError{needsHub(name)}
	}
	ns := f.Plans[name].ArgoCDNamespace()
	if r.regs == nil {
		r.regs = map[string][]argoapp.Registration{}
	}
	if _, ok := r.regs[ns]; !ok {
		regs, err := argoapp.Registrations(ctx, r.Hub.Kube, ns)
		if err != nil {
			return nil, r.Hub.Explain(err)
		}
		r.regs[ns] = regs
	}
	reg, err := argoapp.FindRegistration(r.regs[ns], name, e.Server)
	if err != nil {
		return nil, &ReachError{err}
	}
	return &reg, nil
}

// NeedsHub is the ReachError of the first cluster with a plan that was
// planned through its registration, which only the management cluster
// reaches again; nil when there is none.
func (f *Fleet) NeedsHub() error {
	for _, c := range f.Index.Clusters {
		if c.Via == ViaArgoCDCluster && c.Plan != "" {
			return &ReachError{needsHub(c.Context)}
		}
	}
	return nil
}

func needsHub(name string) error {
	return fmt.Errorf("cluster %s was planned through its Argo CD registration (via %s): give --argocd-context (the management cluster) to reach it the same way", name, ViaArgoCDCluster)
}
