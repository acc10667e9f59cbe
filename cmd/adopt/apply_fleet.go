package main

import (
	"context"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
)

// completeFleet loads a fleet plan (--plan DIR or its fleet.yaml) and
// resolves a connection to each of its clusters the way the index records
// (a kubeconfig context, or the management cluster's cluster Secret, which
// is listed now).
func (o *ApplyOptions) completeFleet(ctx context.Context) error {
	f, err := fleet.Load(o.PlanFile)
	if err != nil {
		return usageErrorf("--plan: %v", err)
	}
	if o.hub, err = o.Hub.connect(o.ConfigFlags); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o.fleet, o.clusters, o.members = f, map[string]*cluster{}, map[string]apply.Cluster{}
	fc := &fleetConnector{main: o.ConfigFlags, reach: fleet.Reach{Hub: o.hub}}
	for _, name := range f.Contexts() {
		c, err := fc.connect(ctx, f, name)
		if err != nil {
			return usageErrorf("fleet plan %s, cluster %s: %v", f.Path, name, err)
		}
		o.clusters[name], o.members[name] = c, applyCluster(c)
	}
	return o.completeCommit()
}

// validateFleet refuses a fleet plan made for other clusters (a context
// that now names another server) or another management cluster, and flags
// that contradict a cluster's plan.
func (o *ApplyOptions) validateFleet() error {
	switch {
	case o.Prune:
		return usageErrorf("--prune: an ApplicationSet never automates prune; drop it")
	case o.PushSecrets:
		return usageErrorf("--push-secrets pushes one plan's Secrets; a fleet plan's are pushed by finalize --sync, per cluster: drop it")
	case o.ConfigFile != "":
		return usageErrorf("--config shapes a plan computed now; a fleet plan's cluster plans already record adopt.yaml's settings: drop --config")
	case o.Overrides.DestName != "" || o.Overrides.DestServer != "":
		return usageErrorf("--dest-name/--dest-server: a fleet plan's destinations are its registered clusters; drop them")
	}
	for _, name := range o.fleet.Contexts() {
		p, c := o.fleet.Plans[name], o.clusters[name]
		if err := plan.CheckCluster(p, c.Config.Host, name); err != nil {
			return usageErrorf("fleet plan %s, cluster %s: %v", o.fleet.Path, name, err)
		}
		if err := o.Overrides.Check(p); err != nil {
			return usageErrorf("cluster %s: %v", name, err)
		}
		if err := checkHub(p, o.hub); err != nil {
			return err
		}
	}
	return o.pr.Validate()
}

// runFleet runs the fleet engine (the first cluster decides the Argo CD
// version), prints its result and opens the pull request.
func (o *ApplyOptions) runFleet(ctx context.Context) error {
	fo := apply.FleetOptions{Fleet: o.fleet, Clusters: o.members, ArgoCDVersion: o.ArgoCDVersion,
		Render: o.render(), Checkout: o.checkout(o.auth), Write: o.writeOptions()}
	if o.hub != nil {
		fo.Hub = o.hub.Kube
	}
	res, err := apply.RunFleet(ctx, fo)
	if res != nil {
		o.warn(res.Warnings)
	}
	if err != nil {
		return contractOr(err)
	}
	o.noteAuthor()
	printer.FleetApply(o.Out, res.Summary, printer.ApplyResult{Repo: res.Checkout.Repo.URL(), Base: res.Checkout.Base, Result: res.Commit, DryRun: o.DryRun, CloneDir: res.Checkout.Dir})
	return o.openPR(ctx, res.PRInput(o.fleet.Path, o.Templates))
}
