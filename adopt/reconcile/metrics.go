package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// RunMetrics is what one run leaves for on-call, failed runs included:
// its report (nil when the run failed before reconciling any group), how
// long it took, when it ended, its error, and when the last successful
// run ended (zero: none known).
type RunMetrics struct {
	Cluster     string
	Report      *Report
	Took        time.Duration
	Ended       time.Time
	Err         error
	LastSuccess time.Time
}

// outcomes are every Group outcome, each counted by adopt_groups.
var outcomes = []string{Opened, Updated, Unchanged, Declined, Reproposed, HeldByUser, Waiting, TooBig, Merged, Finalized, Done, Obsolete, Failed}

// lastSuccessName is the metric a failed run carries over from the run
// before it.
const lastSuccessName = "adopt_last_success_timestamp_seconds"

// Write writes m in Prometheus text format: the run's time and result
// always; the report's gauges and counts per outcome when there is a
// report; the last success when one is known.
func (m RunMetrics) Write(w io.Writer) error {
	ok := 0.0
	if m.Err == nil {
		m.LastSuccess, ok = m.Ended, 1
	}
	cl := fmt.Sprintf("cluster=%q", m.Cluster)
	var b strings.Builder
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %g\n", name, help, name, name, cl, v)
	}
	gauge("adopt_last_run_timestamp_seconds", "When the last run of adopt reconcile ended (Unix time).", float64(m.Ended.Unix()))
	gauge("adopt_last_run_success", "1 when the last run ended without an error, 0 when it failed.", ok)
	if !m.LastSuccess.IsZero() {
		gauge(lastSuccessName, "When the last successful run ended (Unix time): alert when it is too old.", float64(m.LastSuccess.Unix()))
	}
	gauge("adopt_reconcile_duration_seconds", "How long the last run took.", m.Took.Seconds())
	if r := m.Report; r != nil {
		for _, row := range []struct {
			name, help string
			value      int
		}{
			{"adopt_untracked_objects", "Objects the plan proposes to adopt (no Argo CD Application tracks them).", r.Untracked},
			{"adopt_open_pull_requests", "Pull requests of adopt reconcile open after the run.", r.OpenPRs},
			{"adopt_declined_groups", "Groups whose pull request was closed without merging and whose content has not changed since.", r.Count(Declined)},
			{"adopt_held_groups", "Groups whose branch someone else pushed to, left alone.", r.Count(HeldByUser)},
			{"adopt_waiting_groups", "Groups waiting for --max-open-prs or over --max-objects-per-pr.", r.Count(Waiting) + r.Count(TooBig)},
			{"adopt_merged_pull_requests", "Branches of this cluster whose pull request was merged.", r.MergedPRs},
			{"adopt_not_scanned_types", "Resource types the plan could not read: while any is, adopt_untracked_objects is a lower bound.", len(r.NotScanned)},
			{"adopt_finalized_objects", "Objects finalized by this run.", r.Finalized},
			{"adopt_failed_groups", "Groups whose step failed this run.", r.Count(Failed)},
		} {
			gauge(row.name, row.help, float64(row.value))
		}
		fmt.Fprintf(&b, "# HELP adopt_groups Groups of the last run, by outcome.\n# TYPE adopt_groups gauge\n")
		for _, o := range outcomes {
			fmt.Fprintf(&b, "adopt_groups{%s,outcome=%q} %d\n", cl, o, r.Count(o))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMetrics writes m to path (for a textfile collector, or a volume a
// sidecar reads), replacing the file in one rename so a scrape never reads
// half of it. A failed run keeps the last success the file recorded.
func WriteMetrics(path string, m RunMetrics) error {
	if m.Err != nil && m.LastSuccess.IsZero() {
		if prev, err := os.Open(path); err == nil {
			m.LastSuccess = lastSuccess(prev)
			prev.Close()
		}
	}
	if err := atomicfile.Write(path, 0o644, m.Write); err != nil {
		return fmt.Errorf("--metrics-file %s: %w", path, err)
	}
	return nil
}

// lastSuccess reads adopt_last_success_timestamp_seconds from metrics in
// text format (zero when absent or unreadable).
func lastSuccess(r io.Reader) time.Time {
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return time.Time{}
	}
	f := families[lastSuccessName]
	if f == nil || len(f.GetMetric()) == 0 {
		return time.Time{}
	}
	return time.Unix(int64(f.GetMetric()[0].GetGauge().GetValue()), 0)
}

// PushMetrics sends m to a Prometheus Pushgateway at gateway (its base
// URL), in the group job="adopt-reconcile", cluster=m.Cluster, with POST:
// metrics of the same names are replaced and the others kept, so a failed
// run, which carries no last success, leaves the last success pushed
// before it in place. The request's deadline is the caller's.
func PushMetrics(ctx context.Context, client *http.Client, gateway string, m RunMetrics) error {
	if m.Err != nil {
		m.LastSuccess = time.Time{}
	}
	var body bytes.Buffer
	if err := m.Write(&body); err != nil {
		return err
	}
	u := strings.TrimSuffix(gateway, "/") + "/metrics/job/adopt-reconcile/cluster/" + url.PathEscape(m.Cluster)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, &body)
	if err != nil {
		return fmt.Errorf("--metrics-pushgateway %s: %w", gateway, err)
	}
	req.Header.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("push metrics to %s: %w; check --metrics-pushgateway", gateway, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("push metrics to %s: %s: %s", gateway, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Publish leaves m where on-call reads it, each when set: in file
// (WriteMetrics) and at the Pushgateway gateway (PushMetrics, within 30
// seconds even once ctx is cancelled, so a run stopped by SIGTERM still
// reports). It returns the first error.
func Publish(ctx context.Context, file, gateway string, m RunMetrics) error {
	var err error
	if file != "" {
		err = WriteMetrics(file, m)
	}
	if gateway != "" {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if perr := PushMetrics(pctx, &http.Client{}, gateway, m); err == nil {
			err = perr
		}
	}
	return err
}
