package status

import (
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// TestPlace places one set of facts in each stage, and the stuck cases,
// without a cluster.
func TestPlace(t *testing.T) {
	ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns", Name: "cm"}}
	app := plan.Application{Name: "adopt-ns", IgnoreDifferences: []preview.IgnoreDifference{{Kind: "ConfigMap", Namespace: "ns", Name: "cm",
		ManagedFieldsManagers: []string{"writer"}, Fields: []string{"data.a"}, Reason: "writer owns data.a", Source: preview.SourceManagedFields}}}
	clean := budget.MeasureBudget(map[string]string{"team": "x"})
	dirty := budget.MeasureBudget(map[string]string{budget.LastAppliedKey: "{}"})
	synced := &argoapp.AppState{Found: true, Phase: argoapp.PhaseSucceeded, History: []string{"abc"}, Revision: "abc", Sync: argoapp.SyncSynced, Health: argoapp.HealthHealthy}
	failed := &argoapp.AppState{Found: true, Phase: argoapp.PhaseFailed, Message: "too long"}
	degraded := &argoapp.AppState{Found: true, Phase: argoapp.PhaseSucceeded, History: []string{"abc"}, Sync: argoapp.SyncSynced, Health: "Degraded"}
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	base := Facts{PlanID: "p", PlanFile: "p.yaml", Repo: "https://git.example.invalid/o/r.git", App: app, Object: ob, ArgoNS: "argocd", AppFile: "apps/adopt-ns.yaml", Found: true, GitRead: true, Budget: dirty}
	with := func(f func(*Facts)) Facts { c := base; f(&c); return c }
	cases := []struct {
		name  string
		f     Facts
		stage Stage
		stuck bool
		next  string
	}{
		{"planned", base, StagePlanned, false, "adopt apply --plan p.yaml"},
		{"pushed, PR open", with(func(f *Facts) {
			f.Pushed, f.PR = true, &gitops.PRStatus{Number: 3, State: gitops.PROpen, URL: "https://x/pr/3"}
		}), StageInReview, false, "review and merge https://x/pr/3"},
		{"PR closed", with(func(f *Facts) { f.Pushed, f.PR = true, &gitops.PRStatus{Number: 3, State: gitops.PRClosed} }), StageInReview, true, "adopt apply --plan p.yaml"},
		{"merged", with(func(f *Facts) { f.Pushed, f.Merged = true, true }), StageMerged, false, "kubectl apply -n argocd -f apps/adopt-ns.yaml"},
		{"app, no sync", with(func(f *Facts) { f.AppState = &argoapp.AppState{Found: true} }), StageAppPresent, false, "adopt finalize --plan p.yaml --app adopt-ns --sync"},
		{"app, sync failed", with(func(f *Facts) { f.AppState = failed }), StageAppPresent, true, "fix the sync error"},
		{"app, degraded", with(func(f *Facts) { f.AppState = degraded; f.TrackedBy = "adopt-ns" }), StageAppPresent, true, "fix what Argo CD reports unhealthy"},
		{"synced", with(func(f *Facts) { f.AppState = synced; f.TrackedBy = "adopt-ns" }), StageSynced, false, "adopt finalize --plan p.yaml --app adopt-ns"},
		{"synced, untracked", with(func(f *Facts) { f.AppState = synced }), StageAppPresent, true, "--sync"},
		{"finalized", with(func(f *Facts) { f.AppState = synced; f.TrackedBy = "adopt-ns"; f.Budget = clean; f.FinalizedAt = when }), StageFinalized, false, ""},
		{"regressed: annotation back", with(func(f *Facts) { f.AppState = synced; f.TrackedBy = "adopt-ns"; f.FinalizedAt = when }), StageRegressed, true, "--fix-runbooks"},
		{"regressed: tracking lost", with(func(f *Facts) { f.AppState = synced; f.Budget = clean; f.FinalizedAt = when }), StageRegressed, true, "--sync"},
		{"gone from the cluster", with(func(f *Facts) { f.Found = false }), StagePlanned, true, "re-run adopt plan"},
	}
	for _, c := range cases {
		o := Place(c.f)
		if o.Stage != c.stage || o.Stuck != c.stuck || !strings.Contains(o.Next, c.next) || (c.stage != StageFinalized && o.Reason == "") {
			t.Errorf("%s: stage %s stuck %v reason %q next %q; want %s stuck %v next containing %q", c.name, o.Stage, o.Stuck, o.Reason, o.Next, c.stage, c.stuck, c.next)
		}
	}
	r := Assemble(when, []PlanRef{{ID: "p", Branch: "adopt/x"}}, []Facts{cases[0].f, cases[7].f, cases[10].f}, nil, nil)
	if r.Counts.Planned != 1 || r.Counts.Synced != 1 || r.Counts.Regressed != 1 || r.Stuck != 1 || len(r.Applications) != 1 || r.Applications[0].Stage != StageRegressed || r.Applications[0].Objects != 3 {
		t.Fatalf("assemble: %+v %+v", r.Counts, r.Applications)
	}
	if a := r.Applications[0]; a.Ignore != app.IgnoreSummary() || len(a.Ignored) != 1 || a.Ignored[0] != "ConfigMap ns/cm: managedFieldsManagers [writer] (data.a): writer owns data.a" {
		t.Errorf("assemble: ignore %q %q; want the plan's entry", a.Ignore, a.Ignored)
	}
}

func TestHistoryRecordsOneFilePerRun(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < 2; i++ {
		if _, err := Record(dir, Snapshot{Time: t0.Add(time.Duration(i) * time.Hour), Counts: Counts{Planned: 2 - i, Finalized: i}}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := History(dir)
	if err != nil || len(h) != 2 || h[0].Counts.Planned != 2 || h[1].Counts.Finalized != 1 {
		t.Fatalf("history %+v, %v", h, err)
	}
	if _, err := Record(dir, h[0]); err == nil {
		t.Fatal("a second snapshot at the same time overwrote the first")
	}
	if h, err := History(t.TempDir() + "/missing"); err != nil || len(h) != 0 {
		t.Fatalf("missing dir: %v %v", h, err)
	}
}
