package gitindex

import (
	"context"
	"fmt"
	"strings"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/adopt-dev/adopt/gitops"
)

// revisions reads the same repo at other revisions, as an Application's
// targetRevision asks: each commit once, shared by every index Load made
// from one Source.
type revisions struct {
	src  Source
	head string // the commit Load indexed
	// resolve turns a targetRevision into a commit of the repo.
	resolve func(ctx context.Context, rev string) (string, error)

	mu sync.Mutex
	at map[string]*Index // by commit
	// root is the index Load returned (a subtree's is the root's).
	root *Index
}

// AtRevision is the repo at an Application's targetRevision: ix itself
// for "" and HEAD (the revision the plan reads), else that branch, tag or
// commit. A checkout resolves a branch as its remote has it (what Argo CD
// fetches), then a tag, a local branch or a commit; a URL is read again
// at that revision, with ctx. A revision the repo lacks is an error
// saying how to fetch it.
func (ix *Index) AtRevision(ctx context.Context, rev string) (*Index, error) {
	r := ix.revs
	if IsHead(rev) {
		if r != nil {
			return r.root, nil
		}
		return ix, nil
	}
	if r == nil {
		return nil, fmt.Errorf("targetRevision %s: %s is not a Git repository, so only its files as they are can be read", rev, ix.Source)
	}
	commit, err := r.resolve(ctx, rev)
	if err != nil {
		return nil, err
	}
	if commit == r.head {
		return r.root, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if at := r.at[commit]; at != nil {
		return at, nil
	}
	src := r.src
	src.Revision = commit
	at, err := Load(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("targetRevision %s (commit %s): %v", rev, commit, err)
	}
	at.revs = r
	r.at[commit] = at
	return at, nil
}

// SameRevision says whether rev is the revision the index was read at:
// "" or HEAD for the plan's own index, or a name that resolves to its
// commit (resolved with ctx: a URL's revision is read from its remote).
func (ix *Index) SameRevision(ctx context.Context, rev string) bool {
	if IsHead(rev) {
		return ix.revs == nil || ix.revs.root == ix
	}
	if ix.revs == nil {
		return false
	}
	commit, err := ix.revs.resolve(ctx, rev)
	return err == nil && commit == ix.Revision
}

// IsHead says whether a targetRevision means the repo's default revision.
func IsHead(rev string) bool {
	return rev == "" || rev == "HEAD"
}

// localResolver resolves revisions in the repository at dir, whose remote
// Argo CD reads from: the remote's branch first, as Argo CD fetches it,
// then a tag, a local branch and a commit.
func localResolver(dir, location, remote string) func(context.Context, string) (string, error) {
	return func(_ context.Context, rev string) (string, error) {
		repo, err := gitops.OpenLocal(dir)
		if err != nil {
			return "", fmt.Errorf("open repo %s: %v", location, err)
		}
		var names []plumbing.ReferenceName
		if remote != "" {
			names = append(names, plumbing.NewRemoteReferenceName(remote, rev))
		}
		names = append(names, plumbing.NewTagReferenceName(rev), plumbing.NewBranchReferenceName(rev))
		for _, n := range names {
			if ref, err := repo.Reference(n, true); err == nil {
				return peel(repo, ref.Hash()), nil
			}
		}
		if h, err := repo.ResolveRevision(plumbing.Revision(rev)); err == nil {
			return peel(repo, *h), nil
		}
		fetch := "git fetch"
		if remote != "" {
			fetch += " " + remote
		}
		return "", fmt.Errorf("targetRevision %s is not in the checkout %s (no branch, tag or commit of that name): run %q (and %s --tags) in it, then plan again", rev, location, fetch, fetch)
	}
}

// peel is the commit an annotated tag points to (h itself otherwise).
func peel(repo *git.Repository, h plumbing.Hash) string {
	if t, err := repo.TagObject(h); err == nil {
		if c, err := t.Commit(); err == nil {
			return c.Hash.String()
		}
	}
	return h.String()
}

// urlResolver resolves a revision of a remote repository by reading it.
func urlResolver(src Source) func(context.Context, string) (string, error) {
	return func(ctx context.Context, rev string) (string, error) {
		if plumbing.IsHash(rev) {
			return strings.ToLower(rev), nil
		}
		snap, err := gitops.Read(ctx, gitops.ReadOptions{URL: src.Location, Auth: src.Auth, Revision: rev})
		if err != nil {
			return "", fmt.Errorf("targetRevision %s of %s: %s", rev, gitops.Redact(src.Location), gitops.OneLine(gitops.Redact(err.Error(), src.Auth.Token, src.Auth.Password)))
		}
		head, err := snap.Repo.Head()
		if err != nil {
			return "", fmt.Errorf("targetRevision %s of %s: %v", rev, snap.URL, err)
		}
		return peel(snap.Repo, head.Hash()), nil
	}
}
