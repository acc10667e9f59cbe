package gitops

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Remote is the remote a repository on disk is fetched from: what Argo CD
// would clone it as.
type Remote struct {
	// Name is the remote's name (origin, upstream, …).
	Name string
	// URL is its first url, without credentials (Location.Clean).
	URL string
	// Branch is the checked-out branch whose upstream names the remote;
	// "" when the remote is origin for want of one.
	Branch string
}

// From says in words where the remote came from, for the plan.
func (r Remote) From() string {
	if r.Branch != "" {
		return fmt.Sprintf("remote %s (the upstream of branch %s)", r.Name, r.Branch)
	}
	return fmt.Sprintf("remote %s", r.Name)
}

// OpenLocal opens the repository dir is in: a work tree or a directory
// inside one, a linked worktree (its .git file, with the common directory
// it names), or a bare repository.
func OpenLocal(dir string) (*git.Repository, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		r, err = git.PlainOpen(dir) // a bare repository
	}
	return r, err
}

// UpstreamRemote is the remote of r's checked-out branch's upstream
// (branch.<name>.remote in its config), else origin; the zero Remote when
// r has neither. The URL never carries the credentials a remote's url may
// hold. An error says why the remote's url cannot be read as a repository
// location (its Name is then set).
func UpstreamRemote(r *git.Repository) (Remote, error) {
	cfg, err := r.Config()
	if err != nil {
		return Remote{}, fmt.Errorf("read the repository's config: %v", err)
	}
	rem := Remote{Name: remoteName}
	if head, err := r.Reference(plumbing.HEAD, false); err == nil && head.Type() == plumbing.SymbolicReference && head.Target().IsBranch() {
		branch := head.Target().Short()
		if b := cfg.Branches[branch]; b != nil && b.Remote != "" && b.Remote != "." && cfg.Remotes[b.Remote] != nil {
			rem.Name, rem.Branch = b.Remote, branch
		}
	}
	rc := cfg.Remotes[rem.Name]
	if rc == nil || len(rc.URLs) == 0 {
		return Remote{}, nil
	}
	l, err := ParseLocation(rc.URLs[0])
	if err != nil {
		return rem, fmt.Errorf("remote %s: %v", rem.Name, err)
	}
	rem.URL = l.Clean()
	return rem, nil
}
