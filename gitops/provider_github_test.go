package gitops

import (
	"context"
	"net/http"
	"testing"
)

// GitHub REST API contract. Pages cited are under the GitHub REST API
// documentation site, by path:
//   - rest/pulls/pulls#list-pull-requests          GET   /repos/{owner}/{repo}/pulls
//   - rest/pulls/pulls#create-a-pull-request       POST  /repos/{owner}/{repo}/pulls
//   - rest/pulls/pulls#update-a-pull-request       PATCH /repos/{owner}/{repo}/pulls/{pull_number}
//   - rest/issues/labels#add-labels-to-an-issue    POST  /repos/{owner}/{repo}/issues/{issue_number}/labels
//     (the body may be {"labels": [...]} or a bare array of names; go-github sends the array)
//   - rest/pulls/review-requests#request-reviewers-for-a-pull-request
//     POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers
//   - rest/authentication/authenticating-to-the-rest-api: "Authorization: Bearer TOKEN"
//   - rest/about-the-rest-api/api-versions: "X-GitHub-Api-Version: 2022-11-28"
//   - rest/using-the-rest-api/getting-started-with-the-rest-api#media-types:
//     application/vnd.github.v3+json is the documented v3 media type.
//
// GitHub Enterprise Server serves the same API under /api/v3.

const ghToken = "ghp_contractTOKEN0123456789"

var ghHeaders = map[string]string{
	"Authorization":        "Bearer " + ghToken,
	"X-GitHub-Api-Version": "2022-11-28",
	"Accept":               "application/vnd.github.v3+json",
}

const ghListPath = "/api/v3/repos/acme/gitops/pulls"

var ghListQuery = map[string]string{"state": "open", "head": "acme:adopt/plan-1", "base": "main"}

func ghProvider(t *testing.T, c *contract) Provider {
	t.Helper()
	p, err := NewProvider("github", fastRetry(ProviderOptions{APIURL: c.srv.URL + "/api/v3/", Token: ghToken}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var ghRepo = RepoRef{Scheme: "https", Host: "github.example.invalid", Owner: "acme", Name: "gitops"}

func ghPR(number, title string) string {
	return `{"number":` + number + `,"html_url":"https://github.example.invalid/acme/gitops/pull/` + number + `","title":"` + title + `","head":{"ref":"adopt/plan-1"},"base":{"ref":"main"}}`
}

func TestGitHubCreatesPullRequest(t *testing.T) {
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[]`},
		call{doc: "rest/pulls/pulls#create-a-pull-request", method: "POST", path: ghListPath,
			body:   `{"title":"adopt: 1 app","head":"adopt/plan-1","base":"main","body":"the body","draft":true}`,
			status: 201, reply: ghPR("7", "adopt: 1 app")},
		call{doc: "rest/issues/labels#add-labels-to-an-issue", method: "POST", path: "/api/v3/repos/acme/gitops/issues/7/labels",
			body: `["adopt","gitops"]`, status: 200, reply: `[{"name":"adopt"},{"name":"gitops"}]`},
		call{doc: "rest/pulls/review-requests#request-reviewers-for-a-pull-request", method: "POST", path: "/api/v3/repos/acme/gitops/pulls/7/requested_reviewers",
			body: `{"reviewers":["alice"]}`, status: 201, reply: ghPR("7", "adopt: 1 app")},
	)
	pr, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{
		Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "adopt: 1 app", Body: "the body",
		Labels: []string{"adopt", "gitops"}, Reviewers: []string{"alice"}, Draft: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	if !pr.Created || pr.Number != 7 || pr.URL != "https://github.example.invalid/acme/gitops/pull/7" || pr.Head != "adopt/plan-1" || pr.Base != "main" {
		t.Errorf("pull request = %+v", pr)
	}
}

func TestGitHubUpdatesOpenPullRequest(t *testing.T) {
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[` + ghPR("7", "old") + `]`},
		call{doc: "rest/pulls/pulls#update-a-pull-request", method: "PATCH", path: "/api/v3/repos/acme/gitops/pulls/7",
			body: `{"title":"new title","body":"new body"}`, status: 200, reply: ghPR("7", "new title")},
		call{doc: "rest/issues/labels#add-labels-to-an-issue", method: "POST", path: "/api/v3/repos/acme/gitops/issues/7/labels",
			body: `["adopt"]`, status: 200, reply: `[{"name":"adopt"}]`},
	)
	pr, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{
		Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "new title", Body: "new body", Labels: []string{"adopt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	if pr.Created || pr.Number != 7 || pr.Title != "new title" {
		t.Errorf("pull request = %+v", pr)
	}
}

func TestGitHubFindsOnlyTheBranch(t *testing.T) {
	other := `{"number":3,"html_url":"u","title":"t","head":{"ref":"someone-else"},"base":{"ref":"main"}}`
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[` + other + `]`},
	)
	pr, err := ghProvider(t, c).FindPR(context.Background(), FindPROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main"})
	if err != nil || pr != nil {
		t.Errorf("FindPR = %+v, %v; want nothing", pr, err)
	}
	c.done()
}

func TestGitHubErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		kind   error
		want   string
	}{
		{401, ErrAuth, "github rejected the token while trying to open a pull request from adopt/plan-1 into main on acme/gitops (401)"},
		{403, ErrForbidden, "token lacks pull-request write permission on acme/gitops (403"},
		{404, ErrNotFound, "github repository acme/gitops not found"},
		{409, ErrPRConflict, "conflicting pull request on acme/gitops"},
		{422, ErrPRInvalid, "github refused to open a pull request from adopt/plan-1 into main on acme/gitops (422)"},
		{502, ErrPRUnavailable, "github API kept failing while trying to open a pull request from adopt/plan-1 into main on acme/gitops (502 after retries)"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			calls := []call{
				{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[]`},
			}
			create := call{doc: "rest/pulls/pulls#create-a-pull-request", method: "POST", path: ghListPath,
				body:   `{"title":"t","head":"adopt/plan-1","base":"main","body":"b","draft":false}`,
				status: tc.status, reply: `{"message":"Bad credentials ` + ghToken + `","documentation_url":"x"}`}
			calls = append(calls, create)
			if tc.status >= 500 { // retried: three attempts in all
				calls = append(calls, create, create)
			}
			if tc.status == 422 { // a 422 may mean "already exists": look again
				calls = append(calls, call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[]`})
			}
			c := newContract(t, ghHeaders, calls...)
			_, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "t", Body: "b"})
			c.done()
			checkOneLine(t, err, tc.kind, ghToken, tc.want)
		})
	}
}

func TestGitHubRetries5xxThenSucceeds(t *testing.T) {
	list := call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery}
	bad, good := list, list
	bad.status, bad.reply = 503, `{"message":"unavailable"}`
	good.status, good.reply = 200, `[`+ghPR("9", "t")+`]`
	c := newContract(t, ghHeaders, bad, bad, good)
	pr, err := ghProvider(t, c).FindPR(context.Background(), FindPROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main"})
	c.done()
	if err != nil || pr == nil || pr.Number != 9 {
		t.Fatalf("FindPR after two 503s = %+v, %v", pr, err)
	}
}

func TestGitHubCreateRaceUpdatesExisting(t *testing.T) {
	// A create that GitHub refuses with 422 because the pull request exists
	// (opened meanwhile, or by a retried create) updates that one instead.
	c := newContract(t, ghHeaders,
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[]`},
		call{doc: "rest/pulls/pulls#create-a-pull-request", method: "POST", path: ghListPath,
			body:   `{"title":"t","head":"adopt/plan-1","base":"main","body":"b","draft":false}`,
			status: 422, reply: `{"message":"Validation Failed","errors":[{"message":"A pull request already exists for acme:adopt/plan-1."}]}`},
		call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[` + ghPR("4", "t") + `]`},
		call{doc: "rest/pulls/pulls#update-a-pull-request", method: "PATCH", path: "/api/v3/repos/acme/gitops/pulls/4",
			body: `{"title":"t","body":"b"}`, status: 200, reply: ghPR("4", "t")},
	)
	pr, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "t", Body: "b"})
	c.done()
	if err != nil || pr.Number != 4 || pr.Created {
		t.Fatalf("EnsurePR = %+v, %v", pr, err)
	}
}
