package gitops

import (
	"context"
	"testing"
)

// ListOpenPRs contract (reconcile's open pull requests): the open ones
// only, the provider filtering by state, then by the head branch's prefix
// and the base, newest first, with the head commit and the body reconcile
// keeps its marker in. GitHub: rest/pulls/pulls#list-pull-requests
// (state=open); GitLab: api/merge_requests#list-project-merge-requests
// (state=opened).

func TestGitHubListsReconcileBranches(t *testing.T) {
	pr := func(n, head, state, merged, sha, body string) string {
		return `{"number":` + n + `,"html_url":"https://github.example.invalid/acme/gitops/pull/` + n + `","state":"` + state + `","merged_at":` + merged +
			`,"body":"` + body + `","head":{"ref":"` + head + `","sha":"` + sha + `"},"base":{"ref":"main"}}`
	}
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: map[string]string{"state": "open", "base": "main"}, status: 200,
			reply: `[` + pr("9", "adopt/prod/app-a", "open", "null", "aaa1", "m9") + `,` + pr("8", "adopt/prod/app-b", "open", "null", "bbb1", "m8") + `,` +
				pr("6", "feature/x", "open", "null", "ccc1", "") + `]`},
	)
	all, err := ghProvider(t, c).(PRStateReader).ListOpenPRs(context.Background(), ghRepo, "main", "adopt/prod/")
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	want := []PRStatus{
		{Number: 9, State: PROpen, Head: "adopt/prod/app-a", HeadSHA: "aaa1", Body: "m9"},
		{Number: 8, State: PROpen, Head: "adopt/prod/app-b", HeadSHA: "bbb1", Body: "m8"},
	}
	checkListed(t, all, want)
}

func TestGitLabListsReconcileBranches(t *testing.T) {
	mr := func(iid, head, state, sha, body string) string {
		return `{"id":100` + iid + `,"iid":` + iid + `,"web_url":"https://gitlab.example.invalid/group/sub/gitops/-/merge_requests/` + iid +
			`","state":"` + state + `","sha":"` + sha + `","description":"` + body + `","source_branch":"` + head + `","target_branch":"main"}`
	}
	c := newContract(t, glHeaders,
		call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: map[string]string{"state": "opened", "target_branch": "main"}, status: 200,
			reply: `[` + mr("5", "adopt/prod/app-a", "opened", "aaa1", "m5") + `,` + mr("4", "adopt/prod/app-b", "opened", "bbb1", "m4") + `,` +
				mr("2", "feature/x", "opened", "ccc1", "") + `]`},
	)
	all, err := glProvider(t, c).(PRStateReader).ListOpenPRs(context.Background(), glRepo, "main", "adopt/prod/")
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	checkListed(t, all, []PRStatus{
		{Number: 5, State: PROpen, Head: "adopt/prod/app-a", HeadSHA: "aaa1", Body: "m5"},
		{Number: 4, State: PROpen, Head: "adopt/prod/app-b", HeadSHA: "bbb1", Body: "m4"},
	})
}

// checkListed compares what ListOpenPRs found with want, field by field that
// reconcile reads.
func checkListed(t *testing.T, got, want []PRStatus) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("listed %d pull requests %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Number != w.Number || g.State != w.State || g.Head != w.Head || g.HeadSHA != w.HeadSHA || g.Body != w.Body || g.Base != "main" || g.URL == "" {
			t.Errorf("pull request %d = %+v, want %+v", i, g, w)
		}
	}
}

// TestGitHubPRStateFiltersByHead: one branch's state is asked with the
// API's head filter (owner:branch), not by paging through every pull
// request into base.
func TestGitHubPRStateFiltersByHead(t *testing.T) {
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: map[string]string{"state": "all", "head": "acme:adopt/plan-1", "base": "main"}, status: 200,
			reply: `[{"number":4,"html_url":"u","state":"closed","merged_at":"2026-12-01T10:00:00Z","head":{"ref":"adopt/plan-1","sha":"a1"},"base":{"ref":"main"}}]`},
	)
	pr, err := ghProvider(t, c).(PRStateReader).PRState(context.Background(), FindPROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	if pr == nil || pr.Number != 4 || pr.State != PRMerged {
		t.Errorf("PRState = %+v, want #4 merged", pr)
	}
}
