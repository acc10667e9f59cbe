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
}

// PRStateReader finds the newest pull request from o.Head (into o.Base,
// when set) in any state; nil when the branch never had one. Every
// Provider NewProvider returns is one.
type PRStateReader interface {
	PRState(ctx context.Context, o FindPROptions) (*PRStatus, error)
}

var (
	_ PRStateReader = (*gitHub)(nil)
	_ PRStateReader = (*gitLab)(nil)
	_ PRStateReader = (*giteaProvider)(nil)
)

// newest keeps the pull request with the highest number.
func newest(all []PRStatus) *PRStatus {
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Number > all[j].Number })
	return &all[0]
}

func (g *gitHub) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	opts := &github.PullRequestListOptions{State: "all", Head: o.Repo.Owner + ":" + o.Head, Base: o.Base, ListOptions: github.ListOptions{PerPage: 100}}
	var found []PRStatus
	for {
		prs, resp, err := g.c.PullRequests.List(ctx, o.Repo.Owner, o.Repo.Name, opts)
		if err != nil {
			return nil, g.err(o.Repo, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.GetHead().GetRef() != o.Head || o.Base != "" && pr.GetBase().GetRef() != o.Base {
				continue
			}
			s := PRStatus{Number: int64(pr.GetNumber()), URL: pr.GetHTMLURL(), State: PROpen, Head: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef()}
			switch {
			case pr.MergedAt != nil:
				s.State, s.MergedAt = PRMerged, pr.GetMergedAt().Time
			case pr.GetState() == "closed":
				s.State = PRClosed
			}
			found = append(found, s)
		}
		if resp.NextPage == 0 {
			return newest(found), nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *gitLab) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	opt := &gitlab.ListProjectMergeRequestsOptions{State: gitlab.Ptr("all"), SourceBranch: gitlab.Ptr(o.Head), ListOptions: gitlab.ListOptions{PerPage: 100}}
	if o.Base != "" {
		opt.TargetBranch = gitlab.Ptr(o.Base)
	}
	mrs, resp, err := g.c.MergeRequests.ListProjectMergeRequests(o.Repo.FullName(), opt, gitlab.WithContext(ctx))
	if err != nil {
		return nil, g.err(o.Repo, "list merge requests", resp, err)
	}
	var found []PRStatus
	for _, mr := range mrs {
		if mr.SourceBranch != o.Head || o.Base != "" && mr.TargetBranch != o.Base {
			continue
		}
		s := PRStatus{Number: mr.IID, URL: mr.WebURL, State: PROpen, Head: mr.SourceBranch, Base: mr.TargetBranch}
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
	return newest(found), nil
}

func (g *giteaProvider) PRState(ctx context.Context, o FindPROptions) (*PRStatus, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, transportError("gitea", o.Repo, "connect", err, g.o.Token)
	}
	opt := gitea.ListPullRequestsOptions{State: gitea.StateAll, ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	var found []PRStatus
	for {
		prs, resp, err := c.ListRepoPullRequests(o.Repo.Owner, o.Repo.Name, opt)
		if err != nil {
			return nil, g.err(o.Repo, "list pull requests", resp, err)
		}
		for _, pr := range prs {
			if pr.Head == nil || pr.Head.Ref != o.Head || pr.Base == nil || o.Base != "" && pr.Base.Ref != o.Base {
				continue
			}
			s := PRStatus{Number: pr.Index, URL: pr.HTMLURL, State: PROpen, Head: pr.Head.Ref, Base: pr.Base.Ref}
			switch {
			case pr.HasMerged:
				s.State = PRMerged
				if pr.Merged != nil {
					s.MergedAt = *pr.Merged
				}
			case pr.State == gitea.StateClosed:
				s.State = PRClosed
			}
			found = append(found, s)
		}
		if len(prs) < opt.PageSize || resp == nil || resp.NextPage == 0 {
			return newest(found), nil
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
	ref := r.remoteRef(branch)
	if ref == nil {
		return false, newError(ErrNoBase, r.secrets, "repo %s has no branch %q. Check --base", r.display, branch)
	}
	c, err := r.repo.CommitObject(ref.Hash())
	if err != nil {
		return false, wrap("read the head of "+branch+" of", r.display, err, r.secrets)
	}
	t, err := c.Tree()
	if err != nil {
		return false, wrap("read the tree of "+branch+" of", r.display, err, r.secrets)
	}
	_, err = t.File(p)
	switch {
	case errors.Is(err, object.ErrFileNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s on branch %s of %s: %w", p, branch, r.display, err)
	}
	return true, nil
}
