package gitops

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// startGitea starts the real Gitea for one test. It is skipped only under
// -short outside CI; in CI a Gitea that cannot start fails the test.
func startGitea(t *testing.T) *testenv.Gitea {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: skipping the real Gitea")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	g, err := testenv.StartGitea(ctx)
	if err != nil {
		t.Fatalf("the real Gitea did not start: %v", err)
	}
	t.Logf("Gitea %s at %s ready in %s", testenv.GiteaVersion, g.URL, time.Since(start).Round(time.Millisecond))
	t.Cleanup(g.Stop)
	return g
}

// giteaRepoProvider is the repository at cloneURL on g and the Gitea
// provider with g's admin token.
func giteaRepoProvider(t *testing.T, g *testenv.Gitea, cloneURL string) (RepoRef, Provider) {
	t.Helper()
	ref, err := ParseRepoURL(cloneURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProvider("gitea", ProviderOptions{APIURL: DefaultAPIURL("gitea", ref), Token: g.Token})
	if err != nil {
		t.Fatal(err)
	}
	return ref, p
}

func TestGiteaEndToEnd(t *testing.T) {
	g := startGitea(t)
	ctx := context.Background()
	cloneURL, err := g.CreateRepo(ctx, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PushBranch(ctx, cloneURL, "adopt/plan-1", map[string]string{"apps/litellm-test.yaml": "kind: Application\n"}); err != nil {
		t.Fatal(err)
	}
	if err := g.CreateUser(ctx, "reviewer1"); err != nil {
		t.Fatal(err)
	}
	if err := g.AddCollaborator(ctx, "gitops", "reviewer1"); err != nil {
		t.Fatal(err)
	}
	ref, p := giteaRepoProvider(t, g, cloneURL)
	opts := PROptions{
		Repo: ref, Head: "adopt/plan-1", Base: "main", Title: "adopt: 1 Argo CD Application", Body: "first body",
		Labels: []string{"adopt", "gitops"}, Reviewers: []string{"reviewer1"},
	}

	// First run: opens the pull request.
	pr, err := p.EnsurePR(ctx, opts)
	if err != nil {
		t.Fatalf("EnsurePR: %v\n%s", err, g.LogTail(2000))
	}
	if !pr.Created || pr.Number == 0 || !strings.HasPrefix(pr.URL, g.URL) {
		t.Errorf("first run = %+v, want a created pull request on %s", pr, g.URL)
	}
	prs, err := g.PullRequests(ctx, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 {
		t.Fatalf("after the first run Gitea has %d pull requests, want 1", len(prs))
	}
	got := prs[0]
	if got.Title != opts.Title || got.Body != "first body" || got.Head.Ref != "adopt/plan-1" || got.Base.Ref != "main" || got.State != "open" {
		t.Errorf("read back: title %q body %q head %q base %q state %q", got.Title, got.Body, got.Head.Ref, got.Base.Ref, got.State)
	}
	if l := got.LabelNames(); !slices.Contains(l, "adopt") || !slices.Contains(l, "gitops") {
		t.Errorf("labels = %v, want adopt and gitops", l)
	}
	if len(got.RequestedReviewers) != 1 || got.RequestedReviewers[0].Login != "reviewer1" {
		t.Errorf("requested reviewers = %+v, want reviewer1", got.RequestedReviewers)
	}

	// Second run: same branch, new body and one more label: still one
	// PR, its body updated, its labels as they were (set when opened; an
	// update leaves them as people left them).
	opts.Body, opts.Labels = "second body", []string{"adopt", "gitops", "annotation-budget"}
	again, err := p.EnsurePR(ctx, opts)
	if err != nil {
		t.Fatalf("second EnsurePR: %v", err)
	}
	if again.Created || again.Number != pr.Number {
		t.Errorf("second run = %+v, want an update of #%d", again, pr.Number)
	}
	prs, err = g.PullRequests(ctx, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 {
		t.Fatalf("after the second run Gitea has %d pull requests, want exactly 1", len(prs))
	}
	if prs[0].Body != "second body" || slices.Contains(prs[0].LabelNames(), "annotation-budget") || !slices.Contains(prs[0].LabelNames(), "gitops") {
		t.Errorf("second run: body %q labels %v; want the body updated and the labels as opened", prs[0].Body, prs[0].LabelNames())
	}
	found, err := p.FindPR(ctx, FindPROptions{Repo: ref, Head: "adopt/plan-1", Base: "main"})
	if err != nil || found == nil || found.Number != pr.Number {
		t.Errorf("FindPR = %+v, %v", found, err)
	}

	// Draft: Gitea marks "WIP: " titles as drafts.
	if err := g.PushBranch(ctx, cloneURL, "adopt/plan-draft", map[string]string{"apps/draft.yaml": "kind: Application\n"}); err != nil {
		t.Fatal(err)
	}
	d, err := p.EnsurePR(ctx, PROptions{Repo: ref, Head: "adopt/plan-draft", Base: "main", Title: "draft one", Body: "b", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	prs, _ = g.PullRequests(ctx, "gitops")
	for _, x := range prs {
		if x.Number == d.Number && (!x.Draft || x.Title != "WIP: draft one") {
			t.Errorf("draft read back: title %q draft %v", x.Title, x.Draft)
		}
	}

	// A read-only token: one line that says what to do, and no token.
	ro, err := g.CreateToken(ctx, "read-only", "read:repository", "read:issue", "read:user")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PushBranch(ctx, cloneURL, "adopt/plan-2", map[string]string{"apps/other.yaml": "kind: Application\n"}); err != nil {
		t.Fatal(err)
	}
	rop, err := NewProvider("gitea", ProviderOptions{APIURL: g.URL, Token: ro})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rop.EnsurePR(ctx, PROptions{Repo: ref, Head: "adopt/plan-2", Base: "main", Title: "t", Body: "b"})
	checkOneLine(t, err, ErrForbidden, ro, "token lacks pull-request write permission on "+g.User+"/gitops (403", "write:repository")
	t.Logf("read-only token error: %v", err)
	_, err = rop.EnsurePR(ctx, PROptions{Repo: ref, Head: "adopt/plan-1", Base: "main", Title: "t", Body: "b"})
	checkOneLine(t, err, ErrForbidden, ro, "403 while trying to update pull request #")
	if prs, _ := g.PullRequests(ctx, "gitops"); len(prs) != 2 {
		t.Errorf("the read-only token changed the pull requests: %d, want 2", len(prs))
	}

	// A wrong token: 401.
	bad, _ := NewProvider("gitea", ProviderOptions{APIURL: g.URL, Token: "0123456789abcdef0123456789abcdef01234567"})
	_, err = bad.EnsurePR(ctx, opts)
	checkOneLine(t, err, ErrAuth, "0123456789abcdef0123456789abcdef01234567", "gitea rejected the token", "(401)")
	// A repository that does not exist: 404.
	missing := ref
	missing.Name = "no-such-repo"
	_, err = p.EnsurePR(ctx, PROptions{Repo: missing, Head: "x", Base: "main", Title: "t"})
	checkOneLine(t, err, ErrNotFound, g.Token, "gitea repository "+g.User+"/no-such-repo not found")
}

// TestGiteaPRStateByBranch (issue 43): on the real Gitea, a branch's
// newest pull request is found by asking about that branch alone
// (pulls/{base}/{head}), in every state: open, closed without merging,
// open again (a second pull request from the same branch is the newest),
// merged; a branch that never had one is none. ListOpenPRs lists the open
// ones of a prefix only.
func TestGiteaPRStateByBranch(t *testing.T) {
	g := startGitea(t)
	ctx := context.Background()
	cloneURL, err := g.CreateRepo(ctx, "state")
	if err != nil {
		t.Fatal(err)
	}
	const branch, other = "adopt/c/app", "adopt/c/other"
	for _, b := range []string{branch, other} {
		if err := g.PushBranch(ctx, cloneURL, b, map[string]string{b + ".yaml": "kind: Application\n"}); err != nil {
			t.Fatal(err)
		}
	}
	ref, p := giteaRepoProvider(t, g, cloneURL)
	r := p.(PRStateReader)
	state := func(head string) *PRStatus {
		t.Helper()
		s, err := r.PRState(ctx, FindPROptions{Repo: ref, Head: head, Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := state(branch); s != nil {
		t.Fatalf("a branch without a pull request: %+v", s)
	}
	open := func(head string) int64 {
		t.Helper()
		pr, err := p.EnsurePR(ctx, PROptions{Repo: ref, Head: head, Base: "main", Title: "adopt " + head, Body: "b"})
		if err != nil {
			t.Fatal(err)
		}
		return pr.Number
	}
	first := open(branch)
	open(other)
	if s := state(branch); s == nil || s.Number != first || s.State != PROpen || s.HeadSHA == "" {
		t.Fatalf("open: %+v", s)
	}
	if err := g.ClosePullRequest(ctx, "state", first); err != nil {
		t.Fatal(err)
	}
	if s := state(branch); s == nil || s.Number != first || s.State != PRClosed {
		t.Fatalf("closed: %+v", s)
	}
	second := open(branch)
	if s := state(branch); s == nil || s.Number != second || s.State != PROpen {
		t.Fatalf("open again: %+v, want #%d", s, second)
	}
	listed, err := r.ListOpenPRs(ctx, ref, "main", "adopt/c/app")
	if err != nil || len(listed) != 1 || listed[0].Number != second {
		t.Fatalf("ListOpenPRs of adopt/c/app: %+v, %v; want only #%d", listed, err, second)
	}
	mctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := g.MergePullRequest(mctx, "state", second); err != nil {
		t.Fatal(err)
	}
	if s := state(branch); s == nil || s.Number != second || s.State != PRMerged || s.MergedAt.IsZero() {
		t.Fatalf("merged: %+v", s)
	}
	// PRState stops at the first page holding the branch: Gitea's list
	// must answer newest first.
	all, err := g.PullRequests(ctx, "state")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Number > all[i-1].Number {
			t.Fatalf("Gitea lists pull requests oldest first (#%d after #%d): PRState would stop at an old one", all[i].Number, all[i-1].Number)
		}
	}
}
