package status

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// declaredStages are the Stage constants status.go declares, read from
// the source.
func declaredStages(t *testing.T) []Stage {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "status.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Stage
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Stage" {
				continue
			}
			for _, val := range v.Values {
				s, err := strconv.Unquote(val.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, Stage(s))
			}
		}
	}
	return out
}

// stuckRules counts the assignments to an Object's Stuck in stage.go:
// each is a way an object gets stuck, and has a case below.
func stuckRules(t *testing.T) int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "stage.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		a, ok := node.(*ast.AssignStmt)
		if !ok {
			return true
		}
		for _, l := range a.Lhs {
			if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Stuck" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "o" {
					n++
				}
			}
		}
		return true
	})
	return n
}

// TestPlaceEveryBranch: every way Place decides an object's stage, from
// facts alone: each stage status.go declares, each way an object gets
// stuck (one case per assignment to Stuck in stage.go, at least), the
// reason in one sentence and the command that moves it on.
func TestPlaceEveryBranch(t *testing.T) {
	ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns", Name: "cm"}}
	secret := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "ns", Name: "db"}}
	sealed := secret
	sealed.SecretForm = &plan.SecretForm{Form: plan.SecretFormSealed}
	sops := secret
	sops.SecretForm = &plan.SecretForm{Form: plan.SecretFormSops, Sops: &plan.SopsForm{File: "adopted/ns/secret-db.yaml"}}
	eso := secret
	eso.SecretForm = &plan.SecretForm{Form: plan.SecretFormESO}
	app := plan.Application{Name: "adopt-ns"}
	clean := budget.MeasureBudget(map[string]string{"team": "x"})
	dirty := budget.MeasureBudget(map[string]string{budget.LastAppliedKey: "{}"})
	synced := &argoapp.AppState{Found: true, Phase: argoapp.PhaseSucceeded, History: []string{"abcdef0123456789"}, Revision: "abcdef0123456789", Sync: argoapp.SyncSynced, Health: argoapp.HealthHealthy}
	health := func(h string) *argoapp.AppState {
		s := *synced
		s.Health = h
		return &s
	}
	when := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	base := Facts{PlanID: "p", PlanFile: "p.yaml", Repo: "https://git.example.invalid/o/r.git", App: app, Object: ob, ArgoNS: "argocd", AppFile: "apps/adopt-ns.yaml", Found: true, GitRead: true, Budget: dirty}
	with := func(f func(*Facts)) Facts { c := base; f(&c); return c }
	pr := func(state string) *gitops.PRStatus {
		return &gitops.PRStatus{Number: 3, State: state, URL: "https://x/pr/3", Base: "main"}
	}
	cases := []struct {
		name  string
		f     Facts
		stage Stage
		stuck bool
		// rule names the way a stuck object got stuck (one per
		// assignment to Stuck in stage.go).
		rule   string
		reason string
		next   string
	}{
		{"planned", base, StagePlanned, false, "", "not in any branch yet", "adopt apply --plan p.yaml --repo https://git.example.invalid/o/r.git --open-pr"},
		{"planned, no repo", with(func(f *Facts) { f.GitRead, f.Repo = false, "" }), StagePlanned, false, "", "no --repo given", "--repo <gitops repo>"},
		{"not found", with(func(f *Facts) { f.Found = false }), StagePlanned, true, "gone", "not found in the cluster: deleted or renamed since the plan; not in any branch yet", "re-run adopt plan; adopt apply"},
		{"not readable", with(func(f *Facts) { f.Found, f.ReadErr = false, "forbidden" }), StagePlanned, true, "gone", "not readable: forbidden;", "re-run adopt plan"},
		{"pushed, no pull request", with(func(f *Facts) { f.Pushed = true }), StageInReview, false, "", "branch pushed, no pull request", "adopt apply --plan p.yaml"},
		{"pushed, pull request not looked up", with(func(f *Facts) { f.Pushed, f.PRNote = true, "no token" }), StageInReview, false, "", "pull request not looked up: no token", "review and merge the branch"},
		{"pull request open", with(func(f *Facts) { f.Pushed, f.PR = true, pr(gitops.PROpen) }), StageInReview, false, "", "pull request #3 open", "review and merge https://x/pr/3"},
		{"pull request closed", with(func(f *Facts) { f.PR = pr(gitops.PRClosed) }), StageInReview, true, "declined", "closed without merging", "(opens a new pull request)"},
		{"pull request merged, base does not hold it", with(func(f *Facts) { f.PR = pr(gitops.PRMerged) }), StageInReview, false, "", "merged, but the base branch does not hold the adoption", "check the merge into main"},
		{"merged", with(func(f *Facts) { f.Pushed, f.Merged = true, true }), StageMerged, false, "", "Application argocd/adopt-ns is not in the cluster yet", "kubectl apply -n argocd -f apps/adopt-ns.yaml"},
		{"application, no sync yet", with(func(f *Facts) { f.AppState = &argoapp.AppState{Found: true} }), StageAppPresent, false, "", "no sync yet", "--app adopt-ns --sync"},
		{"application, a sync running", with(func(f *Facts) { f.AppState = &argoapp.AppState{Found: true, Operation: true} }), StageAppPresent, false, "", "a sync operation is running", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"application, sync failed", with(func(f *Facts) {
			f.AppState = &argoapp.AppState{Found: true, Phase: argoapp.PhaseFailed, Message: "too long"}
		}), StageAppPresent, true, "sync-failed", "last sync Failed: too long", "fix the sync error, merge the fix"},
		{"application, progressing", with(func(f *Facts) { f.AppState, f.TrackedBy = health("Progressing"), "adopt-ns" }), StageAppPresent, false, "", "health Progressing", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"application, degraded", with(func(f *Facts) { f.AppState, f.TrackedBy = health("Degraded"), "adopt-ns" }), StageAppPresent, true, "unhealthy", "health Degraded", "fix what Argo CD reports unhealthy"},
		{"application, missing", with(func(f *Facts) { f.AppState = health("Missing") }), StageAppPresent, true, "unhealthy", "health Missing", "fix what Argo CD reports unhealthy"},
		{"application, suspended", with(func(f *Facts) { f.AppState = health("Suspended") }), StageAppPresent, true, "unhealthy", "health Suspended", "fix what Argo CD reports unhealthy"},
		{"application, explained", with(func(f *Facts) {
			f.AppState, f.Explain = &argoapp.AppState{Found: true}, []string{"  ConfigMap ns/cm: OutOfSync  "}
		}), StageAppPresent, false, "", "no sync yet (ConfigMap ns/cm: OutOfSync)", "--sync"},
		{"synced, tracked elsewhere", with(func(f *Facts) { f.AppState, f.TrackedBy = synced, "other" }), StageAppPresent, true, "untracked", "does not carry its tracking (it names other)", "--sync"},
		{"synced, a Secret left out", with(func(f *Facts) { f.Object, f.AppState = secret, synced }), StageAppPresent, true, "secret", "a Secret: adopt apply left it out of Git", "secret-management source"},
		{"sealed, no sync yet", with(func(f *Facts) { f.Object, f.AppState = sealed, &argoapp.AppState{Found: true} }), StageAppPresent, false, "", "must be marked managed before the first sync", "--app adopt-ns --sync"},
		{"sealed, synced, not taken over", with(func(f *Facts) { f.Object, f.AppState = sealed, synced }), StageAppPresent, true, "not-taken-over", "its SealedSecret does not control the Secret yet", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"sops, synced, not tracked", with(func(f *Facts) { f.Object, f.AppState = sops, synced }), StageAppPresent, true, "sops-untracked", "through a plugin that decrypts it", "set up the plugin, then adopt finalize --plan p.yaml --app adopt-ns --sync"},
		{"sealed, taken over", with(func(f *Facts) { f.Object, f.AppState, f.SealedBy = sealed, synced, "db" }), StageFinalized, false, "", "taken over in place by SealedSecret db", ""},
		{"eso, no sync yet", with(func(f *Facts) { f.Object, f.AppState = eso, &argoapp.AppState{Found: true} }), StageAppPresent, false, "", "proves its store holds the Secret's value (pushing it, unless apply --push-secrets did) before the first sync", "--app adopt-ns --sync"},
		{"eso, synced, not taken over", with(func(f *Facts) { f.Object, f.AppState = eso, synced }), StageAppPresent, true, "eso-not-taken-over", "its ExternalSecret does not control the Secret yet", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"eso, taken over, last-applied kept", with(func(f *Facts) { f.Object, f.AppState, f.ExternalBy = eso, synced, "db" }), StageSynced, false, "", "taken over in place by ExternalSecret db, which keeps", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"eso, taken over", with(func(f *Facts) { f.Object, f.AppState, f.ExternalBy, f.Budget = eso, synced, "db", clean }), StageFinalized, false, "", "taken over in place by ExternalSecret db", ""},
		{"synced and healthy", with(func(f *Facts) { f.AppState, f.TrackedBy = synced, "adopt-ns" }), StageSynced, false, "", "synced and healthy at abcdef012345; ready to finalize", "adopt finalize --plan p.yaml --app adopt-ns"},
		{"synced, client-side apply still owns fields", with(func(f *Facts) { f.AppState, f.TrackedBy, f.Budget, f.CSAManager = synced, "adopt-ns", clean, true }), StageSynced, false, "", "ready to finalize", "adopt finalize"},
		{"synced, nothing left to remove", with(func(f *Facts) { f.AppState, f.TrackedBy, f.Budget = synced, "adopt-ns", clean }), StageFinalized, false, "", "nothing left to remove (no journal entry)", ""},
		{"finalized", with(func(f *Facts) { f.TrackedBy, f.Budget, f.FinalizedAt = "adopt-ns", clean, when }), StageFinalized, false, "", "finalized 2025-01-02T03:04:05Z", ""},
		{"finalized, gone since", with(func(f *Facts) { f.Found, f.Budget, f.FinalizedAt = false, clean, when }), StagePlanned, true, "gone", "not found in the cluster", "re-run adopt plan"},
		{"regressed: annotation back", with(func(f *Facts) { f.TrackedBy, f.FinalizedAt = "adopt-ns", when }), StageRegressed, true, "annotation-back", budget.LastAppliedKey + " is back (50 bytes)", "--fix-runbooks"},
		{"regressed: tracking lost", with(func(f *Facts) { f.TrackedBy, f.Budget, f.FinalizedAt = "other", clean, when }), StageRegressed, true, "tracking-lost", "no longer carries the tracking of Application adopt-ns (it names other)", "--app adopt-ns --sync"},
		{"a fleet plan's object", with(func(f *Facts) { f.Cluster, f.AppState, f.TrackedBy = "w1", synced, "adopt-ns" }), StageSynced, false, "", "ready to finalize", "adopt finalize --plan p.yaml"},
	}
	reached, rules := map[Stage]bool{}, map[string]bool{}
	for _, c := range cases {
		o := Place(c.f)
		reached[o.Stage] = true
		if c.stuck != (c.rule != "") {
			t.Fatalf("%s: a stuck case names its rule, and only a stuck case", c.name)
		}
		rules[c.rule] = c.stuck
		if o.Stage != c.stage || o.Stuck != c.stuck || !strings.Contains(o.Reason, c.reason) || !strings.Contains(o.Next, c.next) || c.next == "" && o.Next != "" {
			t.Errorf("%s: stage %s stuck %v reason %q next %q; want %s stuck %v, reason containing %q, next containing %q",
				c.name, o.Stage, o.Stuck, o.Reason, o.Next, c.stage, c.stuck, c.reason, c.next)
		}
		if c.f.Cluster != "" && strings.Contains(o.Next, "--app") {
			t.Errorf("%s: next %q; a fleet plan is finalized whole, without --app", c.name, o.Next)
		}
	}
	declared := declaredStages(t)
	if !slices.Equal(declared, Stages) {
		t.Errorf("Stages %v; status.go declares %v", Stages, declared)
	}
	for _, s := range declared {
		if !reached[s] {
			t.Errorf("no case places an object at stage %s", s)
		}
	}
	delete(rules, "")
	if n := stuckRules(t); len(rules) != n {
		t.Errorf("the cases name %d ways to get stuck, stage.go has %d assignments to Stuck: each way needs its case", len(rules), n)
	}
}
