package apply

import (
	"context"

	"github.com/adopt-dev/adopt/gitops"
)

// Change is what one apply commits: a plan's Applier or a fleet's.
type Change interface {
	// ID names the plan; the default branch is adopt/<ID>.
	ID() string
	// Target sets the Applications' repoURL default and targetRevision.
	Target(repoURL, revision string)
	// Build computes the commit from the tree at the branch tip.
	Build(Tree) (gitops.Content, error)
}

// WriteOptions say how a Change is committed into a Checkout.
type WriteOptions struct {
	// Branch is the branch to write; empty for adopt/<plan id>.
	Branch string
	// RepoURL is the Applications' source.repoURL; empty for the
	// repository's own clean URL.
	RepoURL string
	Author  gitops.Signature
	// DryRun builds the commit and its diff, and pushes nothing.
	DryRun bool
	// NoPush commits in the clone and pushes nothing.
	NoPush bool
	// Force resets the branch onto the base and force-pushes it.
	Force bool
	// Expect and BeforePush are gitops.PublishOptions': the branch tips
	// the caller decided from (a branch elsewhere is left alone, an error
	// wrapping gitops.ErrBranchMoved), and what runs once the commit is
	// built, before it is pushed.
	Expect     []string
	BeforePush func(ctx context.Context, res *gitops.Result) error
	// FromBase builds on the base even when the branch exists (a merged
	// pull request's branch), as gitops.PublishOptions.FromBase.
	FromBase bool
}

// Write commits c on its branch of co, built on co.Base, and pushes it
// unless told not to. A dry run's result carries the unified diff.
func Write(ctx context.Context, co *Checkout, c Change, o WriteOptions) (*gitops.Result, error) {
	branch := o.Branch
	if branch == "" {
		branch = "adopt/" + c.ID()
	}
	repoURL := o.RepoURL
	if repoURL == "" {
		repoURL = co.Repo.SourceURL()
	}
	c.Target(repoURL, co.Base)
	build := func(r *gitops.Repo) (gitops.Content, error) { return c.Build(r) }
	return co.Repo.Publish(ctx, gitops.Change{Branch: branch, Base: co.Base, Build: build, Author: o.Author},
		gitops.PublishOptions{NoPush: o.NoPush || o.DryRun, Force: o.Force, Diff: o.DryRun, Expect: o.Expect, BeforePush: o.BeforePush, FromBase: o.FromBase})
}
