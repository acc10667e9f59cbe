package gitops

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
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
		// No label or reviewer call: an update leaves them as people left
		// them.
	)
	pr, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{
		Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "new title", Body: "new body", Labels: []string{"adopt"}, Reviewers: []string{"alice"},
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

// Rate limits, per rest/using-the-rest-api/rate-limits-for-the-rest-api:
//   - primary: 403 or 429 with x-ratelimit-remaining: 0; x-ratelimit-reset
//     is the reset time in UTC epoch seconds; wait until then.
//   - secondary: 403 or 429, a message about the secondary rate limit and,
//     when given, retry-after in seconds; wait that long (or, without it,
//     at least a minute).
//
// Every answer carries the x-ratelimit-* headers, a permission 403 too.

// newReplyingContract is newContract whose answer to call i (0-based)
// also carries replyHeaders[i].
func newReplyingContract(t *testing.T, headers map[string]string, replyHeaders map[int]map[string]string, calls ...call) *contract {
	c := &contract{t: t, calls: calls, headers: headers}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		i := c.n
		c.mu.Unlock()
		for k, v := range replyHeaders[i] {
			w.Header().Set(k, v)
		}
		c.serve(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

var ghReset = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func ghRate(remaining int) map[string]string {
	return map[string]string{
		"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": strconv.Itoa(remaining), "X-RateLimit-Used": strconv.Itoa(5000 - remaining),
		"X-RateLimit-Reset": strconv.FormatInt(ghReset.Unix(), 10), "X-RateLimit-Resource": "core",
	}
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

const (
	ghPrimaryBody   = `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit"}`
	ghSecondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
)

// TestGitHubRateLimitIsNotAPermissionProblem: a rate-limited create says
// so, with when to run again, and is not ErrForbidden; a real permission
// 403, which carries the same rate headers, still says permission.
func TestGitHubRateLimitIsNotAPermissionProblem(t *testing.T) {
	const reset = "2030-01-02T03:04:05Z"
	op := "while trying to open a pull request from adopt/plan-1 into main on acme/gitops"
	for _, tc := range []struct {
		name    string
		status  int
		headers map[string]string
		reply   string
		kind    error
		want    []string
	}{
		{"primary 403", 403, ghRate(0), ghPrimaryBody, ErrRateLimited,
			[]string{"github rate-limited the token " + op + " (403, primary rate limit of 5000 requests; it resets at " + reset + "): wait until then and run again; re-running makes no duplicate pull request", "API rate limit exceeded"}},
		{"primary 429", 429, ghRate(0), ghPrimaryBody, ErrRateLimited,
			[]string{"(429, primary rate limit of 5000 requests; it resets at " + reset + ")"}},
		{"secondary with a long Retry-After", 403, withHeader(ghRate(4990), "Retry-After", "60"), ghSecondaryBody, ErrRateLimited,
			[]string{"github rate-limited the token " + op + " (403, secondary rate limit; it asks to wait 1m0s, until 20", "): wait that long and run again; re-running makes no duplicate pull request", "secondary rate limit"}},
		{"secondary said in the message only", 403, ghRate(4990), `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation."}`, ErrRateLimited,
			[]string{"(403, secondary rate limit; it resets at " + reset + ")", "re-running makes no duplicate pull request"}},
		{"429 with Retry-After only", 429, map[string]string{"Retry-After": "120"}, `{"message":"slow down"}`, ErrRateLimited,
			[]string{"(429, secondary rate limit; it asks to wait 2m0s, until 20"}},
		{"permission 403", 403, ghRate(4990), `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request"}`, ErrForbidden,
			[]string{"token lacks pull-request write permission on acme/gitops (403 while trying to open a pull request", "Resource not accessible"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not retried: no Retry-After that fits in the backoff budget.
			c := newReplyingContract(t, ghHeaders, map[int]map[string]string{1: tc.headers},
				call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery, status: 200, reply: `[]`},
				call{doc: "rest/pulls/pulls#create-a-pull-request", method: "POST", path: ghListPath,
					body: `{"title":"t","head":"adopt/plan-1","base":"main","body":"b","draft":false}`, status: tc.status, reply: tc.reply},
			)
			_, err := ghProvider(t, c).EnsurePR(context.Background(), PROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main", Title: "t", Body: "b"})
			c.done()
			checkOneLine(t, err, tc.kind, ghToken, tc.want...)
			if tc.kind == ErrRateLimited && (errors.Is(err, ErrForbidden) || strings.Contains(err.Error(), "permission")) {
				t.Errorf("a rate limit reported as a permission problem: %v", err)
			}
		})
	}
}

// TestGitHubShortRetryAfterIsWaitedOut: a secondary rate limit asking for
// a wait that fits in the backoff budget is retried after it, once.
func TestGitHubShortRetryAfterIsWaitedOut(t *testing.T) {
	list := call{doc: "rest/pulls/pulls#list-pull-requests", method: "GET", path: ghListPath, query: ghListQuery}
	limited, good := list, list
	limited.status, limited.reply = 403, ghSecondaryBody
	good.status, good.reply = 200, `[`+ghPR("9", "t")+`]`
	c := newReplyingContract(t, ghHeaders, map[int]map[string]string{0: withHeader(ghRate(4990), "Retry-After", "1")}, limited, good)
	// Waits of 600ms then 1.2s: a budget of 1.8s, so a 1s Retry-After fits.
	p, err := NewProvider("github", ProviderOptions{APIURL: c.srv.URL + "/api/v3/", Token: ghToken, Attempts: 3, Backoff: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pr, err := p.FindPR(context.Background(), FindPROptions{Repo: ghRepo, Head: "adopt/plan-1", Base: "main"})
	c.done()
	if err != nil || pr == nil || pr.Number != 9 {
		t.Fatalf("FindPR after a 1s secondary rate limit = %+v, %v", pr, err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %s, before the 1s GitHub asked for", waited)
	}
}

// TestGitLabRateLimit: the same classification holds for any provider's
// 429 (GitLab's rate limit, doc page api/rest/_index#status-codes, with
// Retry-After and RateLimit-* headers): ErrRateLimited, and a short
// Retry-After is waited out by the shared retry transport.
func TestGitLabRateLimit(t *testing.T) {
	list := call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: glListQuery}
	limited, good := list, list
	limited.status, limited.reply = 429, `{"message":"429 Too Many Requests"}`
	good.status, good.reply = 200, `[`+glMR("5", "t", "")+`]`

	c := newReplyingContract(t, glHeaders, map[int]map[string]string{0: {"Retry-After": "3600", "RateLimit-Remaining": "0"}}, limited)
	_, err := glProvider(t, c).FindPR(context.Background(), FindPROptions{Repo: glRepo, Head: "adopt/plan-1", Base: "main"})
	c.done()
	checkOneLine(t, err, ErrRateLimited, glToken, "gitlab rate-limited the token while trying to list merge requests on group/sub/gitops (429): wait a few minutes and run again")

	c = newReplyingContract(t, glHeaders, map[int]map[string]string{0: {"Retry-After": "0"}}, limited, good)
	pr, err := glProvider(t, c).FindPR(context.Background(), FindPROptions{Repo: glRepo, Head: "adopt/plan-1", Base: "main"})
	c.done()
	if err != nil || pr == nil || pr.Number != 5 {
		t.Fatalf("FindPR after a 429 with Retry-After: 0 = %+v, %v", pr, err)
	}
}
