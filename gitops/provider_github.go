package gitops

import (
	"context"
	"errors"
	"net/url"
	"strings"

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
	if len(o.Labels) > 0 {
		if _, resp, err := g.c.Issues.AddLabelsToIssue(ctx, o.Repo.Owner, o.Repo.Name, n, o.Labels); err != nil {
			return nil, g.err(o.Repo, "label pull request #"+itoa(int64(n)), resp, err)
		}
	}
	if len(o.Reviewers) > 0 {
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
	return prError("github", r, op, status, detail, g.token)
}

func statusOf(resp *github.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
