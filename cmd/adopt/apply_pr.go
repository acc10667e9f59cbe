package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/apply"
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
	f.StringArrayVar(&o.Labels, "pr-label", nil, "label to add to the pull request (repeatable)")
	f.StringArrayVar(&o.Reviewers, "pr-reviewer", nil, "user name to ask for review (repeatable)")
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
	ref, err := gitops.ParseRepoURL(in.RepoURL)
	if err != nil {
		return "", err
	}
	name, why := o.Provider, "--provider"
	if name == "" {
		name, why = gitops.InferProvider(ref.Host), "inferred from host "+ref.Host
		if name == "" {
			return "", usageErrorf("cannot tell which provider hosts %s: pass --provider %s", ref.Host, strings.Join(gitops.ProviderNames(), "|"))
		}
	}
	apiURL := o.APIURL
	if apiURL == "" {
		apiURL = gitops.DefaultAPIURL(name, ref)
	}
	if token == "" {
		token, tokenFrom = o.token(name)
	}
	if token == "" {
		return "", usageErrorf("opening a pull request on %s needs a token: pass --git-token or set ADOPT_GIT_TOKEN or %s_TOKEN", ref.FullName(), strings.ToUpper(name))
	}
	title, body, err := apply.RenderPR(in, o.Title)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	p, err := gitops.NewProvider(name, gitops.ProviderOptions{APIURL: apiURL, Token: token, HTTPClient: o.httpClient, Attempts: o.attempts, Backoff: o.backoff})
	if err != nil {
		return "", err
	}
	if out != nil {
		fmt.Fprintf(out, "Pull request: provider %s (%s), API %s, token from %s\n", name, why, gitops.Redact(apiURL, token), tokenFrom)
	}
	pr, err := p.EnsurePR(ctx, gitops.PROptions{
		Repo: ref, Head: in.Head, Base: in.Base, Title: title, Body: body,
		Labels: o.Labels, Reviewers: o.Reviewers, Draft: o.Draft,
	})
	if err != nil {
		return "", err
	}
	if out != nil {
		verb := "Updated"
		if pr.Created {
			verb = "Opened"
		}
		fmt.Fprintf(out, "%s pull request #%d: %s\n", verb, pr.Number, pr.URL)
	}
	return pr.URL, nil
}

// token reads the provider's token from the environment, and says which
// variable (never what it is).
func (o *prOptions) token(provider string) (string, string) {
	getenv := o.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, k := range []string{gitops.EnvToken, strings.ToUpper(provider) + "_TOKEN"} {
		if v := getenv(k); v != "" {
			return v, "$" + k
		}
	}
	return "", ""
}
