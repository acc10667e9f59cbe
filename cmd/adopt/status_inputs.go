package main

import (
	"context"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/adopt/status"
)

// completeReconcile takes adopt reconcile's groups as the inputs: each
// group's plan on its branch, with its journal.
func (o *StatusOptions) completeReconcile(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	groups, err := reconcile.Store{Kube: o.cluster.Kube, Namespace: o.Reconcile}.List(ctx)
	if err != nil {
		return o.cluster.Explain(err)
	}
	if len(groups) == 0 {
		return usageErrorf("--reconcile %s: adopt reconcile keeps no group there; give its --lock-namespace", o.Reconcile)
	}
	for _, g := range groups {
		o.inputs = append(o.inputs, status.Input{Plan: g.Plan, File: g.Branch, Journal: reconcile.JournalFile(o.JournalDir, g.Branch), Branch: g.Branch})
	}
	return nil
}

// completeFleet loads a fleet plan and connects to each of its clusters
// the way apply and finalize do; its inputs follow each cluster as Argo CD
// runs it (status.FleetInputs).
func (o *StatusOptions) completeFleet(ctx context.Context, file string) error {
	f, err := fleet.Load(file)
	if err != nil {
		return usageErrorf("--plan: %v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o.fleet, o.clusters = f, map[string]*cluster{}
	fc := &fleetConnector{main: o.ConfigFlags, hub: o.hub}
	for _, in := range status.FleetInputs(f) {
		c, err := fc.connect(ctx, f, in.Cluster)
		if err != nil {
			return usageErrorf("fleet plan %s, cluster %s: %v", f.Path, in.Cluster, err)
		}
		o.clusters[in.Cluster] = c
		in.Clients, in.Kube, in.Explain = c.Clients, c.Kube, c.Explain
		o.inputs = append(o.inputs, in)
	}
	return nil
}
