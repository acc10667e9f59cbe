package main

import (
	"context"
	"errors"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/status"
)

// completeReconcile takes adopt reconcile's groups as the inputs
// (status.ReconcileInputs).
func (o *StatusOptions) completeReconcile(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	in, err := status.ReconcileInputs(ctx, o.cluster, o.Reconcile, o.JournalDir)
	if ie := (*status.InputError)(nil); errors.As(err, &ie) {
		return usageErrorf("%v", err)
	}
	o.inputs = append(o.inputs, in...)
	return err
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
	fc := &fleetConnector{main: o.ConfigFlags, reach: fleet.Reach{Hub: o.hub}}
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
