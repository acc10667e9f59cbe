package gitops

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestPublishExpectNeverOverwritesAPerson (issue 43): a caller that
// decided from a branch tip (PublishOptions.Expect) never pushes over a
// commit someone else made after that, on the real git http-backend. A
// person's push lands at a barrier (no sleep): before the clone lists the
// branch, between the build and the push (BeforePush), and after the
// remote advertised its refs (the server's own compare-and-swap refuses
// the update). Each ends in ErrBranchMoved with one build at most, no
// retry, and the person's commit as the tip; a branch the caller expected
// absent that someone created is left alone too. Without a race the
// expected push goes through, after BeforePush saw the commit it pushes.
func TestPublishExpectNeverOverwritesAPerson(t *testing.T) {
	g := startServer(t, "", "")
	ctx := context.Background()
	const branch = "adopt/c/app"
	ours := files(map[string]string{"ours.yaml": "ours\n"}, "ours")
	// person pushes a review commit on top of the branch (or creates it).
	person := func(url string) string {
		t.Helper()
		return publish(t, url, Auth{}, Change{Branch: branch, Base: "main", Author: Signature{Name: "A Person", Email: "p@example.invalid"},
			Build: files(map[string]string{"REVIEW.md": "rename b\n"}, "review notes")}, PublishOptions{}).Commit
	}
	for _, tc := range []struct {
		name string
		// existing: the branch exists when the caller decides (else it
		// expects it absent).
		existing bool
		// when the person pushes: "" never, "before-clone", "before-push"
		// (BeforePush), "advertised" (after the remote's advertisement).
		race string
	}{
		{"update, no race", true, ""},
		{"update, pushed before the clone", true, "before-clone"},
		{"update, pushed between build and push", true, "before-push"},
		{"update, pushed after the advertisement", true, "advertised"},
		{"new branch, no race", false, ""},
		{"new branch, created between build and push", false, "before-push"},
		{"new branch, created after the advertisement", false, "advertised"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "expect-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			url := seed(t, g, name)
			bare := g.BarePath(name)
			expect := []string{BranchAbsent}
			if tc.existing {
				expect = []string{publish(t, url, Auth{}, Change{Branch: branch, Base: "main", Author: author, Build: files(map[string]string{"ours.yaml": "v1\n"}, "adopt v1")}, PublishOptions{}).Commit}
			}
			var theirs string
			if tc.race == "before-clone" {
				theirs = person(url)
			}
			r, err := Clone(ctx, CloneOptions{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.race == "advertised" {
				r.advertised = func() { theirs = person(url) }
			}
			builds, before := 0, ""
			build := func(r *Repo) (Content, error) { builds++; return ours(r) }
			res, err := r.Publish(ctx, Change{Branch: branch, Base: "main", Author: author, Build: build}, PublishOptions{Expect: expect,
				BeforePush: func(_ context.Context, res *Result) error {
					before = res.Commit
					if tc.race == "before-push" {
						theirs = person(url)
					}
					return nil
				}})
			if tc.race == "" {
				if err != nil || !res.Pushed || res.Attempts != 1 {
					t.Fatalf("no race: %+v, %v; want one push", res, err)
				}
				if tip := branchTip(t, bare, branch); tip.Hash.String() != res.Commit || before != res.Commit {
					t.Errorf("tip %s, BeforePush saw %s, pushed %s", tip.Hash, before, res.Commit)
				}
				return
			}
			checkGitError(t, err, ErrBranchMoved, nil, branch, "nothing was pushed over it")
			if errors.Is(err, ErrNonFastForward) {
				t.Errorf("a moved branch is also reported as non-fast-forward: %v", err)
			}
			if builds > 1 {
				t.Errorf("built %d times: a moved branch must not be rebuilt", builds)
			}
			if tc.race == "before-clone" && builds != 0 {
				t.Errorf("built on a tip the caller did not decide from")
			}
			if tip := branchTip(t, bare, branch); tip.Hash.String() != theirs || tip.Message != "review notes" {
				t.Errorf("the person's commit %s was overwritten: tip %s %q", theirs, tip.Hash, tip.Message)
			}
		})
	}
}

// TestPublishBeforePushErrorPushesNothing: a caller whose record of what
// it is about to push fails (BeforePush) pushes nothing.
func TestPublishBeforePushErrorPushesNothing(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "before-push")
	r, err := Clone(context.Background(), CloneOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	refused := errors.New("the store refused the record")
	_, err = r.Publish(context.Background(), Change{Branch: "adopt/c/app", Base: "main", Author: author, Build: files(map[string]string{"a.yaml": "a\n"}, "a")},
		PublishOptions{Expect: []string{BranchAbsent}, BeforePush: func(context.Context, *Result) error { return refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("err %v, want the BeforePush error", err)
	}
	if hasBranch(t, g.BarePath("before-push"), "adopt/c/app") {
		t.Errorf("the branch was pushed although BeforePush failed")
	}
}

// TestPublishFromBase (issue 43): a branch whose pull request was merged
// (a fast-forward of main, or a squash whose commit main holds instead) gets
// a new change built on main as it is now, not on the merged tip: its
// parent is main's tip, it holds what main holds, and the push replaces
// the branch only at the tip the caller expected (compare-and-swap, a
// fast-forward or not). A person's push to the branch meanwhile is never
// pushed over.
func TestPublishFromBase(t *testing.T) {
	g := startServer(t, "", "")
	ctx := context.Background()
	const branch = "adopt/c/app"
	for _, merge := range []string{"fast-forward", "squash"} {
		for _, race := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, a person's push %t", merge, race), func(t *testing.T) {
				name := fmt.Sprintf("from-base-%s-%t", merge, race)
				url := seed(t, g, name)
				bare := g.BarePath(name)
				merged := publish(t, url, Auth{}, Change{Branch: branch, Base: "main", Author: author, Build: files(map[string]string{"ours.yaml": "v1\n"}, "adopt v1")}, PublishOptions{}).Commit
				switch merge {
				case "fast-forward":
					if out, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", merged).CombinedOutput(); err != nil {
						t.Fatalf("merge: %v: %s", err, out)
					}
				case "squash":
					publish(t, url, Auth{}, Change{Branch: "main", Base: "main", Author: author, Build: files(map[string]string{"ours.yaml": "v1\n"}, "adopt v1 (#1)")}, PublishOptions{})
				}
				// Someone else's change lands on main after the merge.
				mainTip := publish(t, url, Auth{}, Change{Branch: "main", Base: "main", Author: author, Build: files(map[string]string{"other.md": "theirs\n"}, "other work")}, PublishOptions{}).Commit
				r, err := Clone(ctx, CloneOptions{URL: url})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				var theirs string
				res, err := r.Publish(ctx, Change{Branch: branch, Base: "main", Author: author, Build: files(map[string]string{"more.yaml": "m\n"}, "adopt v2")},
					PublishOptions{Expect: []string{BranchAbsent, merged}, FromBase: true, BeforePush: func(context.Context, *Result) error {
						if race {
							theirs = publish(t, url, Auth{}, Change{Branch: branch, Base: "main", Author: Signature{Name: "A Person", Email: "p@example.invalid"},
								Build: files(map[string]string{"REVIEW.md": "x\n"}, "review notes")}, PublishOptions{}).Commit
						}
						return nil
					}})
				tip := branchTip(t, bare, branch)
				if race {
					checkGitError(t, err, ErrBranchMoved, nil, branch, "nothing was pushed over it")
					if tip.Hash.String() != theirs {
						t.Errorf("the person's commit %s was pushed over: tip %s", theirs, tip.Hash)
					}
					return
				}
				if err != nil || !res.Pushed {
					t.Fatalf("publish from base: %+v, %v", res, err)
				}
				if tip.Hash.String() != res.Commit || len(tip.ParentHashes) != 1 || tip.ParentHashes[0].String() != mainTip {
					t.Errorf("tip %s with parents %v; want the new commit on main's tip %s", tip.Hash, tip.ParentHashes, mainTip)
				}
				if fileAt(t, tip, "other.md") != "theirs\n" || fileAt(t, tip, "more.yaml") != "m\n" || fileAt(t, tip, "ours.yaml") != "v1\n" {
					t.Errorf("the new commit does not hold what main holds plus the change")
				}
			})
		}
	}
}
