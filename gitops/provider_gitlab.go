package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLab drives GitLab merge requests through gitlab.com/gitlab-org/api/
// client-go. Its own retries are off: the retrying transport every provider
// shares does that. A draft is a title starting with "Draft: ". Reviewers
// are user names, looked up to the IDs GitLab wants.
type gitLab struct {
	c     *gitlab.Client
	token string
}

func newGitLab(o ProviderOptions) (Provider, error) {
	c, err := gitlab.NewClient(o.Token,
		gitlab.WithBaseURL(o.APIURL),
		gitlab.WithHTTPClient(o.HTTPClient),
		gitlab.WithoutRetries(),
		gitlab.WithURLWarningLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab client for %s: %s", Redact(o.APIURL, o.Token), Redact(err.Error(), o.Token))
	}
	return &gitLab{c: c, token: o.Token}, nil
}

func (g *gitLab) Name() string { return "gitlab" }

func (g *gitLab) FindPR(ctx context.Context, o FindPROptions) (*PullRequest, error) {
	mr, err := g.find(ctx, o)
	if err != nil || mr == nil {
		return nil, err
	}
	return convertGitLab(mr.IID, mr.WebURL, mr.Title, mr.SourceBranch, mr.TargetBranch, false), nil
}

func (g *gitLab) find(ctx context.Context, o FindPROptions) (*gitlab.BasicMergeRequest, error) {
	opt := &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), SourceBranch: gitlab.Ptr(o.Head),
		ListOptions: gitlab.ListOptions{PerPage: 100},
	}
	if o.Base != "" {
		opt.TargetBranch = gitlab.Ptr(o.Base)
	}
	mrs, resp, err := g.c.MergeRequests.ListProjectMergeRequests(o.Repo.FullName(), opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err(o.Repo, "list merge requests", resp, err)
	}
	for _, mr := range mrs {
		if mr.SourceBranch == o.Head && (o.Base == "" || mr.TargetBranch == o.Base) {
			return mr, nil
		}
	}
	return nil, nil
}

func (g *gitLab) EnsurePR(ctx context.Context, o PROptions) (*PullRequest, error) {
	found, err := g.find(ctx, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base})
	if err != nil {
		return nil, err
	}
	title := o.Title
	if o.Draft && !strings.HasPrefix(title, "Draft:") {
		title = "Draft: " + title
	}
	pid := o.Repo.FullName()
	if found == nil {
		ids, err := g.userIDs(ctx, o.Repo, o.Reviewers)
		if err != nil {
			return nil, err
		}
		opt := &gitlab.CreateMergeRequestOptions{
			Title: &title, Description: &o.Body, SourceBranch: &o.Head, TargetBranch: &o.Base,
		}
		if len(o.Labels) > 0 {
			opt.Labels = gitlab.Ptr(gitlab.LabelOptions(o.Labels))
		}
		if len(ids) > 0 {
			opt.ReviewerIDs = &ids
		}
		mr, resp, err := g.c.MergeRequests.CreateMergeRequest(pid, opt, gitlab.WithContext(ctx))
		if err == nil {
			return convertGitLab(mr.IID, mr.WebURL, mr.Title, mr.SourceBranch, mr.TargetBranch, true), nil
		}
		if statusOfGitLab(resp) != http.StatusConflict {
			return nil, g.err(o.Repo, "open a merge request from "+o.Head+" into "+o.Base, resp, err)
		}
		// Opened meanwhile (or by a retried create): update that one.
		if found, err = g.find(ctx, FindPROptions{Repo: o.Repo, Head: o.Head, Base: o.Base}); err != nil || found == nil {
			return nil, g.err(o.Repo, "open a merge request from "+o.Head+" into "+o.Base, resp, errors.New("conflict"))
		}
	}
	// Labels and reviewers were set when it was opened: an update leaves
	// them as people left them.
	opt := &gitlab.UpdateMergeRequestOptions{Title: &title, Description: &o.Body}
	mr, resp, err := g.c.MergeRequests.UpdateMergeRequest(pid, found.IID, opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err(o.Repo, "update merge request !"+itoa(found.IID), resp, err)
	}
	return convertGitLab(mr.IID, mr.WebURL, mr.Title, mr.SourceBranch, mr.TargetBranch, false), nil
}

// userIDs looks up user names; an unknown one is an error that names it.
func (g *gitLab) userIDs(ctx context.Context, r RepoRef, names []string) ([]int64, error) {
	var ids []int64
	for _, n := range names {
		users, resp, err := g.c.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(n)}, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.err(r, "look up reviewer "+n, resp, err)
		}
		if len(users) == 0 {
			return nil, &redactedError{kind: ErrPRInvalid, msg: fmt.Sprintf("gitlab has no user %q to ask for review on %s: check --pr-reviewer", n, r.FullName())}
		}
		ids = append(ids, users[0].ID)
	}
	return ids, nil
}

func convertGitLab(iid int64, url, title, head, base string, created bool) *PullRequest {
	return &PullRequest{Number: iid, URL: url, Title: title, Head: head, Base: base, Created: created}
}

func (g *gitLab) err(r RepoRef, op string, resp *gitlab.Response, err error) error {
	status := statusOfGitLab(resp)
	if status == 0 {
		return transportError("gitlab", r, op, err, g.token)
	}
	detail := ""
	var er *gitlab.ErrorResponse
	if errors.As(err, &er) {
		detail = er.Message
	}
	return prError("gitlab", r, op, status, detail, g.token)
}

func statusOfGitLab(resp *gitlab.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}
