package reconcile

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// testPlan proposes one Application, adopt-shop, of the ConfigMaps names
// in namespace shop.
func testPlan(t *testing.T, names ...string) *plan.Plan {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind}
	app := plan.Application{Name: "adopt-shop", Namespace: "shop", Project: "default", Source: "export", SourcePath: "adopted/shop"}
	for _, n := range names {
		ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: n}, App: app.Name}
		p.Objects = append(p.Objects, ob)
		app.Objects = append(app.Objects, ob.Ref.String())
	}
	p.Applications = []plan.Application{app}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

const branch = "adopt/c/adopt-shop"

// world is a fake provider, Git server, store and cluster in one: what
// the seams of a run read and write, with one step made to fail once.
type world struct {
	t       *testing.T
	prs     []gitops.PRStatus // newest first
	tips    map[string]string // branch → commit
	content map[string]string // commit → the group's digest it holds
	records map[string]Record
	live    map[string]string // ConfigMap name → its data's value
	commits int
	// fail is the step that fails once: "save", "push" or "open".
	fail string
	// race: a person pushes to the branch during the next Write, after
	// the run read the pull requests.
	race bool
	// pushes and opens count what the runs wrote.
	pushes, opens int
	// liveHeads: the provider shows a closed pull request's head as its
	// branch's tip now (else as it was when it closed).
	liveHeads bool
	// gone objects are NotFound; tracked ones carry Argo CD's tracking id.
	gone, tracked map[string]bool
	// refused objects are read with this error.
	refused map[string]error
	// asked counts the branches asked about one by one (PRState).
	asked int
	// plans are the store's plans, by branch; closes and comments what
	// the runs closed as obsolete.
	plans    map[string]*plan.Plan
	closes   int
	comments []string
}

func newWorld(t *testing.T) *world {
	return &world{t: t, tips: map[string]string{}, content: map[string]string{}, records: map[string]Record{}, live: map[string]string{},
		gone: map[string]bool{}, tracked: map[string]bool{}, refused: map[string]error{}, plans: map[string]*plan.Plan{}}
}

func (w *world) commit() string {
	w.commits++
	return fmt.Sprintf("%040x", w.commits)
}

// newest is the branch's newest pull request, or nil.
func (w *world) newest() *gitops.PRStatus { return w.newestOf(branch) }

// newestOf is branch b's newest pull request, or nil.
func (w *world) newestOf(b string) *gitops.PRStatus {
	for i := range w.prs {
		if w.prs[i].Head == b {
			return &w.prs[i]
		}
	}
	return nil
}

// moveTo puts the branch at c, as the provider then shows an open pull
// request's head (with liveHeads, a closed one's too).
func (w *world) moveTo(c string) { w.moveOn(branch, c) }

// moveOn is moveTo on branch b.
func (w *world) moveOn(b, c string) {
	w.tips[b] = c
	if pr := w.newestOf(b); pr != nil && (pr.State == gitops.PROpen || w.liveHeads && pr.State == gitops.PRClosed) {
		pr.HeadSHA = c
	}
}

// personPushes is a review commit on the branch by someone else.
func (w *world) personPushes() string {
	c := w.commit()
	w.content[c] = "a person's edit"
	w.moveTo(c)
	return c
}

func (w *world) failing(step string) error {
	if w.fail != step {
		return nil
	}
	w.fail = ""
	return fmt.Errorf("%s: the server answered 502", step)
}

func (w *world) fetch(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	if err := w.refused[name]; err != nil {
		return nil, err
	}
	if w.gone[name] {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"v": w.live[name]}}}
	if w.tracked[name] {
		u.SetAnnotations(map[string]string{argoapp.AnnotationTrackingID: "adopt-" + ns + ":/ConfigMap:" + ns + "/" + name})
	}
	return u, nil
}

func (w *world) ListOpenPRs(context.Context, gitops.RepoRef, string, string) ([]gitops.PRStatus, error) {
	var open []gitops.PRStatus
	for _, pr := range w.prs {
		if pr.State == gitops.PROpen {
			open = append(open, pr)
		}
	}
	return open, nil
}

func (w *world) PRState(_ context.Context, o gitops.FindPROptions) (*gitops.PRStatus, error) {
	w.asked++
	if pr := w.newestOf(o.Head); pr != nil {
		c := *pr
		return &c, nil
	}
	return nil, nil
}

func (w *world) seams() Seams {
	return Seams{
		Lock:  func(context.Context) (func(), error) { return func() {}, nil },
		PRs:   w,
		Fetch: w.fetch,
		Write: func(ctx context.Context, sub *plan.Plan, b string, p Push) (Written, error) {
			if w.race {
				w.race = false
				w.personPushes()
			}
			tip := w.tips[b]
			if tip == "" {
				tip = gitops.BranchAbsent
			}
			if !slices.Contains(p.Expect, tip) {
				return Written{}, fmt.Errorf("push %s: %w", b, gitops.ErrBranchMoved)
			}
			holds, err := LiveDigest(ctx, w.fetch, sub)
			if err != nil {
				return Written{}, err
			}
			if tip != gitops.BranchAbsent && w.content[tip] == holds {
				return Written{Commit: tip}, nil
			}
			c := w.commit()
			w.content[c] = holds
			if err := p.Record(ctx, c); err != nil {
				return Written{}, err
			}
			if err := w.failing("push"); err != nil {
				return Written{}, err
			}
			w.pushes++
			w.moveOn(b, c)
			return Written{Commit: c, Changed: true}, nil
		},
		Save: func(_ context.Context, b string, sub *plan.Plan, rec Record) error {
			if err := w.failing("save"); err != nil {
				return err
			}
			w.records[b] = rec
			w.plans[b] = sub
			return nil
		},
		Open: func(_ context.Context, sub *plan.Plan, b string, text func(title, body string) (string, string)) (*gitops.PullRequest, error) {
			if err := w.failing("open"); err != nil {
				return nil, err
			}
			w.opens++
			title, body := text("adopt: shop", fmt.Sprintf("Adopts %d objects of shop.", len(sub.Objects)))
			if pr := w.newestOf(b); pr != nil && pr.State == gitops.PROpen {
				pr.Title, pr.Body = title, body
				return &gitops.PullRequest{Number: pr.Number, URL: pr.URL}, nil
			}
			n := int64(len(w.prs) + 1)
			pr := gitops.PRStatus{Number: n, URL: fmt.Sprintf("https://git.example/pulls/%d", n), State: gitops.PROpen, Head: b, HeadSHA: w.tips[b], Title: title, Body: body}
			w.prs = append([]gitops.PRStatus{pr}, w.prs...)
			return &gitops.PullRequest{Number: n, URL: pr.URL}, nil
		},
		Finalize: func(context.Context, string) (FinalizeResult, error) {
			return FinalizeResult{Outcome: Merged, Why: "waiting"}, nil
		},
		Load: func(_ context.Context, b string) (*plan.Plan, error) { return w.plans[b], nil },
		Close: func(_ context.Context, o gitops.ClosePROptions) error {
			if err := w.failing("close"); err != nil {
				return err
			}
			for i := range w.prs {
				if w.prs[i].Number == o.Number {
					w.prs[i].State = gitops.PRClosed
				}
			}
			w.closes++
			w.comments = append(w.comments, o.Comment)
			return nil
		},
	}
}

// run is one reconcile run of p: the group's outcome.
func (w *world) run(p *plan.Plan) Group {
	w.t.Helper()
	rep, err := Run(context.Background(), Options{Plan: p, Cluster: "c", Records: maps.Clone(w.records)}, w.seams())
	if err != nil {
		w.t.Fatalf("run: %v", err)
	}
	if len(rep.Groups) != 1 {
		w.t.Fatalf("groups %+v, want one", rep.Groups)
	}
	return rep.Groups[0]
}

func (w *world) want(g Group, outcomes ...string) {
	w.t.Helper()
	if !slices.Contains(outcomes, g.Outcome) {
		w.t.Fatalf("outcome %q (%s), want one of %v", g.Outcome, g.Why, outcomes)
	}
}

// close closes the newest pull request without merging.
func (w *world) close() { w.newest().State = gitops.PRClosed }

// consistent: the branch, its open pull request's body and the store all
// name the same commit, and there is one open pull request.
func (w *world) consistent() {
	w.t.Helper()
	pr := w.newest()
	m, ok := readMarker(pr.Body)
	if pr.State != gitops.PROpen || !ok || m.Head != w.tips[branch] || pr.HeadSHA != w.tips[branch] || w.records[branch].Head != w.tips[branch] {
		w.t.Errorf("records disagree: pull request %s head %.12s, body head %.12s, store head %.12s, branch %.12s",
			pr.State, pr.HeadSHA, m.Head, w.records[branch].Head, w.tips[branch])
	}
	open := 0
	for _, pr := range w.prs {
		if pr.State == gitops.PROpen {
			open++
		}
	}
	if open != 1 {
		w.t.Errorf("%d open pull requests, want 1", open)
	}
}

// failOnce runs p with step failing once: the group fails, having
// reached the step.
func (w *world) failOnce(p *plan.Plan, step string) {
	w.t.Helper()
	w.fail = step
	w.want(w.run(p), Failed)
	if w.fail != "" {
		w.t.Fatalf("the run did not reach the %s", step)
	}
}

// settled: the records agree (consistent), and the next run of p is
// unchanged and writes nothing.
func (w *world) settled(p *plan.Plan) {
	w.t.Helper()
	w.consistent()
	pushes, opens := w.pushes, w.opens
	w.want(w.run(p), Unchanged)
	if w.pushes != pushes || w.opens != opens {
		w.t.Errorf("the run after the records agreed wrote: %d pushes, %d pull request edits", w.pushes-pushes, w.opens-opens)
	}
}

// TestRunConvergesAfterEachFailure (issue 43): each write of a run
// (recording the group in the store, the push, the pull request's edit)
// fails in turn, when a group is opened, updated and re-proposed. The run
// after it is never held about adopt's own commit: it ends opened,
// updated, unchanged or re-proposed, and the branch, the pull request's
// body and the store agree again; the run after that changes nothing.
// Providers differ in the head they show for a closed pull request (its
// branch's tip now, or then): both are run.
func TestRunConvergesAfterEachFailure(t *testing.T) {
	for _, stage := range []string{"open", "update", "re-propose", "re-propose, live head"} {
		for _, fail := range []string{"save", "push", "open"} {
			t.Run(stage+"/"+fail, func(t *testing.T) {
				w := newWorld(t)
				w.liveHeads = strings.HasSuffix(stage, "live head")
				w.live["a"], w.live["b"] = "1", "2"
				one, two := testPlan(t, "a"), testPlan(t, "a", "b")
				p, want := two, []string{Updated, Unchanged}
				switch stage {
				case "open":
					p, want = one, []string{Opened}
				case "update":
					w.want(w.run(one), Opened)
				case "re-propose", "re-propose, live head":
					w.want(w.run(one), Opened)
					w.close()
					w.want(w.run(one), Declined)
					want = []string{Reproposed}
				}
				w.failOnce(p, fail)
				w.want(w.run(p), want...)
				w.settled(p)
			})
		}
	}
}

// TestRunLeavesAPersonAlone (issue 43): a person's commit on the branch
// (its head neither the commit the pull request's body names nor the one
// the store recorded) is held, before the run and while it runs (pushed
// after the run read the pull requests: the push is refused, never
// rebuilt over), and no write touches the branch or the pull request.
func TestRunLeavesAPersonAlone(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(fmt.Sprintf("during the run %t", during), func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["b"] = "1", "2"
			w.want(w.run(testPlan(t, "a")), Opened)
			body := w.newest().Body
			var theirs string
			if during {
				w.race = true
			} else {
				theirs = w.personPushes()
			}
			g := w.run(testPlan(t, "a", "b"))
			w.want(g, HeldByUser)
			if during {
				theirs = w.tips[branch]
				if !strings.Contains(g.Why, "someone pushed to "+branch+" during this run: left alone") {
					t.Errorf("why %q does not say the branch was pushed to during the run", g.Why)
				}
			}
			if w.tips[branch] != theirs || w.newest().Body != body {
				t.Errorf("the person's commit was pushed over, or the pull request edited")
			}
			// Every later run holds it too.
			w.want(w.run(testPlan(t, "a", "b")), HeldByUser)
			if w.tips[branch] != theirs {
				t.Errorf("a later run pushed over the person's commit")
			}
		})
	}
}

// TestRunReproposalLeavesAPersonsBranchAlone: a closed pull request's
// branch that holds a person's commit is not built on when the group's
// content changes; once deleted, the group is proposed again.
func TestRunReproposalLeavesAPersonsBranchAlone(t *testing.T) {
	w := newWorld(t)
	w.live["a"], w.live["b"] = "1", "2"
	w.want(w.run(testPlan(t, "a")), Opened)
	theirs := w.personPushes()
	w.close()
	g := w.run(testPlan(t, "a", "b"))
	w.want(g, HeldByUser)
	if w.tips[branch] != theirs || !strings.Contains(g.Why, "delete the branch") {
		t.Errorf("tip %s (a person's %s), why %q", w.tips[branch], theirs, g.Why)
	}
	delete(w.tips, branch)
	w.want(w.run(testPlan(t, "a", "b")), Reproposed)
	w.consistent()
}

// TestDeclineSurvivesAnEditedDescription (issue 43): a closed pull
// request whose description lost adopt's record is still a decline while
// the group's content is what the store recorded of it, and the group is
// proposed again once its content changed. The store's record wins over a
// description edited to say something else.
func TestDeclineSurvivesAnEditedDescription(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(body string) string
		change bool
		want   string
	}{
		{"record removed, content unchanged", func(string) string { return "Not now." }, false, Declined},
		{"record removed, content changed", func(string) string { return "Not now." }, true, Reproposed},
		{"record edited to the new content", nil, true, Reproposed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"] = "1"
			p := testPlan(t, "a")
			w.want(w.run(p), Opened)
			w.close()
			w.want(w.run(p), Declined)
			if tc.change {
				w.live["a"] = "2"
			}
			pr := w.newest()
			if tc.edit != nil {
				pr.Body = tc.edit(pr.Body)
			} else {
				// Someone writes the changed content's digest into the
				// closed pull request's record.
				now, err := LiveDigest(context.Background(), w.fetch, p)
				if err != nil {
					t.Fatal(err)
				}
				pr.Body = regexp.MustCompile(`digest=sha256:[0-9a-f]{64}`).ReplaceAllString(pr.Body, "digest="+now)
			}
			// An object was written since the store recorded the group
			// (Seen differs), so the run reads it live.
			rec := w.records[branch]
			rec.Seen = "sha256:" + strings.Repeat("0", 64)
			w.records[branch] = rec
			w.want(w.run(p), tc.want)
		})
	}
}

// TestDecide: each outcome of one group, from what the provider shows and
// what the store recorded, and which branch tips a write may push over.
func TestDecide(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.live["a"] = "1"
	p := testPlan(t, "a")
	sub, err := Sub(p, p.Applications...)
	if err != nil {
		t.Fatal(err)
	}
	now, err := LiveDigest(ctx, w.fetch, sub)
	if err != nil {
		t.Fatal(err)
	}
	planD, seen := PlanDigest(sub, ""), Seen(sub)
	old := "sha256:" + strings.Repeat("e", 64)
	const adopt, newer, person = "00000000000000000000000000000000000000a1", "00000000000000000000000000000000000000a2", "00000000000000000000000000000000000000b1"
	// seenOf: a record of another digest than now's saw other object
	// versions.
	seenOf := func(digest string) string {
		if digest == now {
			return seen
		}
		return "sha256:" + strings.Repeat("0", 64)
	}
	mark := func(digest, head string) string {
		return "Adopts shop.\n\n" + Trailer(Mark{Digest: digest, Head: head, Plan: planD, Seen: seenOf(digest)})
	}
	pr := func(state, head, body string) *gitops.PRStatus {
		return &gitops.PRStatus{Number: 7, URL: "https://git.example/pulls/7", State: state, Head: branch, HeadSHA: head, Body: body}
	}
	record := func(digest, head string, reproposes int64) map[string]Record {
		return map[string]Record{branch: {Mark: Mark{Digest: digest, Head: head, Plan: planD, Seen: seenOf(digest)}, Reproposes: reproposes}}
	}
	for _, tc := range []struct {
		name    string
		pr      *gitops.PRStatus
		records map[string]Record
		open    int
		want    string
		expect  []string
	}{
		{"no pull request", nil, nil, 0, Opened, []string{gitops.BranchAbsent}},
		{"no pull request, the open failed after a push", nil, record(now, adopt, 0), 0, Opened, []string{gitops.BranchAbsent, adopt}},
		{"no pull request, --max-open-prs reached", nil, nil, 10, Waiting, nil},
		{"open, nothing new", pr(gitops.PROpen, adopt, mark(now, adopt)), record(now, adopt, 0), 0, Unchanged, nil},
		{"open, content changed", pr(gitops.PROpen, adopt, mark(old, adopt)), nil, 0, Updated, []string{adopt}},
		{"open, the edit failed after a push", pr(gitops.PROpen, newer, mark(old, adopt)), record(now, newer, 0), 0, Updated, []string{newer}},
		{"open, the push failed after the record", pr(gitops.PROpen, adopt, mark(old, adopt)), record(now, newer, 0), 0, Updated, []string{adopt}},
		{"open, a person's commit", pr(gitops.PROpen, person, mark(old, adopt)), record(now, newer, 0), 0, HeldByUser, nil},
		{"open, a person's commit, no record", pr(gitops.PROpen, person, "edited"), nil, 0, HeldByUser, nil},
		{"open, description lost the record, nothing new", pr(gitops.PROpen, adopt, "edited"), record(now, adopt, 0), 0, Unchanged, nil},
		{"open, description lost the record, content changed", pr(gitops.PROpen, adopt, "edited"), record(old, adopt, 0), 0, Updated, []string{adopt}},
		{"closed, unchanged", pr(gitops.PRClosed, adopt, mark(now, adopt)), record(now, adopt, 0), 0, Declined, nil},
		{"closed, unchanged, no record", pr(gitops.PRClosed, adopt, mark(now, adopt)), nil, 0, Declined, nil},
		{"closed, changed", pr(gitops.PRClosed, adopt, mark(old, adopt)), record(old, adopt, 0), 0, Reproposed, []string{gitops.BranchAbsent, adopt}},
		{"closed, description lost the record, unchanged", pr(gitops.PRClosed, adopt, "edited"), record(now, adopt, 0), 0, Declined, nil},
		{"closed, description lost the record, changed", pr(gitops.PRClosed, adopt, "edited"), record(old, adopt, 0), 0, Reproposed, []string{gitops.BranchAbsent, adopt}},
		{"closed, description edited to the content", pr(gitops.PRClosed, adopt, mark(now, adopt)), record(old, adopt, 0), 0, Reproposed, []string{gitops.BranchAbsent, adopt}},
		{"closed, a re-proposal begun", pr(gitops.PRClosed, newer, mark(old, adopt)), record(now, newer, 7), 0, Reproposed, []string{gitops.BranchAbsent, adopt, newer}},
		{"closed as obsolete, unchanged", pr(gitops.PRClosed, adopt, mark(now, adopt)), map[string]Record{branch: {Mark: Mark{Digest: now, Head: adopt, Plan: planD, Seen: seen}, Autoclosed: 7}}, 0, Reproposed, []string{gitops.BranchAbsent, adopt}},
		{"closed, no record anywhere", pr(gitops.PRClosed, adopt, "edited"), nil, 0, Reproposed, []string{gitops.BranchAbsent}},
		{"merged", pr(gitops.PRMerged, adopt, mark(now, adopt)), record(now, adopt, 0), 0, Merged, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Group{App: "adopt-shop", Branch: branch, PR: tc.pr, Objects: 1}
			d, err := decide(ctx, Options{Plan: p, Cluster: "c", Records: tc.records, MaxOpenPRs: 10}, w.seams(), digests{}, p.Applications, g, tc.open)
			if err != nil {
				t.Fatal(err)
			}
			got := g.Outcome
			if d != nil {
				got = d.outcome
			}
			if got != tc.want {
				t.Fatalf("outcome %q (%s), want %q", got, g.Why, tc.want)
			}
			var expect []string
			if d != nil {
				expect = d.expect
				if d.mark.Digest != now {
					t.Errorf("the decision records digest %s, want %s", d.mark.Digest, now)
				}
			}
			if !slices.Equal(expect, tc.expect) {
				t.Errorf("expect %v, want %v", expect, tc.expect)
			}
		})
	}
}

// merge merges the newest pull request.
func (w *world) merge() { w.newest().State = gitops.PRMerged }

// finalized marks the branch's record finalized, as Store.MarkFinalized
// does once finalize is done, and the objects tracked.
func (w *world) finalized(names ...string) {
	rec := w.records[branch]
	rec.Finalized = true
	w.records[branch] = rec
	for _, n := range names {
		w.tracked[n] = true
	}
}

// TestRunExtendsAFinalizedGroup (issue 43): a new object next to a group
// whose pull request was merged and finalized is proposed in a new pull
// request on the group's branch (never left "done"), whether the merged
// branch was deleted, kept, or holds a person's commit that was merged
// (it is in the base: nothing of theirs is lost). Before the group is
// finalized, nothing is new: what the plan proposes may be the merged
// objects Argo CD has not synced. Each write failing in turn converges on
// the next run, and after the new pull request, a run changes nothing.
func TestRunExtendsAFinalizedGroup(t *testing.T) {
	for _, after := range []string{"branch kept", "branch deleted", "a person's commit merged"} {
		for _, fail := range []string{"", "save", "push", "open"} {
			t.Run(after+"/"+fail, func(t *testing.T) {
				w := newWorld(t)
				w.live["tuning"], w.live["synonyms"] = "1", "2"
				w.want(w.run(testPlan(t, "tuning")), Opened)
				switch after {
				case "branch deleted":
					delete(w.tips, branch)
				case "a person's commit merged":
					w.personPushes()
				}
				w.merge()
				merged := w.newest().Number
				// Merged, not finalized yet: the plan proposes both (Argo
				// CD has not synced tuning), and nothing is proposed.
				w.want(w.run(testPlan(t, "tuning", "synonyms")), Merged)
				w.finalized("tuning")
				p := testPlan(t, "synonyms")
				if fail != "" {
					w.failOnce(p, fail)
				}
				g := w.run(p)
				w.want(g, Opened, Updated, Unchanged)
				if fail == "" && !strings.Contains(g.Why, "adds ConfigMap shop/synonyms next to what https://git.example/pulls/1 merged") {
					t.Errorf("why %q does not say what it adds next to the merged pull request", g.Why)
				}
				if w.newest().Number == merged {
					t.Fatalf("no new pull request: the newest is still the merged #%d", merged)
				}
				w.settled(p)
			})
		}
	}
}

// TestRunHandBack (issue 43): a branch a person pushed to is held until
// they tick the rebuild box in the pull request's description; the next
// run builds on their commit (a fast-forward: their commit stays in the
// branch's history), the branch is adopt's again, the box is unticked, and
// the run after changes nothing. A box ticked while adopt's commit is the
// head changes nothing.
func TestRunHandBack(t *testing.T) {
	w := newWorld(t)
	w.live["a"], w.live["b"] = "1", "2"
	w.want(w.run(testPlan(t, "a")), Opened)
	theirs := w.personPushes()
	p := testPlan(t, "a", "b")
	held := w.run(p)
	w.want(held, HeldByUser)
	if !strings.Contains(held.Why, "tick its rebuild box") {
		t.Errorf("the held group does not say how to hand it back: %s", held.Why)
	}
	pr := w.newest()
	if !strings.Contains(pr.Body, "- [ ] <!-- adopt-rebuild -->") {
		t.Fatalf("the description has no rebuild box:\n%s", pr.Body)
	}
	pr.Body = strings.Replace(pr.Body, "- [ ] <!-- adopt-rebuild -->", "- [x] <!-- adopt-rebuild -->", 1)
	g := w.run(p)
	w.want(g, Updated)
	if !strings.Contains(g.Why, "handed back") {
		t.Errorf("why %q does not say the branch was handed back", g.Why)
	}
	if w.tips[branch] == theirs || w.commits == 0 {
		t.Fatalf("the handed-back branch was not built on")
	}
	if ticked.MatchString(w.newest().Body) {
		t.Errorf("the box is still ticked after the rebuild")
	}
	w.settled(p)
}

// TestRunKeepsAPersonsEdits (issue 43): an update re-renders the title
// and description adopt wrote, but keeps a person's edits to them (only
// adopt's record at the end is rewritten); a description that lost the
// record counts as edited.
func TestRunKeepsAPersonsEdits(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(pr *gitops.PRStatus)
		keep bool
	}{
		{"not edited", func(*gitops.PRStatus) {}, false},
		{"title edited", func(pr *gitops.PRStatus) { pr.Title = "search: adopt the tuning ConfigMap" }, true},
		{"description edited", func(pr *gitops.PRStatus) {
			pr.Body = strings.Replace(pr.Body, "Adopts 1 objects of shop.", "Adopts 1 objects of shop.\n\nReviewed with the search team; merge after Friday.", 1)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.live["a"], w.live["b"] = "1", "2"
			w.want(w.run(testPlan(t, "a")), Opened)
			pr := w.newest()
			tc.edit(pr)
			title, text := pr.Title, UserText(pr.Body)
			w.want(w.run(testPlan(t, "a", "b")), Updated)
			pr = w.newest()
			if tc.keep && (pr.Title != title || UserText(pr.Body) != text) {
				t.Errorf("the update overwrote a person's edit: title %q, text %q; want %q, %q", pr.Title, UserText(pr.Body), title, text)
			}
			if !tc.keep && !strings.Contains(pr.Body, "Adopts 2 objects") {
				t.Errorf("the update did not re-render adopt's own description: %q", UserText(pr.Body))
			}
			// A later update keeps them too.
			w.live["c"] = "3"
			w.want(w.run(testPlan(t, "a", "b", "c")), Updated)
			pr = w.newest()
			if tc.keep && (pr.Title != title || UserText(pr.Body) != text) {
				t.Errorf("the second update overwrote a person's edit: title %q, text %q", pr.Title, UserText(pr.Body))
			}
			if !tc.keep && !strings.Contains(pr.Body, "Adopts 3 objects") {
				t.Errorf("the second update did not re-render adopt's own description: %q", UserText(pr.Body))
			}
			w.settled(testPlan(t, "a", "b", "c"))
		})
	}
}

// TestRunAsksNothingOfDoneGroups (issue 43): a run lists the open pull
// requests once and asks about a branch by its name only when a group in
// play has no open one: a done group (merged and finalized, not proposed
// again) is reported done from its record, never asked about, and a new
// group adopt never recorded is not asked about either.
func TestRunAsksNothingOfDoneGroups(t *testing.T) {
	w := newWorld(t)
	w.live["a"], w.live["b"] = "1", "2"
	w.want(w.run(testPlan(t, "a")), Opened)
	w.merge()
	w.finalized("a")
	other := testPlan(t, "b")
	other.Applications[0].Name, other.Objects[0].App = "adopt-cart", "adopt-cart"
	if err := other.Seal(); err != nil {
		t.Fatal(err)
	}
	w.asked = 0
	rep, err := Run(context.Background(), Options{Plan: other, Cluster: "c", Records: maps.Clone(w.records)}, w.seams())
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, g := range rep.Groups {
		outcomes[g.Branch] = g.Outcome
	}
	if outcomes[branch] != Done || outcomes["adopt/c/adopt-cart"] != Opened || len(outcomes) != 2 {
		t.Errorf("outcomes %v; want %s done and adopt/c/adopt-cart opened", outcomes, branch)
	}
	if w.asked != 0 {
		t.Errorf("the run asked about %d branch(es) by name; want none (one done, one never recorded)", w.asked)
	}
}
