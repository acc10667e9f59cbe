package main

import (
	"context"
	"fmt"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
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
	o.fleet, o.clusters = f, map[string]*cluster{}
	fc := &fleetConnector{main: o.ConfigFlags, hub: o.hub}
	for _, name := range f.Contexts() {
		c, err := fc.connect(ctx, f, name)
		if err != nil {
			return usageErrorf("fleet plan %s, cluster %s: %v", f.Path, name, err)
		}
		o.clusters[name] = c
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
	case o.ConfigFile != "":
		return usageErrorf("--config shapes a plan computed now; a fleet plan's cluster plans already record adopt.yaml's settings: drop --config")
	case o.Overrides.DestName != "" || o.Overrides.DestServer != "":
		return usageErrorf("--dest-name/--dest-server: a fleet plan's destinations are its registered clusters; drop them")
	}
	for _, name := range o.fleet.Contexts() {
		p, c := o.fleet.Plans[name], o.clusters[name]
		if err := plan.CheckCluster(p, c.rest.Host, name); err != nil {
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

// runFleet exports each cluster's objects from that cluster and writes the
// ApplicationSets and the other Applications as one commit.
func (o *ApplyOptions) runFleet(ctx context.Context) error {
	f := &apply.Fleet{Index: o.fleet.Index, Members: map[string]*apply.Applier{}}
	var version argoapp.DetectedVersion
	for i, name := range o.fleet.Contexts() {
		p, c := o.fleet.Plans[name], o.clusters[name]
		if i == 0 {
			v, err := o.argoVersion(ctx, p, c)
			if err != nil {
				return err
			}
			version = v
		}
		if w := apply.VersionMismatch(p, version); w != "" {
			fmt.Fprintf(o.ErrOut, "warning: cluster %s: %s\n", name, w)
		}
		a, err := o.export(ctx, p, c, version)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		f.Members[name] = a
	}
	co, err := apply.Clone(ctx, o.checkout(o.auth))
	if err != nil {
		return contractOr(err)
	}
	res, err := o.write(ctx, co, f)
	if err != nil {
		return err
	}
	printer.FleetApply(o.Out, f.Summary(), printer.ApplyResult{Repo: co.Repo.URL(), Base: co.Base, Result: res, DryRun: o.DryRun, CloneDir: co.Dir})
	return o.openPR(ctx, f.Summary().PR(apply.PRInput{RepoURL: co.Repo.URL(), Head: res.Branch, Base: co.Base, PlanPath: o.fleet.Path, TemplatesDir: o.Templates}))
}
