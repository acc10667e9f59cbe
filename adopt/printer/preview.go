package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// previewColumn is the FIRST SYNC cell: no-op, changes N, fails, or "-"
// for objects not previewed (Secrets, Helm).
func previewColumn(ob *plan.Object) string {
	if ob.Preview == nil {
		return "-"
	}
	return ob.Preview.Column()
}

// previewDetails writes what the first sync would do to each object that
// it changes, refuses, or leaves with fields waiting to be deleted.
func previewDetails(w io.Writer, p *plan.Plan) {
	s := p.Summary.Preview
	fmt.Fprintf(w, "\nFirst sync preview (server-side dry run as argocd-controller): %d no-op, %d change, %d would fail, %d would not fit\n",
		s.NoOp, s.Changes, s.WouldFail, s.WouldNotFit)
	for _, ob := range p.Objects {
		r := ob.Preview
		if r == nil || (r.Outcome == "no-op" && len(r.PendingDeletions) == 0 && len(r.Warnings) == 0 && len(r.IgnoreDifferences) == 0) {
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", ob.Ref.String(), r.Outcome)
		if r.Verdict != "" {
			fmt.Fprintf(w, "    the API server says: %s\n", r.Verdict)
		}
		for _, c := range r.Changes {
			fmt.Fprintf(w, "    %s\n", c.Text)
		}
		if r.Rollout != nil {
			fmt.Fprintf(w, "    %s\n", r.Rollout.Text)
			if r.Rollout.Capacity != nil {
				fmt.Fprintf(w, "    %s\n", r.Rollout.Capacity.Summary)
			}
		}
		for _, f := range r.PendingDeletions {
			fmt.Fprintf(w, "    pending deletion after finalize: %s (owned by %s)\n", f.Path, strings.Join(f.Managers, ", "))
		}
		for _, d := range r.IgnoreDifferences {
			fmt.Fprintf(w, "    ignoreDifferences: %s\n", d.Reason)
		}
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "    warning: %s\n", warn)
		}
	}
}
