package apply

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// FleetOptions are one apply of a fleet plan, flags already resolved.
type FleetOptions struct {
	Fleet *fleet.Fleet
	// Clusters are where each cluster's objects are read, by context.
	Clusters map[string]Cluster
	// Hub is the management cluster's client, where the Argo CD version is
	// read (nil: the first cluster's).
	Hub kubernetes.Interface
	// ArgoCDVersion is --argocd-version ("" to detect it).
	ArgoCDVersion string
	Render        RenderOptions
	Checkout      CheckoutOptions
	Write         WriteOptions
}

// FleetResult is what one apply of a fleet plan did, for the printer.
type FleetResult struct {
	// Warnings are one sentence each, known before anything is written;
	// they are set even when RunFleet fails after resolving the version.
	Warnings []string
	Summary  FleetSummary
	Checkout *Checkout
	Commit   *gitops.Result
}

// RunFleet applies a fleet plan: the first cluster (by context) decides
// the Argo CD version, each cluster's objects are exported from that
// cluster, and the ApplicationSets and every cluster's other Applications
// are committed as one change. It prints nothing. A refusal of the input is
// a ContractError.
func RunFleet(ctx context.Context, o FleetOptions) (*FleetResult, error) {
	res := &FleetResult{}
	f := &Fleet{Index: o.Fleet.Index, Members: map[string]*Applier{}}
	var version argoapp.DetectedVersion
	for i, name := range o.Fleet.Contexts() {
		p, c := o.Fleet.Plans[name], o.Clusters[name]
		if i == 0 {
			v, err := resolveVersion(ctx, p, o.ArgoCDVersion, o.Hub, c)
			if err != nil {
				return nil, err
			}
			version = v
		}
		if w := VersionMismatch(p, version); w != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("cluster %s: %s", name, w))
		}
		a, err := exportPlan(ctx, p, c, version, o.Render)
		if err != nil {
			return res, fmt.Errorf("cluster %s: %w", name, err)
		}
		f.Members[name] = a
	}
	co, err := Clone(ctx, o.Checkout)
	if err != nil {
		return res, err
	}
	res.Checkout = co
	defer co.Close()
	if res.Commit, err = Write(ctx, co, f, o.Write); err != nil {
		return res, err
	}
	res.Summary = f.Summary()
	return res, nil
}

// PRInput is the fleet's pull request for this result's pushed branch.
func (r *FleetResult) PRInput(planPath, templatesDir string) PRInput {
	return r.Summary.PR(PRInput{RepoURL: r.Checkout.Repo.URL(), Head: r.Commit.Branch, Base: r.Checkout.Base, PlanPath: planPath, TemplatesDir: templatesDir})
}
