package gitops

import (
	"context"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaProvider drives Gitea and Forgejo through code.gitea.io/sdk/gitea.
// Gitea has no draft flag: a draft is a title starting with "WIP: ". Its
// labels must exist before they are added, so missing ones are created.
type giteaProvider struct {
	o ProviderOptions
}

func newGitea(o ProviderOptions) (Provider, error) { return &giteaProvider{o: o}, nil }

func (g *giteaProvider) Name() string { return "gitea" }

// client binds the SDK to ctx; the SDK keeps its context per client.
func (g *giteaProvider) client(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(g.o.APIURL,
		gitea.SetToken(g.o.Token),
		gitea.SetHTTPClient(g.o.HTTPClient),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""), // skip the version probe
	)
}

func (g *giteaProvider) FindPR(ctx context.Context, o FindPROptions) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, transportError("gitea", o.Repo, "connect", err, g.o.Token)
	}
	return g.find(c, o)
}

func (g *giteaProvider) find(c *gitea.Client, o FindPROptions) (*PullRequest, error) {
	opt := gitea.ListPullRequestsOptions{State: gitea.StateOpen, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	for {
		prs, resp, err := c.ListRepoPullRequests(o.Repo.Owner, o.Repo.Name, opt)
		if err != nil {
			return nil, g.err(o.Repo, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.Head != nil && pr.Head.Ref == o.Head && pr.Base != nil && (o.Base == "" || pr.Base.Ref == o.Base) {
				return convertGitea(pr, false), nil
			}
		}
		if len(prs) < opt.PageSize || resp == nil || resp.NextPage == 0 {
			return nil, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *giteaProvider) EnsurePR(ctx context.Context, o PROptions) (*PullRequest, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, transportError("gitea", o.Repo, "connect", err, g.o.Token)
	}
	found, err := g.find(c, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base})
	if err != nil {
		return nil, err
	}
	title := o.Title
	if o.Draft && !strings.HasPrefix(title, "WIP:") {
		title = "WIP: " + title
	}
	var pr *gitea.PullRequest
	var resp *gitea.Response
	created := found == nil
	if created {
		pr, resp, err = c.CreatePullRequest(o.Repo.Owner, o.Repo.Name, gitea.CreatePullRequestOption{
			Head: o.Head, Base: o.Base, Title: title, Body: o.Body,
		})
		if err != nil && statusOfGitea(resp) == http.StatusConflict {
			// Opened meanwhile (or by a retried create): update that one.
			if again, ferr := g.find(c, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base}); ferr == nil && again != nil {
				found, created, err = again, false, nil
			}
		}
		if err != nil {
			return nil, g.err(o.Repo, "open a pull request from "+o.Head+" into "+o.Base, resp, err)
		}
	}
	if !created {
		body := o.Body
		pr, resp, err = c.EditPullRequest(o.Repo.Owner, o.Repo.Name, found.Number, gitea.EditPullRequestOption{Title: title, Body: &body})
		if err != nil {
			return nil, g.err(o.Repo, "update pull request #"+itoa(found.Number), resp, err)
		}
	}
	if len(o.Labels) > 0 && created {
		ids, err := g.labelIDs(c, o.Repo, o.Labels)
		if err != nil {
			return nil, err
		}
		if _, resp, err := c.AddIssueLabels(o.Repo.Owner, o.Repo.Name, pr.Index, gitea.IssueLabelsOption{Labels: ids}); err != nil {
			return nil, g.err(o.Repo, "label pull request #"+itoa(pr.Index), resp, err)
		}
	}
	if len(o.Reviewers) > 0 && created {
		if resp, err := c.CreateReviewRequests(o.Repo.Owner, o.Repo.Name, pr.Index, gitea.PullReviewRequestOptions{Reviewers: o.Reviewers}); err != nil {
			return nil, g.err(o.Repo, "request reviewers on pull request #"+itoa(pr.Index), resp, err)
		}
	}
	return convertGitea(pr, created), nil
}

// labelIDs resolves label names, creating the missing ones.
func (g *giteaProvider) labelIDs(c *gitea.Client, r RepoRef, names []string) ([]int64, error) {
	have := map[string]int64{}
	opt := gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	for {
		labels, resp, err := c.ListRepoLabels(r.Owner, r.Name, opt)
		if err != nil {
			return nil, g.err(r, "list labels", resp, err)
		}
		for _, l := range labels {
			have[l.Name] = l.ID
		}
		if len(labels) < opt.PageSize || resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	var ids []int64
	for _, n := range names {
		id, ok := have[n]
		if !ok {
			l, resp, err := c.CreateLabel(r.Owner, r.Name, gitea.CreateLabelOption{Name: n, Color: "#ededed"})
			if err != nil {
				return nil, g.err(r, "create label "+n, resp, err)
			}
			id = l.ID
			have[n] = id
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func convertGitea(pr *gitea.PullRequest, created bool) *PullRequest {
	p := &PullRequest{Number: pr.Index, URL: pr.HTMLURL, Title: pr.Title, Created: created}
	if pr.Head != nil {
		p.Head = pr.Head.Ref
	}
	if pr.Base != nil {
		p.Base = pr.Base.Ref
	}
	return p
}

func (g *giteaProvider) err(r RepoRef, op string, resp *gitea.Response, err error) error {
	status := statusOfGitea(resp)
	if status == 0 {
		return transportError("gitea", r, op, err, g.o.Token)
	}
	return prError("gitea", r, op, status, err.Error(), g.o.Token)
}

func statusOfGitea(resp *gitea.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
