package reconcile

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// declaredOutcomes are the values of the constants declared under "Outcomes of
// one group in one run." in reconcile.go, read from the source: a new
// outcome is a case TestRunEveryOutcome must add.
func declaredOutcomes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reconcile.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), "Outcomes of one group") {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("outcome %v is not a string literal", v)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d outcomes in reconcile.go (%v): the declaration moved", len(out), out)
	}
	return out
}

// runWith is one run of p with o's caps and s's seams (the world's
// unless changed), with the store's records as the world holds them.
func (w *world) runWith(p *plan.Plan, o Options, s Seams) *Report {
	w.t.Helper()
	o.Plan, o.Cluster, o.Records = p, "c", maps.Clone(w.records)
	rep, err := Run(context.Background(), o, s)
	if err != nil {
		w.t.Fatalf("run: %v", err)
	}
	return rep
}

// TestRunEveryOutcome: each outcome a group can end a run with, reached
// through Run (both passes, the lock, the seams) over the fake provider,
// Git and store, from the world that leads to it; with the one sentence
// that says why, and the report's counts. Every outcome reconcile.go
// declares has a case here, and the metrics count each.
func TestRunEveryOutcome(t *testing.T) {
	cases := []struct {
		outcome string
		// act brings the world to the run and runs it, returning its
		// report and the branch whose group is judged.
		act func(t *testing.T, w *world) (*Report, string)
		why string
	}{
		{Opened, func(t *testing.T, w *world) (*Report, string) {
			return w.runWith(testPlan(t, "a"), Options{}, w.seams()), branch
		}, "pull request https://git.example/pulls/1"},
		{Updated, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			return w.runWith(testPlan(t, "a", "b"), Options{}, w.seams()), branch
		}, "new commit"},
		{Unchanged, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			return w.runWith(testPlan(t, "a"), Options{}, w.seams()), branch
		}, "nothing new since the last run"},
		{Declined, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.close()
			return w.runWith(testPlan(t, "a"), Options{}, w.seams()), branch
		}, "closed without merging; not proposed again until one of its objects changes"},
		{Reproposed, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.close()
			return w.runWith(testPlan(t, "a", "b"), Options{}, w.seams()), branch
		}, "pull request https://git.example/pulls/2"},
		{HeldByUser, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.personPushes()
			return w.runWith(testPlan(t, "a", "b"), Options{}, w.seams()), branch
		}, "was pushed to by someone else"},
		{Waiting, func(t *testing.T, w *world) (*Report, string) {
			// adopt-cart comes first and takes the one place.
			return w.runWith(appsPlan(t, map[string][]string{"cart": {"x"}, "shop": {"a"}}), Options{MaxOpenPRs: 1}, w.seams()), branch
		}, "1 pull requests open, --max-open-prs 1"},
		{TooBig, func(t *testing.T, w *world) (*Report, string) {
			return w.runWith(testPlan(t, "a", "b"), Options{MaxObjects: 1}, w.seams()), branch
		}, "2 objects, more than --max-objects-per-pr 1"},
		{Merged, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.merge()
			return w.runWith(testPlan(t, "a"), Options{}, w.seams()), branch
		}, "waiting"},
		{Finalized, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.merge()
			s := w.seams()
			s.Finalize = func(_ context.Context, b string) (FinalizeResult, error) {
				return FinalizeResult{Outcome: Finalized, Finalized: 1, Why: "finalized 1 object(s) of " + b}, nil
			}
			return w.runWith(testPlan(t, "a"), Options{}, s), branch
		}, "finalized 1 object(s) of " + branch},
		{Done, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.merge()
			w.finalized("a")
			// Another group keeps the run from having nothing to do.
			return w.runWith(appsPlan(t, map[string][]string{"cart": {"x"}}), Options{}, w.seams()), branch
		}, "finalized by an earlier run"},
		{Failed, func(t *testing.T, w *world) (*Report, string) {
			w.fail = "open"
			return w.runWith(testPlan(t, "a"), Options{}, w.seams()), branch
		}, "open: the server answered 502"},
		{Obsolete, func(t *testing.T, w *world) (*Report, string) {
			w.want(w.run(testPlan(t, "a")), Opened)
			w.gone["a"] = true
			return w.runWith(nothing(t), Options{}, w.seams()), branch
		}, "was closed with a comment: its objects are gone or tracked by Argo CD now (1 gone, 0 tracked)"},
	}
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.outcome] = true
		t.Run(tc.outcome, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["b"], w.live["x"] = "1", "2", "3"
			rep, b := tc.act(t, w)
			g := group(rep, b)
			if g == nil {
				t.Fatalf("no group on %s in %+v", b, rep.Groups)
			}
			if g.Outcome != tc.outcome || !strings.Contains(g.Why, tc.why) {
				t.Errorf("outcome %q (%s), want %q saying %q", g.Outcome, g.Why, tc.outcome, tc.why)
			}
			if n := rep.Count(tc.outcome); n != 1 {
				t.Errorf("Count(%s) = %d, want 1", tc.outcome, n)
			}
			switch tc.outcome {
			case Finalized:
				if rep.Finalized != 1 || rep.MergedPRs != 1 {
					t.Errorf("finalized %d, merged %d: want 1 and 1", rep.Finalized, rep.MergedPRs)
				}
			case Done, Merged:
				if rep.MergedPRs != 1 {
					t.Errorf("merged pull requests %d, want 1", rep.MergedPRs)
				}
			case Opened, Updated, Unchanged, HeldByUser, Reproposed:
				if rep.OpenPRs != 1 {
					t.Errorf("open pull requests %d, want 1", rep.OpenPRs)
				}
			case Obsolete, Declined, TooBig:
				if rep.OpenPRs != 0 {
					t.Errorf("open pull requests %d, want 0", rep.OpenPRs)
				}
			}
		})
	}
	declared := declaredOutcomes(t)
	for _, o := range declared {
		if !covered[o] {
			t.Errorf("outcome %q (reconcile.go) has no case in TestRunEveryOutcome", o)
		}
	}
	// The metrics count each outcome (adopt_groups): the same set.
	if got, want := slices.Sorted(slices.Values(outcomes)), slices.Sorted(slices.Values(declared)); !slices.Equal(got, want) {
		t.Errorf("the metrics count outcomes %v; reconcile.go declares %v", got, want)
	}
}

// counting wraps s's Lock, Fetch and the provider's pull-request list to
// count their calls.
type counting struct {
	locks, lists int
	fetches      map[string]int // object name → reads
}

func (c *counting) wrap(s Seams, w *world) Seams {
	c.fetches = map[string]int{}
	lock := s.Lock
	s.Lock = func(ctx context.Context) (func(), error) { c.locks++; return lock(ctx) }
	fetch := s.Fetch
	s.Fetch = func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		c.fetches[name]++
		return fetch(ctx, gvr, ns, name)
	}
	s.PRs = listCounter{w, &c.lists}
	return s
}

type listCounter struct {
	*world
	n *int
}

func (l listCounter) ListOpenPRs(ctx context.Context, r gitops.RepoRef, base, prefix string) ([]gitops.PRStatus, error) {
	*l.n++
	return l.world.ListOpenPRs(ctx, r, base, prefix)
}

// TestPassDecidesFromReadsThenWrites (issue 43): a run decides every
// group from reads before it takes the lock; a run with nothing to write
// never takes it, and a run with nothing in play asks the provider
// nothing. A group with new objects is read live once a run: the pass
// under the lock decides from the first pass's reads (the write's export
// reads them again, which is apply's). A lock that cannot be taken fails
// the run before any write.
func TestPassDecidesFromReadsThenWrites(t *testing.T) {
	w := newWorld(t)
	w.live["a"], w.live["b"] = "1", "2"
	var c counting
	s := c.wrap(w.seams(), w)

	rep := w.runWith(testPlan(t, "a"), Options{}, s)
	if g := group(rep, branch); g == nil || g.Outcome != Opened || c.locks != 1 {
		t.Fatalf("first run: groups %+v, %d locks; want opened under one lock", rep.Groups, c.locks)
	}
	if c.lists != 2 {
		t.Errorf("the first run listed the open pull requests %d times, want twice (once a pass)", c.lists)
	}

	// Nothing new: no lock, one pass, nothing written.
	c.locks, c.lists, c.fetches = 0, 0, map[string]int{}
	pushes, opens := w.pushes, w.opens
	if g := group(w.runWith(testPlan(t, "a"), Options{}, s), branch); g == nil || g.Outcome != Unchanged {
		t.Fatalf("second run: %+v, want unchanged", g)
	}
	if c.locks != 0 || c.lists != 1 || w.pushes != pushes || w.opens != opens || c.fetches["a"] != 0 {
		t.Errorf("a run with nothing new: %d locks, %d lists, %d pushes, %d edits, %d reads of a; want one list and nothing else",
			c.locks, c.lists, w.pushes-pushes, w.opens-opens, c.fetches["a"])
	}

	// A new object: each of the group's objects is read once to decide,
	// over both passes.
	c.locks, c.lists, c.fetches = 0, 0, map[string]int{}
	if g := group(w.runWith(testPlan(t, "a", "b"), Options{}, s), branch); g == nil || g.Outcome != Updated {
		t.Fatalf("third run: %+v, want updated", g)
	}
	if c.locks != 1 || c.fetches["a"] != 1 || c.fetches["b"] != 1 {
		t.Errorf("a run with a new object: %d locks, reads %v; want one lock and each object read once", c.locks, c.fetches)
	}

	// Nothing proposed and no record left to finalize: nothing asked.
	idle := newWorld(t)
	var ic counting
	if rep := idle.runWith(nothing(t), Options{}, ic.wrap(idle.seams(), idle)); !rep.NothingToDo || ic.lists != 0 || ic.locks != 0 {
		t.Errorf("nothing in play: nothing to do %v, %d lists, %d locks; want true, none, none", rep.NothingToDo, ic.lists, ic.locks)
	}

	// The lock refused: the run fails, nothing is pushed or edited.
	locked := errors.New("the Lease is held by other-runner")
	s.Lock = func(context.Context) (func(), error) { return nil, locked }
	pushes, opens = w.pushes, w.opens
	w.live["c"] = "3"
	if _, err := Run(context.Background(), Options{Plan: testPlan(t, "a", "b", "c"), Cluster: "c", Records: maps.Clone(w.records)}, s); !errors.Is(err, locked) {
		t.Errorf("a run whose lock is refused: %v, want the lock's error", err)
	}
	if w.pushes != pushes || w.opens != opens {
		t.Errorf("a run whose lock was refused wrote: %d pushes, %d edits", w.pushes-pushes, w.opens-opens)
	}
}

// TestRunGroupsByTeam (moved from cmd/adopt's TestReconcileGroupsByTeam):
// with Teams from namespace labels (TeamsByLabel), the Applications of
// two payments namespaces share one pull request on
// adopt/<cluster>/team-payments, search's one is its own team's, and an
// unlabelled namespace's Application is a group of its own; a new object
// in a payments namespace adds a commit to the team's pull request, never
// a second one, and leaves the other groups unchanged.
func TestRunGroupsByTeam(t *testing.T) {
	objects := map[string][]string{"pay1": {"s1"}, "pay2": {"s2"}, "search": {"s3"}, "loose": {"s4"}}
	labels := map[string]map[string]string{"pay1": {"example.com/team": "Payments"}, "pay2": {"example.com/team": "Payments"}, "search": {"example.com/team": "search", "other": "x"}, "loose": {"other": "y"}}
	w := newWorld(t)
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		w.live[n] = n
	}
	p := appsPlan(t, objects)
	teams := TeamsByLabel(p, "example.com/team", labels)
	if want := map[string]string{"adopt-pay1": "team-payments", "adopt-pay2": "team-payments", "adopt-search": "team-search"}; !maps.Equal(teams, want) {
		t.Fatalf("TeamsByLabel: %v, want %v", teams, want)
	}
	byBranch := func(rep *Report) map[string]Group {
		out := map[string]Group{}
		for _, g := range rep.Groups {
			out[g.Branch] = g
		}
		return out
	}
	groups := byBranch(w.runWith(p, Options{Teams: teams}, w.seams()))
	pay, search, own := groups["adopt/c/team-payments"], groups["adopt/c/team-search"], groups["adopt/c/adopt-loose"]
	if len(groups) != 3 || pay.Outcome != Opened || !slices.Equal(pay.Apps, []string{"adopt-pay1", "adopt-pay2"}) || pay.Objects != 2 || pay.App != "team-payments" {
		t.Errorf("groups %+v; want team-payments opened with the two payments Applications", groups)
	}
	if search.Outcome != Opened || !slices.Equal(search.Apps, []string{"adopt-search"}) || own.Outcome != Opened || len(own.Apps) != 0 || own.Objects != 1 {
		t.Errorf("team-search %+v, loose %+v; want each opened, loose with no team", search, own)
	}
	if sub := w.plans["adopt/c/team-payments"]; sub == nil || len(sub.Applications) != 2 || len(sub.Objects) != 2 {
		t.Errorf("the team's stored plan %+v, want both payments Applications and their objects", sub)
	}

	objects["pay2"] = append(objects["pay2"], "s5")
	p = appsPlan(t, objects)
	opens := len(w.prs)
	groups = byBranch(w.runWith(p, Options{Teams: TeamsByLabel(p, "example.com/team", labels)}, w.seams()))
	if g := groups["adopt/c/team-payments"]; g.Outcome != Updated || g.Objects != 3 {
		t.Errorf("team-payments after a new object: %+v; want updated with 3 objects", g)
	}
	for _, b := range []string{"adopt/c/team-search", "adopt/c/adopt-loose"} {
		if g := groups[b]; g.Outcome != Unchanged {
			t.Errorf("%s after a payments change: %+v; want unchanged", b, g)
		}
	}
	if len(w.prs) != opens {
		t.Errorf("a new object opened %d more pull request(s)", len(w.prs)-opens)
	}
}

// TestTeamsReadsNamespaceLabels (moved from cmd/adopt's
// TestReconcileGroupsByTeam): RunOnce's --group-prs-by reads each
// destination namespace's labels on a real kube-apiserver, once each, and
// groups by them (TeamsByLabel); a namespace it cannot read stops the run
// naming the namespace and the grant; without the option nothing is read.
func TestTeamsReadsNamespaceLabels(t *testing.T) {
	ctx := context.Background()
	pay1, pay2, search, loose := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	for ns, team := range map[string]string{pay1: "payments", pay2: "payments", search: "search"} {
		n, err := cp.Clientset().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["team"] = team
		if _, err := cp.Clientset().CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p := appsPlan(t, map[string][]string{pay1: {"a"}, pay2: {"b"}, search: {"c"}, loose: {"d"}})
	o := RunOptions{GroupPRsBy: "team", Apply: apply.RunOptions{Cluster: apply.Cluster{Kube: cp.Clientset()}}}
	teams, err := o.teams(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"adopt-" + pay1: "team-payments", "adopt-" + pay2: "team-payments", "adopt-" + search: "team-search"}
	if !maps.Equal(teams, want) {
		t.Errorf("teams %v, want %v", teams, want)
	}
	gone := appsPlan(t, map[string][]string{pay1: {"a"}, "no-such-namespace": {"x"}})
	if _, err := o.teams(ctx, gone); err == nil || !strings.Contains(err.Error(), "--group-prs-by team: read namespace no-such-namespace") || !strings.Contains(err.Error(), "grant get on namespaces") {
		t.Errorf("a namespace that cannot be read: %v", err)
	}
	if teams, err := (RunOptions{}).teams(ctx, gone); teams != nil || err != nil {
		t.Errorf("without --group-prs-by: %v, %v; want nothing read", teams, err)
	}
}
