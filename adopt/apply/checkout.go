package apply

import (
	"context"
	"fmt"
	"os"

	"github.com/adopt-dev/adopt/gitops"
)

// CheckoutOptions say which repository apply writes into.
type CheckoutOptions struct {
	URL  string
	Auth gitops.Auth
	// Base is the branch the change builds on; empty for the
	// repository's default branch.
	Base string
	// OnDisk clones, with a working tree, into a new temporary directory
	// which the result names (--no-push keeps it for review). Without it
	// the objects go to a private temporary directory that Close removes.
	OnDisk bool
}

// Checkout is the clone apply writes into.
type Checkout struct {
	Repo *gitops.Repo
	// Base is the branch the change builds on.
	Base string
	// Dir is the clone's directory (OnDisk); empty otherwise.
	Dir string
}

// Clone clones the repository and resolves the branch to build on. A
// repository that does not tell its default branch, with no Base given,
// is a ContractError. On an error no directory is left behind; on success
// the caller must Close (or Remove) the result.
func Clone(ctx context.Context, o CheckoutOptions) (*Checkout, error) {
	co := &Checkout{Base: o.Base}
	if o.OnDisk {
		dir, err := os.MkdirTemp("", "adopt-apply-")
		if err != nil {
			return nil, err
		}
		co.Dir = dir
	}
	var err error
	if co.Repo, err = gitops.Clone(ctx, gitops.CloneOptions{URL: o.URL, Auth: o.Auth, Dir: co.Dir, Base: o.Base}); err == nil && co.Base == "" {
		if co.Base = co.Repo.DefaultBranch(); co.Base == "" {
			err = &ContractError{fmt.Sprintf("cannot tell the default branch of %s: pass --base", co.Repo.URL())}
		}
	}
	if err != nil {
		co.Remove()
		return nil, err
	}
	return co, nil
}

// Close removes the clone's private temporary object store (gitops
// Repo.Close) and keeps Dir, the clone --no-push leaves for review.
func (co *Checkout) Close() {
	if co.Repo != nil {
		co.Repo.Close()
	}
}

// Remove closes the clone and deletes its directory, if it has one.
func (co *Checkout) Remove() {
	co.Close()
	if co.Dir != "" {
		os.RemoveAll(co.Dir)
	}
}

// ExportWhileCloning runs export (reading the plan's objects from the
// cluster) while it clones: the two wait on different servers. An export
// error comes first, as if the clone had not started, and stops it.
func ExportWhileCloning(ctx context.Context, export func(context.Context) (*Applier, error), o CheckoutOptions) (*Applier, *Checkout, error) {
	cloneCtx, stop := context.WithCancel(ctx)
	defer stop()
	var a *Applier
	var exportErr error
	exported := make(chan struct{})
	go func() {
		defer close(exported)
		if a, exportErr = export(ctx); exportErr != nil {
			stop()
		}
	}()
	co, err := Clone(cloneCtx, o)
	<-exported
	if exportErr != nil {
		if co != nil {
			co.Remove()
		}
		return nil, nil, exportErr
	}
	return a, co, err
}
