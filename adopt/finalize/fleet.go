package finalize

import (
	"context"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// FleetCluster is one cluster's turn in a fleet plan's finalize: its plan
// as Argo CD runs it (the Applications its ApplicationSets generate) and
// its own journal, next to its plan file.
type FleetCluster struct {
	// Name is the cluster's context in the fleet plan.
	Name        string
	Plan        *plan.Plan
	JournalFile string
}

// ClusterReport is one cluster's outcome: its report, or the error that
// stopped it (with the report so far, if any, which is not the run's).
type ClusterReport struct {
	Cluster string
	Report  *Report
	Err     error
}

// FleetRun is a fleet plan's finalize: one Session per cluster, in turn,
// each failing alone.
type FleetRun struct {
	Fleet *fleet.Fleet
	// Session connects to one cluster (and to its Argo CD) and returns
	// the cluster's Session, and what closes those connections once it
	// has run (nil: nothing). An error fails that cluster alone.
	Session func(ctx context.Context, c FleetCluster) (*Session, func(), error)
	// Started and Done, when set, are called as each cluster's turn
	// starts and ends, so that the caller can print as the fleet goes.
	Started func(cluster string)
	Done    func(ClusterReport)
}

// RunFleet finalizes each cluster of the fleet plan in turn, in the order
// of its contexts, and returns one report per cluster. A cluster that
// fails is reported and the others go on. It prints nothing.
func RunFleet(ctx context.Context, r FleetRun) []ClusterReport {
	names := r.Fleet.Contexts()
	out := make([]ClusterReport, 0, len(names))
	for _, name := range names {
		if r.Started != nil {
			r.Started(name)
		}
		c := FleetCluster{Name: name, Plan: r.Fleet.Generated(name), JournalFile: JournalPath(r.Fleet.Files[name])}
		cr := ClusterReport{Cluster: name}
		cr.Report, cr.Err = r.one(ctx, c)
		if r.Done != nil {
			r.Done(cr)
		}
		out = append(out, cr)
	}
	return out
}

// one is one cluster's run, as finalize over its plan alone.
func (r FleetRun) one(ctx context.Context, c FleetCluster) (*Report, error) {
	s, closeConn, err := r.Session(ctx, c)
	if err != nil {
		return nil, err
	}
	if closeConn != nil {
		defer closeConn()
	}
	return s.Run(ctx)
}
