package gitops

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"
)

// gitHub drives the GitHub REST API (and GitHub Enterprise Server) through
// go-github.
type gitHub struct {
	c     *github.Client
	token string
}

func newGitHub(o ProviderOptions) (Provider, error) {
	c := github.NewClient(o.HTTPClient).WithAuthToken(o.Token)
	base, err := url.Parse(o.APIURL)
	if err != nil || base.Host == "" {
		return nil, errors.New("--api-url " + Redact(o.APIURL, o.Token) + " is not a URL")
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	c.BaseURL = base
	return &gitHub{c: c, token: o.Token}, nil
}

// githubPublicAPI is go-github's default API base, the public GitHub API.
func githubPublicAPI() *url.URL { return github.NewClient(nil).BaseURL }

func (g *gitHub) Name() string { return "github" }

func (g *gitHub) FindPR(ctx context.Context, o FindPROptions) (*PullRequest, error) {
	opts := &github.PullRequestListOptions{State: "open", Head: o.Repo.Owner + ":" + o.Head, Base: o.Base, ListOptions: github.ListOptions{PerPage: 100}}
	for {
		prs, resp, err := g.c.PullRequests.List(ctx, o.Repo.Owner, o.Repo.Name, opts)
		if err != nil {
			return nil, g.err(o.Repo, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.GetHead().GetRef() == o.Head && (o.Base == "" || pr.GetBase().GetRef() == o.Base) {
				return g.convert(pr, false), nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitHub) EnsurePR(ctx context.Context, o PROptions) (*PullRequest, error) {
	found, err := g.FindPR(ctx, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base})
	if err != nil {
		return nil, err
	}
	var pr *github.PullRequest
	var resp *github.Response
	created := found == nil
	if created {
		pr, resp, err = g.c.PullRequests.Create(ctx, o.Repo.Owner, o.Repo.Name, &github.NewPullRequest{
			Title: &o.Title, Head: &o.Head, Base: &o.Base, Body: &o.Body, Draft: &o.Draft,
		})
		if err != nil && statusOf(resp) == 422 {
			// Opened meanwhile (or by a retried create): update that one.
			if again, ferr := g.FindPR(ctx, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base}); ferr == nil && again != nil {
				found, created, err = again, false, nil
			}
		}
		if err != nil {
			return nil, g.err(o.Repo, "open a pull request from "+o.Head+" into "+o.Base, resp, err)
		}
	}
	if !created {
		pr, resp, err = g.c.PullRequests.Edit(ctx, o.Repo.Owner, o.Repo.Name, int(found.Number), &github.PullRequest{Title: &o.Title, Body: &o.Body})
		if err != nil {
			return nil, g.err(o.Repo, "update pull request #"+itoa(found.Number), resp, err)
		}
	}
	n := pr.GetNumber()
	if len(o.Labels) > 0 && created {
		if _, resp, err := g.c.Issues.AddLabelsToIssue(ctx, o.Repo.Owner, o.Repo.Name, n, o.Labels); err != nil {
			return nil, g.err(o.Repo, "label pull request #"+itoa(int64(n)), resp, err)
		}
	}
	if len(o.Reviewers) > 0 && created {
		if _, resp, err := g.c.PullRequests.RequestReviewers(ctx, o.Repo.Owner, o.Repo.Name, n, github.ReviewersRequest{Reviewers: o.Reviewers}); err != nil {
			return nil, g.err(o.Repo, "request reviewers on pull request #"+itoa(int64(n)), resp, err)
		}
	}
	return g.convert(pr, created), nil
}

func (g *gitHub) convert(pr *github.PullRequest, created bool) *PullRequest {
	return &PullRequest{
		Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), Title: pr.GetTitle(),
		Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(), Created: created,
	}
}

func (g *gitHub) err(r RepoRef, op string, resp *github.Response, err error) error {
	status := statusOf(resp)
	if status == 0 {
		return transportError("github", r, op, err, g.token)
	}
	detail := ""
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		detail = er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				detail += "; " + e.Message
			}
		}
	}
	if rl, msg, ok := githubRateLimit(status, resp, err, time.Now()); ok {
		if detail == "" {
			detail = msg
		}
		return rateLimitedError("github", r, op, status, rl, detail, g.token)
	}
	return prError("github", r, op, status, detail, g.token)
}

// githubRateLimit says whether a 403 or 429 is a rate limit rather than a
// missing permission, and what GitHub said about it. go-github classifies
// the documented shapes (rest/using-the-rest-api/rate-limits-for-the-rest-api):
// a primary limit is X-RateLimit-Remaining: 0 (RateLimitError, with the
// X-RateLimit-Reset time), a secondary one a documentation_url ending in
// secondary-rate-limits (AbuseRateLimitError, with Retry-After). It also
// answers both when go-github refuses a call itself because the limit it
// saw before has not reset yet. A 403 or 429 whose message says "secondary
// rate limit", or that carries Retry-After, is a secondary limit too.
func githubRateLimit(status int, resp *github.Response, err error, now time.Time) (rateLimit, string, bool) {
	var primary *github.RateLimitError
	if errors.As(err, &primary) {
		return rateLimit{kind: "primary", limit: primary.Rate.Limit, reset: primary.Rate.Reset.Time}, primary.Message, true
	}
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return rateLimit{}, "", false
	}
	rl := rateLimit{kind: "secondary"}
	var h http.Header
	if resp != nil && resp.Response != nil {
		h = resp.Header
	}
	if d, ok := retryAfter(h, now); ok {
		rl.wait, rl.reset = d, now.Add(d).Truncate(time.Second)
	} else if reset := h.Get("X-RateLimit-Reset"); reset != "" {
		if sec, perr := strconv.ParseInt(reset, 10, 64); perr == nil && sec > 0 {
			rl.reset = time.Unix(sec, 0)
		}
	}
	var secondary *github.AbuseRateLimitError
	if errors.As(err, &secondary) {
		if rl.reset.IsZero() && secondary.RetryAfter != nil && *secondary.RetryAfter > 0 {
			rl.wait = *secondary.RetryAfter
			rl.reset = now.Add(rl.wait).Truncate(time.Second)
		}
		return rl, secondary.Message, true
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && strings.Contains(strings.ToLower(er.Message), "secondary rate limit") || h.Get("Retry-After") != "" {
		return rl, "", true
	}
	if status == http.StatusTooManyRequests {
		return rateLimit{}, "", true
	}
	return rateLimit{}, "", false
}

func statusOf(resp *github.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
