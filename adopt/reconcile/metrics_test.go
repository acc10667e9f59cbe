package reconcile

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// parseMetrics reads text-format metrics with Prometheus' own parser and
// returns each sample's value by its name and labels, written as
// `name{k="v",…}` with the labels in the parser's order.
func parseMetrics(t *testing.T, text string) map[string]float64 {
	t.Helper()
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' text parser refuses the metrics: %v\n%s", err, text)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

var (
	t1 = time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	t2 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
)

func sampleReport() *Report {
	return &Report{Cluster: "prod", Untracked: 7, OpenPRs: 2, Groups: []Group{
		{App: "a", Outcome: Opened}, {App: "b", Outcome: HeldByUser}, {App: "c", Outcome: HeldByUser}, {App: "d", Outcome: Failed},
	}}
}

// TestMetricsOfARun: a successful run's metrics, read back with
// Prometheus' own parser, carry its time, its success, the last success,
// the report's gauges and a count for every outcome (zero included); a
// failed run before any report carries its time and failure only.
func TestMetricsOfARun(t *testing.T) {
	var b strings.Builder
	if err := (RunMetrics{Cluster: "prod", Report: sampleReport(), Took: 3 * time.Second, Ended: t1}).Write(&b); err != nil {
		t.Fatal(err)
	}
	got := parseMetrics(t, b.String())
	for k, want := range map[string]float64{
		`adopt_last_run_timestamp_seconds{cluster=prod}`:     float64(t1.Unix()),
		`adopt_last_run_success{cluster=prod}`:               1,
		`adopt_last_success_timestamp_seconds{cluster=prod}`: float64(t1.Unix()),
		`adopt_reconcile_duration_seconds{cluster=prod}`:     3,
		`adopt_untracked_objects{cluster=prod}`:              7,
		`adopt_held_groups{cluster=prod}`:                    2,
		`adopt_failed_groups{cluster=prod}`:                  1,
		`adopt_groups{cluster=prod,outcome=held}`:            2,
		`adopt_groups{cluster=prod,outcome=opened}`:          1,
		`adopt_groups{cluster=prod,outcome=declined}`:        0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if n := strings.Count(b.String(), "adopt_groups{"); n != len(outcomes) {
		t.Errorf("%d adopt_groups samples, want one per outcome (%d)", n, len(outcomes))
	}

	b.Reset()
	if err := (RunMetrics{Cluster: "prod", Ended: t2, Err: errors.New("list pull requests: 502")}).Write(&b); err != nil {
		t.Fatal(err)
	}
	got = parseMetrics(t, b.String())
	if got[`adopt_last_run_success{cluster=prod}`] != 0 || got[`adopt_last_run_timestamp_seconds{cluster=prod}`] != float64(t2.Unix()) {
		t.Errorf("failed run: %v", got)
	}
	for k := range got {
		if strings.HasPrefix(k, "adopt_last_success_timestamp_seconds") || strings.HasPrefix(k, "adopt_untracked_objects") {
			t.Errorf("a failed run without a report or a known success wrote %s", k)
		}
	}
}

// TestMetricsFileKeepsLastSuccess: a run that fails after a successful
// one rewrites the file whole, and the success's time survives in it.
func TestMetricsFileKeepsLastSuccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adopt.prom")
	if err := WriteMetrics(path, RunMetrics{Cluster: "prod", Report: sampleReport(), Ended: t1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMetrics(path, RunMetrics{Cluster: "prod", Ended: t2, Err: errors.New("boom")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := parseMetrics(t, string(b))
	if got[`adopt_last_success_timestamp_seconds{cluster=prod}`] != float64(t1.Unix()) ||
		got[`adopt_last_run_timestamp_seconds{cluster=prod}`] != float64(t2.Unix()) || got[`adopt_last_run_success{cluster=prod}`] != 0 {
		t.Errorf("after a success at %d and a failure at %d: %v", t1.Unix(), t2.Unix(), got)
	}
}

// TestPushMetricsToARealPushgateway: a real Pushgateway holds what the
// runs pushed, as Prometheus would scrape it: after a success and then a
// failure, the last run failed and the last success is the first run's.
func TestPushMetricsToARealPushgateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := testenv.StartPushgateway(ctx)
	if err != nil {
		t.Fatal(err) // never a skip
	}
	defer pg.Stop()
	client := &http.Client{Timeout: 10 * time.Second}
	if err := PushMetrics(ctx, client, pg.URL, RunMetrics{Cluster: "prod", Report: sampleReport(), Ended: t1}); err != nil {
		t.Fatal(err)
	}
	if err := PushMetrics(ctx, client, pg.URL+"/", RunMetrics{Cluster: "prod", Ended: t2, Err: errors.New("boom")}); err != nil {
		t.Fatal(err)
	}
	text, err := pg.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := parseMetrics(t, text)
	const group = "cluster=prod,instance=,job=adopt-reconcile"
	for k, want := range map[string]float64{
		"adopt_last_run_timestamp_seconds{" + group + "}":     float64(t2.Unix()),
		"adopt_last_run_success{" + group + "}":               0,
		"adopt_last_success_timestamp_seconds{" + group + "}": float64(t1.Unix()),
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
	if t.Failed() {
		t.Logf("the Pushgateway serves:\n%s", text)
	}
	if err := PushMetrics(ctx, client, pg.URL+"/not-a-pushgateway", RunMetrics{Cluster: "prod", Ended: t2}); err == nil {
		t.Error("a push the Pushgateway refuses gave no error")
	}
}
