package reconcile

import (
	"context"
	"fmt"
	"sync"

	"github.com/adopt-dev/adopt/gitops"
)

// lazyPRs is the provider's pull requests, resolved (with the base branch)
// on first use: a run with nothing to do asks the provider nothing.
type lazyPRs struct {
	// Get resolves the provider and the base branch.
	Get  func(context.Context) (gitops.PRStateReader, string, error)
	once sync.Once
	p    gitops.PRStateReader
	base string
	err  error
}

func (l *lazyPRs) resolve(ctx context.Context) error {
	l.once.Do(func() { l.p, l.base, l.err = l.Get(ctx) })
	return l.err
}

// ListOpenPRs is the provider's, into the resolved base when base is "".
func (l *lazyPRs) ListOpenPRs(ctx context.Context, r gitops.RepoRef, base, prefix string) ([]gitops.PRStatus, error) {
	if err := l.resolve(ctx); err != nil {
		return nil, err
	}
	if base == "" {
		base = l.base
	}
	return l.p.ListOpenPRs(ctx, r, base, prefix)
}

// PRState is the provider's, into the resolved base when o.Base is "".
func (l *lazyPRs) PRState(ctx context.Context, o gitops.FindPROptions) (*gitops.PRStatus, error) {
	if err := l.resolve(ctx); err != nil {
		return nil, err
	}
	if o.Base == "" {
		o.Base = l.base
	}
	return l.p.PRState(ctx, o)
}

// ClosePR is the provider's (gitops.PRCloser).
func (l *lazyPRs) ClosePR(ctx context.Context, o gitops.ClosePROptions) error {
	if err := l.resolve(ctx); err != nil {
		return err
	}
	c, ok := l.p.(gitops.PRCloser)
	if !ok {
		return fmt.Errorf("the provider cannot close a pull request")
	}
	return c.ClosePR(ctx, o)
}
