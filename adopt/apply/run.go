package apply

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

// Cluster is a cluster apply reads a plan's live objects from.
type Cluster struct {
	Dynamic dynamic.Interface
	Core    corev1client.CoreV1Interface
	// Kube reads the Argo CD version when there is no management cluster.
	Kube kubernetes.Interface
	// Explain turns a cluster error into one a user can act on (nil: as
	// it is).
	Explain func(error) error
}

// RenderOptions are how every plan of one run is written: the flags that
// are not the plan's to decide.
type RenderOptions struct {
	Secrets         export.SecretMode
	FixRunbooks     bool
	AutoSync, Prune bool
	CSAMigration    CSAMode
	Templates       *templates.Set
	// Sops encrypts the Secrets a plan adopts in the SOPS form (zero:
	// sops on PATH).
	Sops sopsform.CLI
	// PushSecrets (--push-secrets) pushes the value of each Secret a
	// plan adopts in form eso to its store, and proves it reads back,
	// before the commit (Options.PushSecrets).
	PushSecrets bool
}

// RunOptions are one apply of a plan, flags already resolved.
type RunOptions struct {
	// Plan is the reviewed plan; nil computes it now with Scan.
	Plan *plan.Plan
	Scan planner.Options
	// Cluster is where the plan's objects are read.
	Cluster Cluster
	// Hub is the management cluster's client, where the Argo CD version is
	// read (nil: Cluster.Kube).
	Hub kubernetes.Interface
	// ArgoCDVersion is --argocd-version ("" to detect it).
	ArgoCDVersion string
	Render        RenderOptions
	Checkout      CheckoutOptions
	Write         WriteOptions
}

// Result is what one apply of a plan did, for the printer.
type Result struct {
	// Plan is the plan applied (the one computed when none was given).
	Plan *plan.Plan
	// Warnings are one sentence each, known before anything is written;
	// they are set even when Run fails after resolving the version.
	Warnings []string
	// Summary, Checkout and Commit are the written change; Commit is nil
	// when the plan proposes no Application. Run has closed the Checkout:
	// its Repo names the repository but reads no object.
	Summary  Summary
	Checkout *Checkout
	Commit   *gitops.Result
}

// Run applies one plan: computes it when none is given, resolves the Argo
// CD version, exports the plan's objects while it clones, and commits. It
// prints nothing. A refusal of the input (the plan, a flag, the version) is
// a ContractError.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	res := &Result{Plan: o.Plan}
	if res.Plan == nil {
		p, err := planner.Plan(ctx, o.Scan)
		if err != nil {
			return nil, err
		}
		res.Plan = p
	}
	p := res.Plan
	version, err := resolveVersion(ctx, p, o.ArgoCDVersion, o.Hub, o.Cluster)
	if err != nil {
		return nil, err
	}
	if w := VersionMismatch(p, version); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if len(p.Applications) == 0 {
		return res, nil
	}
	a, co, err := ExportWhileCloning(ctx, func(ctx context.Context) (*Applier, error) {
		return exportPlan(ctx, p, o.Cluster, version, o.Render)
	}, o.Checkout)
	if err != nil {
		return res, err
	}
	res.Checkout = co
	defer co.Close()
	if res.Commit, err = Write(ctx, co, a, o.Write); err != nil {
		return res, err
	}
	res.Summary = a.Summary()
	return res, nil
}

// PRInput is the pull request for this result's pushed branch.
func (r *Result) PRInput(planPath, templatesDir string) PRInput {
	return r.Summary.PRInput(PRInput{RepoURL: r.Checkout.Repo.URL(), Head: r.Commit.Branch, Base: r.Checkout.Base, Plan: r.Plan, PlanPath: planPath, TemplatesDir: templatesDir})
}

// resolveVersion is the Argo CD version the Applications of p will run on:
// flag, else the application controller's on hub (or on c), else the
// plan's. A version that cannot be told is a ContractError.
func resolveVersion(ctx context.Context, p *plan.Plan, flag string, hub kubernetes.Interface, c Cluster) (argoapp.DetectedVersion, error) {
	_, argoNS := Settings(p)
	kube := c.Kube
	if hub != nil {
		kube = hub
	}
	v, err := argoapp.ResolveVersion(ctx, argoapp.VersionQuery{
		Flag: flag, Kube: kube, Namespace: argoNS,
		Recorded: p.Tracking.Version, RecordedSource: p.Tracking.VersionSource, RecordedBy: p.ID,
	})
	if err != nil {
		return v, &ContractError{msg: err.Error()}
	}
	return v, nil
}

// exportPlan makes the Applier of p and exports its objects from c.
func exportPlan(ctx context.Context, p *plan.Plan, c Cluster, version argoapp.DetectedVersion, r RenderOptions) (*Applier, error) {
	fetch, list, count := Live(c.Dynamic, c.Core)
	a, err := New(Options{
		Plan: p, Secrets: r.Secrets, FixRunbooks: r.FixRunbooks, AutoSync: r.AutoSync, Prune: r.Prune,
		CSAMigration: r.CSAMigration, Version: version, Templates: r.Templates, Fetch: fetch, List: list, Count: count, Kube: c.Kube, Sops: r.Sops,
		PushSecrets: r.PushSecrets, Dynamic: c.Dynamic,
	})
	if err != nil {
		return nil, err
	}
	if err := a.Export(ctx); err != nil {
		var oe *ObjectError
		if errors.As(err, &oe) {
			explain := c.Explain
			if explain == nil {
				explain = func(err error) error { return err }
			}
			return nil, fmt.Errorf("%s %s: %w", oe.Op, oe.Ref, explain(oe.Err))
		}
		return nil, err
	}
	return a, nil
}
