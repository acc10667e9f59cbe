package gitops

import (
	"context"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v84/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// PRCloser closes a pull request with a comment saying why, as Renovate's
// "autoclosed" does: reconcile closes one whose objects are gone or
// tracked. Every Provider NewProvider returns is one.
type PRCloser interface {
	// ClosePR posts o.Comment on the pull request, then closes it
	// (without merging, and without deleting its branch).
	ClosePR(ctx context.Context, o ClosePROptions) error
}

// ClosePROptions name the pull request to close and the comment to post.
type ClosePROptions struct {
	Repo    RepoRef
	Number  int64
	Comment string
}

var (
	_ PRCloser = (*gitHub)(nil)
	_ PRCloser = (*gitLab)(nil)
	_ PRCloser = (*giteaProvider)(nil)
)

// ClosePR on GitHub: rest/issues/comments#create-an-issue-comment, then
// rest/pulls/pulls#update-a-pull-request with state=closed.
func (g *gitHub) ClosePR(ctx context.Context, o ClosePROptions) error {
	n := int(o.Number)
	if _, resp, err := g.c.Issues.CreateComment(ctx, o.Repo.Owner, o.Repo.Name, n, &github.IssueComment{Body: &o.Comment}); err != nil {
		return g.err(o.Repo, "comment on pull request #"+itoa(o.Number), resp, err)
	}
	closed := "closed"
	if _, resp, err := g.c.PullRequests.Edit(ctx, o.Repo.Owner, o.Repo.Name, n, &github.PullRequest{State: &closed}); err != nil {
		return g.err(o.Repo, "close pull request #"+itoa(o.Number), resp, err)
	}
	return nil
}

// ClosePR on GitLab: api/notes#create-new-merge-request-note, then
// api/merge_requests#update-mr with state_event=close.
func (g *gitLab) ClosePR(ctx context.Context, o ClosePROptions) error {
	pid := o.Repo.FullName()
	if _, resp, err := g.c.Notes.CreateMergeRequestNote(pid, o.Number, &gitlab.CreateMergeRequestNoteOptions{Body: &o.Comment}, gitlab.WithContext(ctx)); err != nil {
		return g.err(o.Repo, "comment on merge request !"+itoa(o.Number), resp, err)
	}
	if _, resp, err := g.c.MergeRequests.UpdateMergeRequest(pid, o.Number, &gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(ctx)); err != nil {
		return g.err(o.Repo, "close merge request !"+itoa(o.Number), resp, err)
	}
	return nil
}

// ClosePR on Gitea: POST /repos/{owner}/{repo}/issues/{index}/comments,
// then PATCH /repos/{owner}/{repo}/pulls/{index} with state=closed.
func (g *giteaProvider) ClosePR(ctx context.Context, o ClosePROptions) error {
	c, err := g.client(ctx)
	if err != nil {
		return transportError("gitea", o.Repo, "connect", err, g.o.Token)
	}
	if _, resp, err := c.CreateIssueComment(o.Repo.Owner, o.Repo.Name, o.Number, gitea.CreateIssueCommentOption{Body: o.Comment}); err != nil {
		return g.err(o.Repo, "comment on pull request #"+itoa(o.Number), resp, err)
	}
	closed := gitea.StateClosed
	if _, resp, err := c.EditPullRequest(o.Repo.Owner, o.Repo.Name, o.Number, gitea.EditPullRequestOption{State: &closed}); err != nil {
		return g.err(o.Repo, "close pull request #"+itoa(o.Number), resp, err)
	}
	return nil
}
