package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
)

// completeFleet loads a fleet plan; each cluster is connected to when its
// turn comes, so one that is down fails alone.
func (o *FinalizeOptions) completeFleet() error {
	f, err := fleet.Load(o.PlanFile)
	if err != nil {
		return usageErrorf("--plan: %v", err)
	}
	o.fleet = f
	o.hub, err = o.Hub.connect(o.ConfigFlags)
	o.connector = &fleetConnector{main: o.ConfigFlags, reach: fleet.Reach{Hub: o.hub}}
	return err
}

// validateFleet refuses the flags that name one cluster's run.
func (o *FinalizeOptions) validateFleet() error {
	if len(o.Apps) > 0 || o.JournalFile != "" {
		return usageErrorf("--app and --journal name one cluster's run: a fleet plan finalizes every generated Application, with one journal per cluster next to its plan")
	}
	if err := o.fleet.NeedsHub(); err != nil && o.hub == nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// runFleet runs finalize.RunFleet (each cluster in turn, with its own plan
// as Argo CD runs it and its own journal; a cluster that fails is reported
// and the others go on) and prints each cluster's report as it ends.
func (o *FinalizeOptions) runFleet(ctx context.Context) error {
	var failed []string
	partial := false
	finalize.RunFleet(ctx, finalize.FleetRun{
		Fleet:   o.fleet,
		Session: o.clusterSession,
		Started: func(name string) {
			if o.Output == "table" {
				fmt.Fprintf(o.Out, "cluster %s:\n", name)
			}
		},
		Done: func(c finalize.ClusterReport) {
			err := c.Err
			if err == nil {
				err = o.print(c.Report)
			}
			var ee *exitError
			switch {
			case errors.As(err, &ee) && ee.code == ExitPartial:
				partial = true
				fmt.Fprintf(o.ErrOut, "cluster %s: %v\n", c.Cluster, err)
			case err != nil:
				failed = append(failed, fmt.Sprintf("cluster %s: %v", c.Cluster, err))
				fmt.Fprintf(o.ErrOut, "cluster %s: %v\n", c.Cluster, err)
			}
		},
	})
	for _, c := range o.fleet.Index.Clusters {
		if c.NotScanned != "" {
			fmt.Fprintf(o.ErrOut, "cluster %s: not in the fleet plan (not scanned: %s)\n", c.Context, c.NotScanned)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("%d of %d clusters not finalized: %s", len(failed), len(o.fleet.Plans), strings.Join(failed, "; "))
	case partial:
		return &exitError{code: ExitPartial, err: fmt.Errorf("some objects not finalized (see each cluster above); fix and re-run: finished objects are skipped")}
	}
	return nil
}

// clusterSession connects to one cluster of the fleet and returns its
// session, as `finalize --plan <cluster's plan>` with the fleet's flags.
func (o *FinalizeOptions) clusterSession(ctx context.Context, fc finalize.FleetCluster) (*finalize.Session, func(), error) {
	c, err := o.connector.connect(ctx, o.fleet, fc.Name)
	if err != nil {
		return nil, nil, err
	}
	one := *o
	one.fleet, one.plan, one.JournalFile = nil, fc.Plan, fc.JournalFile
	if err := one.completeCluster(c); err != nil {
		return nil, nil, err
	}
	if err := one.Validate(); err != nil {
		return nil, nil, err
	}
	return one.open(ctx)
}
