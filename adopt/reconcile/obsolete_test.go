package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// appsPlan proposes one Application per namespace, adopt-<namespace>, of
// the ConfigMaps named.
func appsPlan(t *testing.T, objects map[string][]string) *plan.Plan {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind}
	for _, ns := range slices.Sorted(maps.Keys(objects)) {
		app := plan.Application{Name: "adopt-" + ns, Namespace: ns, Project: "default", Source: "export", SourcePath: "adopted/" + ns}
		for _, n := range objects[ns] {
			ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: n}, App: app.Name}
			p.Objects = append(p.Objects, ob)
			app.Objects = append(app.Objects, ob.Ref.String())
		}
		p.Applications = append(p.Applications, app)
	}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

// report is one reconcile run of p with the cap maxOpen: its report.
func (w *world) report(p *plan.Plan, maxOpen int) *Report {
	w.t.Helper()
	rep, err := Run(context.Background(), Options{Plan: p, Cluster: "c", Records: maps.Clone(w.records), MaxOpenPRs: maxOpen}, w.seams())
	if err != nil {
		w.t.Fatalf("run: %v", err)
	}
	return rep
}

// group is the report's group on branch b, or nil.
func group(rep *Report, b string) *Group {
	for i := range rep.Groups {
		if rep.Groups[i].Branch == b {
			return &rep.Groups[i]
		}
	}
	return nil
}

// nothing is a plan that proposes no group (the group's objects are gone,
// tracked, or out of this run's scope).
func nothing(t *testing.T) *plan.Plan { return appsPlan(t, nil) }

// TestRunClosesObsoletePullRequest (issue 43): an open pull request whose
// objects are all gone or tracked by Argo CD now is closed with a comment
// saying so, once, under the lock; it counts as open no longer, and the
// store records it as closed by reconcile.
func TestRunClosesObsoletePullRequest(t *testing.T) {
	for _, tc := range []struct {
		name          string
		gone, tracked []string
		say           string
	}{
		{"all gone", []string{"a", "b"}, nil, "(2 gone, 0 tracked)"},
		{"all tracked", nil, []string{"a", "b"}, "(0 gone, 2 tracked)"},
		{"one gone, one tracked", []string{"a"}, []string{"b"}, "(1 gone, 1 tracked)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["b"] = "1", "2"
			w.want(w.run(testPlan(t, "a", "b")), Opened)
			number := w.newest().Number
			for _, n := range tc.gone {
				w.gone[n] = true
			}
			for _, n := range tc.tracked {
				w.tracked[n] = true
			}
			pushes, opens := w.pushes, w.opens
			rep := w.report(nothing(t), 0)
			g := group(rep, branch)
			if g == nil || g.Outcome != Obsolete {
				t.Fatalf("groups %+v, want %s closed-obsolete", rep.Groups, branch)
			}
			if !strings.Contains(g.Why, tc.say) || g.Objects != 2 {
				t.Errorf("why %q, objects %d: want %s and 2", g.Why, g.Objects, tc.say)
			}
			if w.newest().State != gitops.PRClosed || w.closes != 1 || rep.OpenPRs != 0 {
				t.Errorf("pull request %s, %d closes, %d open: want closed once, 0 open", w.newest().State, w.closes, rep.OpenPRs)
			}
			if c := w.comments[0]; !strings.HasPrefix(c, "Closed by adopt reconcile:") || !strings.Contains(c, tc.say) || !strings.Contains(c, "not a decline") {
				t.Errorf("comment %q", c)
			}
			if w.records[branch].Autoclosed != number {
				t.Errorf("record %+v, want autoclosed #%d", w.records[branch], number)
			}
			if w.pushes != pushes || w.opens != opens {
				t.Errorf("closing pushed or edited a pull request")
			}
			// The next run closes nothing and reports nothing of it.
			rep = w.report(nothing(t), 0)
			if w.closes != 1 || len(rep.Groups) != 0 {
				t.Errorf("the next run: %d closes, groups %+v", w.closes, rep.Groups)
			}
		})
	}
}

// TestRunLeavesPullRequestsNotObsolete (issue 43): scope alone never
// closes a pull request. One object still existing untracked, a stored
// plan missing, a group out of this run's scope (another -n or
// --group-prs-by: its objects are still there), or a branch a person
// pushed to: the pull request stays open and counts as open.
func TestRunLeavesPullRequestsNotObsolete(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
	}{
		{"one still untracked", func(w *world) { w.gone["a"] = true }},
		{"one still untracked, one tracked", func(w *world) { w.tracked["a"] = true }},
		{"stored plan missing", func(w *world) { w.gone["a"], w.gone["b"] = true, true; delete(w.plans, branch) }},
		{"no record", func(w *world) { w.gone["a"], w.gone["b"] = true, true; delete(w.records, branch) }},
		{"out of scope", func(*world) {}},
		{"out of the token's reach", func(w *world) {
			w.gone["a"] = true
			w.refused["b"] = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "b", errors.New("RBAC"))
		}},
		{"held by a person", func(w *world) { w.personPushes(); w.gone["a"], w.gone["b"] = true, true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["b"] = "1", "2"
			w.want(w.run(testPlan(t, "a", "b")), Opened)
			tc.setup(w)
			rep := w.report(nothing(t), 0)
			// Without a record the run has nothing to do: it asks nothing.
			if w.closes != 0 || w.newest().State != gitops.PROpen || rep.OpenPRs != 1 && !rep.NothingToDo || len(rep.Groups) != 0 {
				t.Errorf("%d closes, pull request %s, %d open, groups %+v: want it left open and counted", w.closes, w.newest().State, rep.OpenPRs, rep.Groups)
			}
		})
	}
}

// TestRunReproposesAfterAutoclose (issue 43): a pull request closed as
// obsolete is no decline: the same objects back as they were, or a new
// object of the group, are proposed again in a new pull request.
func TestRunReproposesAfterAutoclose(t *testing.T) {
	for _, again := range []string{"the same objects back", "a new object"} {
		t.Run(again, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"] = "1"
			w.want(w.run(testPlan(t, "a")), Opened)
			closed := w.newest().Number
			w.gone["a"] = true
			if g := group(w.report(nothing(t), 0), branch); g == nil || g.Outcome != Obsolete {
				t.Fatalf("not closed as obsolete: %+v", g)
			}
			p := testPlan(t, "a")
			if again == "a new object" {
				w.live["c"] = "3"
				p = testPlan(t, "c")
			} else {
				delete(w.gone, "a")
			}
			w.want(w.run(p), Reproposed)
			if pr := w.newest(); pr.Number == closed || pr.State != gitops.PROpen {
				t.Errorf("newest pull request #%d %s, want a new open one", pr.Number, pr.State)
			}
			w.consistent()
			w.want(w.run(p), Unchanged)
			// Closed by a person, it is a decline as before.
			w.close()
			w.want(w.run(p), Declined)
		})
	}
}

// TestRunObsoleteFreesTheLimit (issue 43): a pull request closed as
// obsolete no longer counts toward --max-open-prs, in the same run; one
// that is not obsolete still does.
func TestRunObsoleteFreesTheLimit(t *testing.T) {
	for _, obsolete := range []bool{true, false} {
		t.Run(fmt.Sprintf("obsolete %t", obsolete), func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["x"] = "1", "2"
			w.want(w.run(testPlan(t, "a")), Opened)
			if obsolete {
				w.gone["a"] = true
			}
			// The shop group is out of this run's scope; cart is new.
			rep := w.report(appsPlan(t, map[string][]string{"cart": {"x"}}), 1)
			cart := group(rep, "adopt/c/adopt-cart")
			want, open := Waiting, 1
			if obsolete {
				want, open = Opened, 1
				if g := group(rep, branch); g == nil || g.Outcome != Obsolete {
					t.Errorf("shop %+v, want closed-obsolete", g)
				}
			}
			if cart == nil || cart.Outcome != want || rep.OpenPRs != open {
				t.Errorf("cart %+v, %d open: want %s, %d open", cart, rep.OpenPRs, want, open)
			}
			if n := rep.Count(Obsolete); obsolete && n != 1 || !obsolete && n != 0 {
				t.Errorf("%d closed-obsolete", n)
			}
		})
	}
}

// TestRunObsoleteCloseFailure: a close the provider refuses fails the
// group and leaves the pull request open (still counted); the next run
// closes it.
func TestRunObsoleteCloseFailure(t *testing.T) {
	w := newWorld(t)
	w.live["a"] = "1"
	w.want(w.run(testPlan(t, "a")), Opened)
	w.gone["a"] = true
	w.fail = "close"
	rep := w.report(nothing(t), 0)
	if g := group(rep, branch); g == nil || g.Outcome != Failed || w.newest().State != gitops.PROpen || rep.OpenPRs != 1 {
		t.Fatalf("group %+v, pull request %s, %d open: want failed, open, counted", g, w.newest().State, rep.OpenPRs)
	}
	if g := group(w.report(nothing(t), 0), branch); g == nil || g.Outcome != Obsolete || w.newest().State != gitops.PRClosed {
		t.Fatalf("the next run: %+v, pull request %s", g, w.newest().State)
	}
}

// TestRunObsoleteUnreadable: an object that cannot be read (not NotFound,
// not Forbidden) fails the group, saying so; the pull request stays open.
func TestRunObsoleteUnreadable(t *testing.T) {
	w := newWorld(t)
	w.live["a"], w.live["b"] = "1", "2"
	w.want(w.run(testPlan(t, "a", "b")), Opened)
	w.gone["a"] = true
	w.refused["b"] = errors.New("the server answered 500")
	rep := w.report(nothing(t), 0)
	if g := group(rep, branch); g == nil || g.Outcome != Failed || !strings.Contains(g.Why, "obsolete") || w.closes != 0 || rep.OpenPRs != 1 {
		t.Fatalf("group %+v, %d closes, %d open: want failed, none closed, 1 open", g, w.closes, rep.OpenPRs)
	}
}
