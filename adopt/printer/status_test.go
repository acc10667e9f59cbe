package printer

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

func sampleStatus() *status.Report {
	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	objs := []status.Object{
		{Ref: "ConfigMap ns/big", App: "a", Stage: status.StageAppPresent, Stuck: true, Reason: "last sync Failed: too long", Next: "adopt finalize --plan p.yaml --app a --sync", Budget: budget.MeasureBudget(map[string]string{"k": strings.Repeat("x", budget.AnnotationCap-2)})},
		{Ref: "ConfigMap ns/mid", App: "a", Stage: status.StageFinalized, Budget: budget.MeasureBudget(map[string]string{"k": strings.Repeat("x", budget.AnnotationCap*8/10)})},
		{Ref: "ConfigMap ns/small", App: "b", Stage: status.StagePlanned, Budget: budget.MeasureBudget(map[string]string{"k": "v"})},
	}
	for i := range objs {
		objs[i].Level = objs[i].Budget.Level()
	}
	r := status.Assemble(t0.Add(time.Hour), []status.PlanRef{{ID: "p1", File: "p.yaml", Branch: "adopt/x"}}, nil,
		&status.Coverage{Tracked: 1, Objects: 3, Percent: 33.3, Scope: "ns", Namespaces: []status.NamespaceCoverage{{Namespace: "ns", Tracked: 1, Objects: 3, Percent: 33.3}}}, nil)
	r.Objects = objs
	r.Counts = status.Counts{AppPresent: 1, Finalized: 1, Planned: 1}
	r.Stuck = 1
	r.Applications = []status.App{{Name: "a", Plan: "p1", Stage: status.StageAppPresent, Objects: 2, PR: &gitops.PRStatus{Number: 7, URL: "https://git.example.invalid/o/r/pulls/7", State: "merged"},
		Ignore: "1 ignoreDifferences entry written", Ignored: []string{"apps/Deployment ns/api: managedFieldsManagers [replica-manager] (spec.replicas): replica-manager owns it"}}}
	r.History = []status.Snapshot{{Time: t0, Counts: status.Counts{Planned: 3}, Coverage: &status.SnapshotCoverage{Percent: 0}}, r.Snapshot()}
	return r
}

// TestStatusHTML renders the embedded report and checks what a reader and
// the browser test rely on: the numbers, the charts' points, the budget
// bars with exact bytes, the PR link, and nothing that loads anything.
func TestStatusHTML(t *testing.T) {
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := set.LoadHTML(templates.StatusReport, StatusHTMLFuncs())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := StatusHTML(&b, sampleStatus(), tpl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`data-metric="coverage-percent">33.3<`, `data-metric="stuck">1<`, `data-stage-count="finalized">1<`,
		`data-chart="burndown" data-points="2"`, `data-bytes="262143" data-percent="99.9"`, `href="https://git.example.invalid/o/r/pulls/7"`,
		`Content-Security-Policy`, `75% warning`, `90% critical`, `<title id="burndown-title">`,
		`<details data-ignore="1"><summary>1 ignoreDifferences entry written</summary><ul><li><code>apps/Deployment ns/api: managedFieldsManagers [replica-manager] (spec.replicas): replica-manager owns it</code></li></ul></details>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if n := strings.Count(page, `<g data-series=`); n != len(status.Stages) {
		t.Errorf("burndown has %d series, want %d", n, len(status.Stages))
	}
	if loads := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|\ssrc=|url\((?:["']?)(?:https?:|//)|@import`).FindAllString(page, -1); len(loads) > 0 {
		t.Errorf("report loads something: %v", loads)
	}
}

func TestStatusFormats(t *testing.T) {
	r := sampleStatus()
	for _, f := range StatusFormats {
		var b bytes.Buffer
		if err := Status(&b, r, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(b.String(), "ConfigMap ns/big") {
			t.Errorf("%s output lacks the object:\n%s", f, b.String())
		}
	}
	var b bytes.Buffer
	if err := Status(&b, r, "json"); err != nil {
		t.Fatal(err)
	}
	var back status.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Stuck != 1 || back.Counts.Finalized != 1 || back.Coverage.Percent != 33.3 {
		t.Fatalf("json round trip: %v %+v", err, back)
	}
	if err := Status(&b, r, "xml"); err == nil {
		t.Fatal("an unknown format was accepted")
	}
}

// TestStatusHTMLFleet: a fleet plan's report has a cluster column in the
// object, stuck and Application tables, a per-cluster table of counts, and
// one burndown per cluster drawn from the snapshots that recorded it.
func TestStatusHTMLFleet(t *testing.T) {
	r := sampleStatus()
	for i, c := range []string{"eu-1", "eu-1", "us-1"} {
		r.Objects[i].Cluster = c
	}
	r.Applications[0].Cluster = "eu-1"
	r.Clusters = []status.ClusterCounts{
		{Cluster: "eu-1", Counts: status.Counts{AppPresent: 1, Finalized: 1}, Stuck: 1},
		{Cluster: "us-1", Counts: status.Counts{Planned: 1}},
	}
	t0 := r.History[0].Time
	r.History = []status.Snapshot{
		{Time: t0, Counts: status.Counts{Planned: 3}, Clusters: map[string]status.Counts{"eu-1": {Planned: 2}, "us-1": {Planned: 1}}},
		{Time: t0.Add(30 * time.Minute), Counts: status.Counts{Planned: 3}}, // before the fleet: no clusters
		r.Snapshot(),
	}
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := set.LoadHTML(templates.StatusReport, StatusHTMLFuncs())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := StatusHTML(&b, r, tpl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<th>Cluster</th><th>Application</th>`, `<td data-cluster="eu-1"><code>eu-1</code></td><td><code>a</code></td>`,
		`<td data-cluster="us-1"><code>us-1</code></td><td><code>ConfigMap ns/small</code>`,
		`<tr data-cluster="us-1"><td><code>us-1</code></td><td class="num" data-stage-count="planned">1</td>`,
		`data-chart="burndown" data-points="3"`, `<title id="burndown-1-title">`, `<title id="burndown-2-title">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("fleet report lacks %s", want)
		}
	}
	if n := strings.Count(page, `data-chart="cluster-burndown" data-points="2"`); n != 2 {
		t.Errorf("%d per-cluster burndowns of 2 points, want 2 (the snapshot without clusters left out)", n)
	}
	// eu-1's planned line goes 2 -> 0.
	eu := page[strings.Index(page, `<title id="burndown-1-title">`):strings.Index(page, `<title id="burndown-2-title">`)]
	planned := eu[strings.Index(eu, `data-series="planned"`):]
	planned = planned[:strings.Index(planned, "</g>")]
	if got := regexp.MustCompile(`data-value="(\d+)"`).FindAllStringSubmatch(planned, -1); len(got) != 2 || got[0][1] != "2" || got[1][1] != "0" {
		t.Errorf("eu-1's planned line: %v, want 2 then 0", got)
	}
	var tb bytes.Buffer
	if err := Status(&tb, r, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster eu-1: 2 objects:", "cluster us-1: 1 objects: planned 1,", "CLUSTER  OBJECT"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
}
