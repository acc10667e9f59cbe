package gitops

// Read-only questions `adopt status` asks: does a branch exist, is one
// commit on another branch, does a branch hold a file; and what became of
// the pull request for a branch (open, merged or closed), on each provider.
// Nothing here writes to the repository or to the provider.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v84/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Pull-request states PRState reports.
const (
	PROpen   = "open"
	PRMerged = "merged"
	PRClosed = "closed"
)

// PRStatus is the newest pull request from a branch, in whatever state.
type PRStatus struct {
	Number int64  `json:"number" yaml:"number"`
	URL    string `json:"url" yaml:"url"`
	// State is open, merged or closed (closed without merging).
	State string `json:"state" yaml:"state"`
	Head  string `json:"head" yaml:"head"`
	Base  string `json:"base" yaml:"base"`
	// MergedAt is when it was merged (zero unless merged).
	MergedAt time.Time `json:"mergedAt,omitempty" yaml:"mergedAt,omitempty"`
	// HeadSHA is the commit the head branch pointed at, Title and Body
	// the title and description (for reconcile's markers, and to keep a
	// person's edits; never printed).
	HeadSHA string `json:"-" yaml:"-"`
	Title   string `json:"-" yaml:"-"`
	Body    string `json:"-" yaml:"-"`
}

// PRStateReader finds the newest pull request from o.Head (into o.Base,
// when set) in any state, asking the provider about that branch only; nil
// when the branch never had one. Every Provider NewProvider returns is
// one.
type PRStateReader interface {
	PRState(ctx context.Context, o FindPROptions) (*PRStatus, error)
	// ListOpenPRs lists the open pull requests into base (any base when
	// "") whose head branch starts with prefix, newest first: the
	// provider filters by state, so closed and merged ones, which grow
	// without end, are not paged through.
	ListOpenPRs(ctx context.Context, r RepoRef, base, prefix string) ([]PRStatus, error)
}

var (
	_ PRStateReader = (*gitHub)(nil)
	_ PRStateReader = (*gitLab)(nil)
	_ PRStateReader = (*giteaProvider)(nil)
)

// newestFirst sorts pull requests by number, highest first.
func newestFirst(all []PRStatus) []PRStatus {
	sort.Slice(all, func(i, j int) bool { return all[i].Number > all[j].Number })
	return all
}

// exactly is the newest of a list's pull requests from exactly head.
func exactly(all []PRStatus, err error, head string) (*PRStatus, error) {
	if err != nil {
		return nil, err
	}
	for _, pr := range all {
		if pr.Head == head {
			return &pr, nil
		}
	}
	return nil, nil
}

func (g *gitHub) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	all, err := g.list(ctx, o.Repo, o.Base, o.Head, o.Head, "all")
	return exactly(all, err, o.Head)
}

func (g *gitHub) ListOpenPRs(ctx context.Context, r RepoRef, base, prefix string) ([]PRStatus, error) {
	return g.list(ctx, r, base, "", prefix, "open")
}

// list lists the pull requests in state (open or all) whose head starts
// with prefix; a head names one branch for the API to filter by
// (owner:branch), so that one branch's lookup does not page through every
// pull request.
func (g *gitHub) list(ctx context.Context, r RepoRef, base, head, prefix, state string) ([]PRStatus, error) {
	opts := &github.PullRequestListOptions{State: state, Base: base, ListOptions: github.ListOptions{PerPage: 100}}
	if head != "" {
		opts.Head = r.Owner + ":" + head
	}
	var found []PRStatus
	for {
		prs, resp, err := g.c.PullRequests.List(ctx, r.Owner, r.Name, opts)
		if err != nil {
			return nil, g.err(r, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if !strings.HasPrefix(pr.GetHead().GetRef(), prefix) || base != "" && pr.GetBase().GetRef() != base {
				continue
			}
			s := PRStatus{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), State: PROpen, Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(),
				HeadSHA: pr.GetHead().GetSHA(), Title: pr.GetTitle(), Body: pr.GetBody()}
			switch {
			case pr.MergedAt != nil:
				s.State, s.MergedAt = PRMerged, pr.GetMergedAt().Time
			case pr.GetState() == "closed":
				s.State = PRClosed
			}
			found = append(found, s)
		}
		if resp.NextPage == 0 {
			return newestFirst(found), nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitLab) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	all, err := g.list(ctx, o.Repo, o.Base, o.Head, o.Head, "all")
	return exactly(all, err, o.Head)
}

func (g *gitLab) ListOpenPRs(ctx context.Context, r RepoRef, base, prefix string) ([]PRStatus, error) {
	return g.list(ctx, r, base, "", prefix, "opened")
}

// list is GitHub's list on GitLab: head is the source_branch filter, state
// opened or all.
func (g *gitLab) list(ctx context.Context, r RepoRef, base, head, prefix, state string) ([]PRStatus, error) {
	opt := &gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr(state), ListOptions: gitlab.ListOptions{PerPage: 100, Page: 1}}
	if head != "" {
		opt.SourceBranch = gitlab.Ptr(head)
	}
	if base != "" {
		opt.TargetBranch = gitlab.Ptr(base)
	}
	var found []PRStatus
	for {
		mrs, resp, err := g.c.MergeRequests.ListProjectMergeRequests(r.FullName(), opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, g.err(r, "list merge requests", resp, err)
		}
		for _, mr := range mrs {
			if !strings.HasPrefix(mr.SourceBranch, prefix) || base != "" && mr.TargetBranch != base {
				continue
			}
			s := PRStatus{Number: mr.IID, URL: mr.WebURL, State: PROpen, Head: mr.SourceBranch, Base: mr.TargetBranch, HeadSHA: mr.SHA, Title: mr.Title, Body: mr.Description}
			switch mr.State {
			case "merged":
				s.State = PRMerged
				if mr.MergedAt != nil {
					s.MergedAt = *mr.MergedAt
				}
			case "closed", "locked":
				s.State = PRClosed
			}
			found = append(found, s)
		}
		if resp == nil || resp.NextPage == 0 {
			return newestFirst(found), nil
		}
		opt.Page = resp.NextPage
	}
}

// PRState pages through Gitea's pull requests, newest first (its list
// filters by no head, and its pulls/{base}/{head} answers the oldest),
// and stops at the page holding the branch's newest one: a branch
// reconcile asks about is a recent one.
func (g *giteaProvider) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	var found *PRStatus
	_, err := g.pages(ctx, o.Repo, o.Base, o.Head, gitea.StateAll, func(s PRStatus) bool {
		if s.Head == o.Head && (found == nil || s.Number > found.Number) {
			found = &s
		}
		return found != nil
	})
	return found, err
}

func (g *giteaProvider) ListOpenPRs(ctx context.Context, r RepoRef, base, prefix string) ([]PRStatus, error) {
	return g.pages(ctx, r, base, prefix, gitea.StateOpen, func(PRStatus) bool { return false })
}

// pages lists the pull requests in state whose head starts with prefix,
// page by page, newest first, until a page after which enough says true.
func (g *giteaProvider) pages(ctx context.Context, r RepoRef, base, prefix string, state gitea.StateType, enough func(PRStatus) bool) ([]PRStatus, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, transportError("gitea", r, "connect", err, g.o.Token)
	}
	opt := gitea.ListPullRequestsOptions{State: state, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	var found []PRStatus
	for {
		prs, resp, err := c.ListRepoPullRequests(r.Owner, r.Name, opt)
		if err != nil {
			return nil, g.err(r, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.Head == nil || !strings.HasPrefix(pr.Head.Ref, prefix) || pr.Base == nil || base != "" && pr.Base.Ref != base {
				continue
			}
			found = append(found, giteaStatus(pr))
		}
		stop := false
		for _, s := range found {
			stop = stop || enough(s)
		}
		if stop || len(prs) < opt.PageSize || resp == nil || resp.NextPage == 0 {
			return newestFirst(found), nil
		}
		opt.Page = resp.NextPage
	}
}

// BranchHead is the commit the remote's branch points at, and false when
// the remote has no such branch.
func (r *Repo) BranchHead(branch string) (string, bool) {
	ref := r.remoteRef(branch)
	if ref == nil {
		return "", false
	}
	return ref.Hash().String(), true
}

// OnBranch reports whether commit is the head of the remote's branch or one
// of its ancestors (a merge brought it in).
func (r *Repo) OnBranch(commit, branch string) (bool, error) {
	ref := r.remoteRef(branch)
	if ref == nil {
		return false, newError(ErrNoBase, r.secrets, "repo %s has no branch %q. Check --base", r.display, branch)
	}
	if ref.Hash().String() == commit {
		return true, nil
	}
	head, err := r.repo.CommitObject(ref.Hash())
	if err != nil {
		return false, wrap("read the head of "+branch+" of", r.display, err, r.secrets)
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return false, wrap("read commit "+commit+" of", r.display, err, r.secrets)
	}
	return c.IsAncestor(head)
}

// BranchHasFile reports whether the remote's branch holds the file p.
func (r *Repo) BranchHasFile(branch, p string) (bool, error) {
	_, ok, err := r.BranchFile(branch, p)
	return ok, err
}

// BranchFile reads the file p of the remote's branch, and false when the
// branch does not hold it.
func (r *Repo) BranchFile(branch, p string) ([]byte, bool, error) {
	ref := r.remoteRef(branch)
	if ref == nil {
		return nil, false, newError(ErrNoBase, r.secrets, "repo %s has no branch %q. Check --base", r.display, branch)
	}
	c, err := r.repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, false, wrap("read the head of "+branch+" of", r.display, err, r.secrets)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, false, wrap("read the tree of "+branch+" of", r.display, err, r.secrets)
	}
	f, err := t.File(p)
	switch {
	case errors.Is(err, object.ErrFileNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read %s on branch %s of %s: %w", p, branch, r.display, err)
	}
	text, err := f.Contents()
	if err != nil {
		return nil, false, fmt.Errorf("read %s on branch %s of %s: %w", p, branch, r.display, err)
	}
	return []byte(text), true, nil
}

// giteaStatus is a Gitea pull request as PRStatus.
func giteaStatus(pr *gitea.PullRequest) PRStatus {
	s := PRStatus{Number: pr.Index, URL: pr.HTMLURL, State: PROpen, Head: pr.Head.Ref, Base: pr.Base.Ref, HeadSHA: pr.Head.Sha, Title: pr.Title, Body: pr.Body}
	switch {
	case pr.HasMerged:
		s.State = PRMerged
		if pr.Merged != nil {
			s.MergedAt = *pr.Merged
		}
	case pr.State == gitea.StateClosed:
		s.State = PRClosed
	}
	return s
}
