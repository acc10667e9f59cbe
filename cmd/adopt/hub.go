package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
)

// hubFlags name the management cluster Argo CD runs on, when it is not the
// cluster the command works on (hub and spoke).
type hubFlags struct {
	Kubeconfig string
	Context    string
}

// AddFlags registers --argocd-kubeconfig and --argocd-context.
func (h *hubFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&h.Kubeconfig, "argocd-kubeconfig", "", "kubeconfig of the management cluster Argo CD runs on (default: --kubeconfig)")
	f.StringVar(&h.Context, "argocd-context", "", "context of the management cluster Argo CD runs on, when it is not the cluster worked on (hub and spoke)")
}

// Set reports whether a management cluster was named.
func (h *hubFlags) Set() bool { return h.Kubeconfig != "" || h.Context != "" }

// connect resolves the management cluster (nil when none was named), with
// the main flags' kubeconfig and --request-timeout as defaults.
func (h *hubFlags) connect(main *genericclioptions.ConfigFlags) (*cluster, error) {
	if !h.Set() {
		return nil, nil
	}
	f := genericclioptions.NewConfigFlags(false)
	kubeconfig, ctx := h.Kubeconfig, h.Context
	if kubeconfig == "" && main.KubeConfig != nil {
		kubeconfig = *main.KubeConfig
	}
	f.KubeConfig, f.Context = &kubeconfig, &ctx
	f.Timeout, f.WrapConfigFn = main.Timeout, main.WrapConfigFn
	c, err := connect(f)
	if err != nil {
		return nil, usageErrorf("management cluster (--argocd-kubeconfig/--argocd-context): %v", err)
	}
	return c, nil
}

// scanHub is the plan pipeline's view of the management cluster.
func scanHub(c *cluster) *planner.Hub {
	if c == nil {
		return nil
	}
	return &planner.Hub{Kube: c.Kube, Dynamic: c.Clients.Dynamic, Server: c.Config.Host, Context: c.Context, Explain: c.Explain}
}

// checkHub is plan.CheckHub when a management cluster was named.
func checkHub(p *plan.Plan, hub *cluster) error {
	if hub == nil {
		return nil
	}
	if err := plan.CheckHub(p, hub.Config.Host, hub.Context); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// fleetConnector reconnects to a fleet plan's clusters the way plan
// reached them (fleet.Reach): by kubeconfig context, or with a cluster
// Secret's credentials.
type fleetConnector struct {
	main  *genericclioptions.ConfigFlags
	reach fleet.Reach
}

// connect connects to the fleet's cluster name.
func (fc *fleetConnector) connect(ctx context.Context, f *fleet.Fleet, name string) (*cluster, error) {
	r, err := fc.reach.Registration(ctx, f, name)
	var re *fleet.ReachError
	switch {
	case errors.As(err, &re):
		return nil, usageErrorf("%v", err)
	case err != nil:
		return nil, err
	case r == nil:
		return connect(contextFlags(fc.main, name))
	}
	return connectRegistration(*r, fc.main)
}
