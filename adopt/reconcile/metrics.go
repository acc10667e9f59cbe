package reconcile

import (
	"fmt"
	"io"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// WriteMetrics writes the run's Prometheus text-format metrics to path
// (for node-exporter's textfile collector or a sidecar), replacing the
// file in one rename so a scrape never reads half of it.
func WriteMetrics(path string, r *Report, took time.Duration) error {
	if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return Metrics(w, r, took) }); err != nil {
		return fmt.Errorf("--metrics-file %s: %w", path, err)
	}
	return nil
}

// Metrics writes the run's metrics in Prometheus text format.
func Metrics(w io.Writer, r *Report, took time.Duration) error {
	cl := fmt.Sprintf("{cluster=%q}", r.Cluster)
	rows := []struct {
		name, help, typ string
		value           float64
	}{
		{"adopt_untracked_objects", "Objects the plan proposes to adopt (no Argo CD Application tracks them).", "gauge", float64(r.Untracked)},
		{"adopt_open_pull_requests", "Pull requests of adopt reconcile open after the run.", "gauge", float64(r.OpenPRs)},
		{"adopt_declined_groups", "Groups whose pull request was closed without merging and whose content has not changed since.", "gauge", float64(r.Count(Declined))},
		{"adopt_held_groups", "Groups whose branch someone else pushed to, left alone.", "gauge", float64(r.Count(HeldByUser))},
		{"adopt_waiting_groups", "Groups waiting for --max-open-prs or over --max-objects-per-pr.", "gauge", float64(r.Count(Waiting) + r.Count(TooBig))},
		{"adopt_merged_pull_requests", "Branches of this cluster whose pull request was merged.", "gauge", float64(r.MergedPRs)},
		{"adopt_not_scanned_types", "Resource types the plan could not read: while any is, adopt_untracked_objects is a lower bound.", "gauge", float64(len(r.NotScanned))},
		{"adopt_finalized_objects", "Objects finalized by this run.", "gauge", float64(r.Finalized)},
		{"adopt_failed_groups", "Groups whose step failed this run.", "gauge", float64(r.Count(Failed))},
		{"adopt_reconcile_duration_seconds", "How long the run took.", "gauge", took.Seconds()},
	}
	for _, row := range rows {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s%s %g\n", row.name, row.help, row.name, row.typ, row.name, cl, row.value); err != nil {
			return err
		}
	}
	return nil
}
