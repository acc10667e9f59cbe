package gitops

import (
	"context"
	"errors"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// ReadOptions say which remote repository and revision to read.
type ReadOptions struct {
	// URL is an http(s)://, ssh:// or git@host:path location.
	URL  string
	Auth Auth
	// Revision is a branch, tag or commit; "" means the default branch.
	Revision string
}

// Snapshot is a remote repository read into memory at one revision.
type Snapshot struct {
	Repo *git.Repository
	// Commit is the revision's commit; zero means the clone's HEAD.
	Commit plumbing.Hash
	// URL is the location without credentials.
	URL string
}

// Read clones a remote repository into memory, shallow unless a commit is
// asked for, with the same location parse, auth and redaction as Clone.
func Read(ctx context.Context, o ReadOptions) (*Snapshot, error) {
	loc, err := ParseLocation(o.URL)
	if err != nil {
		return nil, newError(ErrNotFound, o.Auth.secrets(), "%v", err)
	}
	if !loc.Remote() {
		return nil, newError(ErrNotFound, nil, "%s is not a remote repository URL", loc.Clean())
	}
	secrets := o.Auth.secrets()
	switch u, p := loc.userinfo(); {
	case p != "":
		secrets = append(secrets, p)
	case u != "":
		secrets = append(secrets, u) // a token given as the URL's user
	}
	auth, err := o.Auth.method(loc)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{URL: loc.Clean()}
	co := &git.CloneOptions{URL: s.URL, Auth: auth, Depth: 1, Tags: git.NoTags}
	rev := o.Revision
	if rev != "" {
		if plumbing.IsHash(rev) {
			s.Commit, co.Depth = plumbing.NewHash(rev), 0
		} else {
			co.SingleBranch, co.ReferenceName = true, plumbing.NewBranchReferenceName(rev)
		}
	}
	s.Repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, co)
	// go-git says a branch is missing with either error.
	missing := func(err error) bool {
		return errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.NoMatchingRefSpecError{})
	}
	if err != nil && rev != "" && !plumbing.IsHash(rev) && missing(err) {
		co.ReferenceName = plumbing.NewTagReferenceName(rev)
		s.Repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, co)
	}
	if missing(err) {
		return nil, newError(ErrNoBase, secrets, "repo %s has no branch or tag %q. Check --revision", s.URL, rev)
	}
	if err != nil {
		return nil, wrap("clone", s.URL, err, secrets)
	}
	return s, nil
}
