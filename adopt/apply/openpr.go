package apply

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/adopt-dev/adopt/gitops"
)

// OpenPROptions are the pull request for a pushed branch, flags already
// resolved.
type OpenPROptions struct {
	Input PRInput
	// Provider and APIURL are --provider and --api-url ("" to infer them).
	Provider, APIURL string
	// Title is --pr-title ("" to render pr-title.tmpl).
	Title     string
	Labels    []string
	Reviewers []string
	Draft     bool
	// Text, when set, makes the title and body sent of the rendered ones
	// (reconcile's: its record appended, a person's edits kept).
	Text func(title, body string) (string, string)
	// Token is the Git token apply already has and TokenFrom where it came
	// from (--git-token or $ADOPT_GIT_TOKEN); without one the provider's
	// own variable is read through Getenv (nil: os.Getenv).
	Token, TokenFrom string
	Getenv           func(string) string
	// HTTPClient, Attempts and Backoff are for tests; zero means defaults.
	HTTPClient *http.Client
	Attempts   int
	Backoff    time.Duration
}

// OpenedPR is the pull request OpenPR asked for: the provider chosen and,
// once it answered, the pull request.
type OpenedPR struct {
	Provider gitops.ChosenProvider
	// PR is nil when the provider refused.
	PR *gitops.PullRequest
}

// OpenPR chooses the provider, renders the title and body, and opens (or
// updates) the pull request for o.Input.Head. It prints nothing. No
// provider or token, or a template that does not render, is a
// ContractError; when the provider refuses, the result still names it.
func OpenPR(ctx context.Context, o OpenPROptions) (*OpenedPR, error) {
	in := o.Input
	ch, err := gitops.ChooseProvider(gitops.ProviderChoice{RepoURL: in.RepoURL, Provider: o.Provider, APIURL: o.APIURL, Token: o.Token, TokenFrom: o.TokenFrom, Getenv: o.Getenv})
	if errors.Is(err, gitops.ErrPRProvider) || errors.Is(err, gitops.ErrNoToken) {
		return nil, &ContractError{msg: err.Error()}
	} else if err != nil {
		return nil, err
	}
	title, body, err := RenderPR(in, o.Title)
	if err != nil {
		return nil, &ContractError{msg: err.Error()}
	}
	if o.Text != nil {
		title, body = o.Text(title, body)
	}
	p, err := gitops.NewProvider(ch.Name, gitops.ProviderOptions{APIURL: ch.APIURL, Token: ch.Token, HTTPClient: o.HTTPClient, Attempts: o.Attempts, Backoff: o.Backoff})
	if err != nil {
		return nil, err
	}
	res := &OpenedPR{Provider: ch}
	res.PR, err = p.EnsurePR(ctx, gitops.PROptions{
		Repo: ch.Repo, Head: in.Head, Base: in.Base, Title: title, Body: body,
		Labels: o.Labels, Reviewers: o.Reviewers, Draft: o.Draft,
	})
	if err != nil {
		return res, err
	}
	return res, nil
}
