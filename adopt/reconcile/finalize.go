package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// FinalizeMerged finalizes what branch's merged pull request proposed: the
// plan the store recorded, run through finalize's guarded cleanup by run
// (with its journal in journalDir, JournalFile). The group is Finalized
// once every object is done and every Application stayed Synced over the
// settle window, and the store then marks it; Done when an earlier run
// finalized it; else Merged, saying what it waits for.
func FinalizeMerged(ctx context.Context, store Store, branch, journalDir string,
	run func(ctx context.Context, p *plan.Plan, journal string) (*finalize.Report, error)) (FinalizeResult, error) {
	st, err := store.Load(ctx, branch)
	switch {
	case err != nil:
		return FinalizeResult{}, err
	case st == nil:
		return FinalizeResult{Outcome: Merged, Why: "merged, but no plan of it was recorded in " + store.Namespace + ": finalize it by hand (adopt finalize --plan)"}, nil
	case !st.Finalized.IsZero():
		return FinalizeResult{Outcome: Done, Why: "finalized " + st.Finalized.UTC().Format(time.RFC3339)}, nil
	}
	journal := JournalFile(journalDir, branch)
	rep, err := run(ctx, st.Plan, journal)
	if err != nil {
		return FinalizeResult{}, err
	}
	res := FinalizeResult{Outcome: Merged, Finalized: rep.Total.Finalized}
	var waiting []string
	for _, a := range rep.Apps {
		switch {
		case !a.Ready:
			why := a.Waiting
			if why == "" { // not synced: the problems say why (a Secret's mark or push)
				why = strings.Join(a.Problems, "; ")
			}
			waiting = append(waiting, a.Name+": "+why)
		case a.Settle != nil && !a.Settle.Synced:
			waiting = append(waiting, fmt.Sprintf("%s went %s within the settle window: put the field in Git or ignore its manager", a.Name, a.Settle.Sync))
		}
	}
	if bad := rep.Incomplete(); len(bad) > 0 || len(waiting) > 0 {
		res.Why = "merged; not finalized yet: " + strings.Join(append(waiting, bad...), "; ")
		return res, nil
	}
	if err := store.MarkFinalized(ctx, branch, time.Now()); err != nil {
		return res, err
	}
	res.Outcome = Finalized
	res.Why = fmt.Sprintf("finalized %d object(s), %d already clean; journal %s", rep.Total.Finalized, rep.Total.Already, journal)
	return res, nil
}
