package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/gitops"
)

// prOptions are the pull-request flags of `adopt apply`. The apply command
// calls AddFlags, Validate, and after pushing the branch, Open.
type prOptions struct {
	OpenPR    bool
	Provider  string
	APIURL    string
	Title     string
	Labels    []string
	Reviewers []string
	Draft     bool

	// getenv reads tokens from the environment; nil means os.Getenv.
	getenv func(string) string
	// httpClient, attempts and backoff are for tests; zero means defaults.
	httpClient *http.Client
	attempts   int
	backoff    time.Duration
}

// AddFlags registers the pull-request flags.
func (o *prOptions) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.OpenPR, "open-pr", false, "after pushing, open a pull request (a merge request on GitLab), or update the one already open for the branch")
	f.StringVar(&o.Provider, "provider", "", "pull-request provider: "+strings.Join(gitops.ProviderNames(), "|")+" (default: inferred from the repo URL's host)")
	f.StringVar(&o.APIURL, "api-url", "", "API base URL, for GitHub Enterprise, self-hosted GitLab, Gitea or Forgejo (default: derived from the repo URL)")
	f.StringVar(&o.Title, "pr-title", "", "pull-request title (default: rendered from pr-title.tmpl)")
	f.StringArrayVar(&o.Labels, "pr-label", nil, "label to add to the pull request when it is opened (repeatable)")
	f.StringArrayVar(&o.Reviewers, "pr-reviewer", nil, "user name to ask for review when the pull request is opened (repeatable)")
	f.BoolVar(&o.Draft, "draft", false, "open the pull request as a draft")
}

// Validate rejects bad pull-request flags with one sentence.
func (o *prOptions) Validate() error {
	if !o.OpenPR {
		if o.Provider != "" || o.APIURL != "" || o.Title != "" || len(o.Labels) > 0 || len(o.Reviewers) > 0 || o.Draft {
			return usageErrorf("--provider, --api-url, --pr-title, --pr-label, --pr-reviewer and --draft need --open-pr")
		}
		return nil
	}
	if o.Provider != "" {
		if _, err := gitops.NewProvider(o.Provider, gitops.ProviderOptions{APIURL: "http://127.0.0.1/"}); err != nil {
			return usageErrorf("--provider %q is not supported: use one of %s", o.Provider, strings.Join(gitops.ProviderNames(), ", "))
		}
	}
	if o.APIURL != "" {
		u, err := url.Parse(o.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErrorf("--api-url %q is not an http(s) URL", gitops.Redact(o.APIURL))
		}
		if u.User != nil {
			return usageErrorf("--api-url must not hold credentials: pass the token with --git-token or ADOPT_GIT_TOKEN")
		}
	}
	if strings.ContainsAny(o.Title, "\r\n") {
		return usageErrorf("--pr-title must be one line")
	}
	for _, l := range o.Labels {
		if strings.TrimSpace(l) == "" || strings.Contains(l, ",") {
			return usageErrorf("--pr-label %q must be one non-empty label without commas; repeat the flag for more", l)
		}
	}
	for _, r := range o.Reviewers {
		if strings.TrimSpace(r) == "" || strings.ContainsAny(r, " ,@") {
			return usageErrorf("--pr-reviewer %q must be one user name without @; repeat the flag for more", r)
		}
	}
	return nil
}

// Open opens (or updates) the pull request for in.Head and returns its URL.
// token is the Git token apply already has and tokenFrom where it came from
// (--git-token or $ADOPT_GIT_TOKEN); without one the provider's own
// variable is read. The one line saying which provider, API and token
// source were used goes to out.
func (o *prOptions) Open(ctx context.Context, in apply.PRInput, token, tokenFrom string, out io.Writer) (string, error) {
	po := o.options(token, tokenFrom)
	po.Input = in
	r, err := apply.OpenPR(ctx, po)
	if out != nil {
		printer.PullRequest(out, r)
	}
	if err != nil {
		return "", contractOr(err)
	}
	return r.PR.URL, nil
}

// options are the engine's pull-request options from the flags, with the
// Git token apply has and where it came from.
func (o *prOptions) options(token, tokenFrom string) apply.OpenPROptions {
	return apply.OpenPROptions{Provider: o.Provider, APIURL: o.APIURL, Title: o.Title, Labels: o.Labels, Reviewers: o.Reviewers, Draft: o.Draft,
		Token: token, TokenFrom: tokenFrom, Getenv: o.getenv, HTTPClient: o.httpClient, Attempts: o.attempts, Backoff: o.backoff}
}
