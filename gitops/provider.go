// The provider seam: opening and updating pull requests (merge requests on
// GitLab) on GitHub, GitLab and Gitea/Forgejo, behind one small interface.
//
// Library choice. Each provider is driven by the client its own ecosystem
// keeps: github.com/google/go-github/v84, gitlab.com/gitlab-org/api/client-go
// v1.46.0 and code.gitea.io/sdk/gitea v0.25.1. The one abstraction over all
// three, github.com/fluxcd/go-git-providers v0.30.0, was the first choice and
// was ruled out on two facts checked here: its go.mod says go 1.27.0, which
// this toolchain (go1.26, GOTOOLCHAIN=local) refuses to build; and its
// PullRequestClient has no labels, reviewers or draft, and Edit changes only
// the title, so a second run could not update the body. The three clients add
// no k8s.io module and leave the v0.31 pins as they are (checked with go get
// and `go list -m k8s.io/...`); gitea's SDK raises the go directive to 1.26.
// Each provider file is a thin adapter, so swapping a client touches one
// file.
//
// What this seam must not do: log or print a token, or let one reach an error
// message (every error goes through Redact); open a second pull request for a
// branch that already has one open; know what a plan or an Application is
// (callers hand it a title, a body and labels).
package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Errors callers can test with errors.Is. Every provider error wraps one of
// them (or ErrAuth, ErrForbidden or ErrNotFound), names the repository and
// says what to do, in one line, with the token redacted.
var (
	ErrPRConflict    = errors.New("pull request conflict")
	ErrPRInvalid     = errors.New("pull request refused")
	ErrPRUnavailable = errors.New("provider unavailable")
	ErrPRProvider    = errors.New("unknown provider")
	// ErrRateLimited is a provider refusing calls for a while (GitHub's
	// primary or secondary rate limit, a 429): not a missing permission.
	// Waiting and running again is the fix.
	ErrRateLimited = errors.New("rate limited")
)

// Provider opens pull requests on one Git host. It is deliberately small.
type Provider interface {
	// Name is "github", "gitlab" or "gitea".
	Name() string
	// FindPR returns the open pull request from o.Head into o.Base, or nil
	// when there is none.
	FindPR(ctx context.Context, o FindPROptions) (*PullRequest, error)
	// EnsurePR opens a pull request from o.Head into o.Base or, when one is
	// already open, updates its title, body, labels and reviewers. It never
	// opens a second one.
	EnsurePR(ctx context.Context, o PROptions) (*PullRequest, error)
}

// RepoRef names a repository on a host.
type RepoRef struct {
	// Scheme and Host are the web address's ("https", "git.example.invalid:3000").
	Scheme string
	Host   string
	// Owner is the user, organisation or (on GitLab) the group path,
	// which may contain slashes.
	Owner string
	Name  string
}

// FullName is owner/name.
func (r RepoRef) FullName() string { return r.Owner + "/" + r.Name }

// FindPROptions select an open pull request.
type FindPROptions struct {
	Repo RepoRef
	Head string
	Base string
}

// PROptions describe the pull request EnsurePR wants to exist.
type PROptions struct {
	Repo  RepoRef
	Head  string
	Base  string
	Title string
	Body  string
	// Labels are added when the pull request is opened (an update leaves
	// them as people left them); on Gitea they are created in the
	// repository when missing.
	Labels []string
	// Reviewers are user names asked to review when the pull request is
	// opened (an update asks no one again, nor adds back one removed).
	Reviewers []string
	// Draft opens the pull request as a draft (on Gitea: a "WIP: " title).
	Draft bool
}

// PullRequest is what the provider reports back.
type PullRequest struct {
	Number int64
	URL    string
	Title  string
	Head   string
	Base   string
	// Created is true when EnsurePR opened it, false when it updated it.
	Created bool
}

// ProviderOptions configure a provider client.
type ProviderOptions struct {
	// APIURL is the API base. Empty means the one derived from the repo
	// host (see DefaultAPIURL).
	APIURL string
	// Token authenticates every call. It is never logged.
	Token string
	// HTTPClient is the base client; nil means a client with a 30s timeout.
	HTTPClient *http.Client
	// Attempts bounds tries on 5xx and transport errors (default 4);
	// Backoff is the first wait, doubled each time (default 500ms). A rate
	// limit (403 or 429) whose Retry-After fits in what those waits add up
	// to (3.5s by default) is waited out and retried within the same
	// attempts; a longer one is reported at once (ErrRateLimited).
	Attempts int
	Backoff  time.Duration
}

// constructors maps a provider name to its constructor. It is never mutated.
var constructors = map[string]func(ProviderOptions) (Provider, error){
	"github": newGitHub,
	"gitlab": newGitLab,
	"gitea":  newGitea,
}

// ProviderNames lists the providers, sorted.
func ProviderNames() []string {
	var names []string
	for n := range constructors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewProvider returns the named provider. o.APIURL must be set (see
// DefaultAPIURL).
func NewProvider(name string, o ProviderOptions) (Provider, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("%w %q: want one of %s", ErrPRProvider, name, strings.Join(ProviderNames(), ", "))
	}
	if o.APIURL == "" {
		return nil, fmt.Errorf("%s provider needs an API URL: pass --api-url", name)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	o.HTTPClient = retrying(o.HTTPClient, o.Attempts, o.Backoff)
	return c(o)
}

// InferProvider guesses the provider from a repository host: a host whose
// name contains "github", "gitlab", or "gitea", "forgejo" or "codeberg".
// It returns "" when the host says nothing; callers then ask for --provider.
func InferProvider(host string) string {
	h := strings.ToLower(host)
	switch {
	case strings.Contains(h, "github"):
		return "github"
	case strings.Contains(h, "gitlab"):
		return "gitlab"
	case strings.Contains(h, "gitea"), strings.Contains(h, "forgejo"), strings.Contains(h, "codeberg"):
		return "gitea"
	}
	return ""
}

// ParseRepoURL reads owner and name from an HTTPS, SSH or scp-like
// (git@host:owner/name.git) repository URL: ParseLocation's parse, then
// Location.Ref. Credentials in the URL are dropped.
func ParseRepoURL(raw string) (RepoRef, error) {
	l, err := ParseLocation(raw)
	if err != nil || !l.Remote() {
		return RepoRef{}, fmt.Errorf("repository URL %q is not a remote URL (want https://host/owner/name.git or git@host:owner/name.git)", Redact(raw))
	}
	return l.Ref()
}

// Ref is the provider's view of a remote location: its web scheme and
// host, owner and name. An SSH remote's web side is https on the same host
// (an SSH port says nothing about the web port).
func (l Location) Ref() (RepoRef, error) {
	s := strings.TrimSpace(l.Raw)
	if l.SCP {
		host, p, _ := strings.Cut(s, ":")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		s = "ssh://" + host + "/" + p
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return RepoRef{}, fmt.Errorf("repository URL %q is not a remote URL (want https://host/owner/name.git or git@host:owner/name.git)", Redact(l.Raw))
	}
	p := strings.Trim(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/")
	i := strings.LastIndex(p, "/")
	if i <= 0 || i == len(p)-1 {
		return RepoRef{}, fmt.Errorf("repository URL %q has no owner/name path", Redact(l.Raw))
	}
	scheme, host := "https", u.Hostname()
	if l.Scheme == SchemeHTTP {
		scheme, host = strings.ToLower(u.Scheme), u.Host
	}
	return RepoRef{Scheme: scheme, Host: host, Owner: p[:i], Name: p[i+1:]}, nil
}

// DefaultAPIURL is the API base for a provider when --api-url is not given:
// the public GitHub API for the public GitHub host, https://host/api/v3/ for
// GitHub Enterprise, https://host/api/v4/ for GitLab and https://host/ for
// Gitea (its SDK adds /api/v1).
func DefaultAPIURL(provider string, r RepoRef) string {
	base := r.Scheme + "://" + r.Host + "/"
	switch provider {
	case "github":
		if api := githubPublicAPI(); api.Host == "api."+r.Host {
			return api.String()
		}
		return base + "api/v3/"
	case "gitlab":
		return base + "api/v4/"
	}
	return base
}

// prError turns a provider's HTTP status into one sentence that says what
// happened, on which repository, and what to do. hint403 names the
// permission the provider wants.
func prError(provider string, r RepoRef, op string, status int, detail string, token string) error {
	repo := r.FullName()
	var kind error
	var msg string
	switch {
	case status == http.StatusUnauthorized:
		kind = ErrAuth
		msg = fmt.Sprintf("%s rejected the token while trying to %s on %s (401): pass a valid token with --git-token or %s", provider, op, repo, tokenEnvHint(provider))
	case status == http.StatusForbidden:
		kind = ErrForbidden
		msg = fmt.Sprintf("token lacks pull-request write permission on %s (403 while trying to %s): %s", repo, op, permissionHint(provider))
	case status == http.StatusTooManyRequests:
		return rateLimitedError(provider, r, op, status, rateLimit{}, detail, token)
	case status == http.StatusNotFound:
		kind = ErrNotFound
		msg = fmt.Sprintf("%s repository %s not found while trying to %s (404): check the repo URL and --api-url, and that the token can see the repository", provider, repo, op)
	case status == http.StatusConflict:
		kind = ErrPRConflict
		msg = fmt.Sprintf("%s reports a conflicting pull request on %s while trying to %s (409): close or merge the other pull request for this branch, then run again", provider, repo, op)
	case status == http.StatusUnprocessableEntity:
		kind = ErrPRInvalid
		msg = fmt.Sprintf("%s refused to %s on %s (422): check that the branch was pushed, differs from the base, and that labels and reviewers exist", provider, op, repo)
	case status >= 500:
		kind = ErrPRUnavailable
		msg = fmt.Sprintf("%s API kept failing while trying to %s on %s (%d after retries): try again later or check --api-url", provider, op, repo, status)
	default:
		kind = ErrPRInvalid
		msg = fmt.Sprintf("%s answered %d while trying to %s on %s", provider, status, op, repo)
	}
	if d := shortLine(detail); d != "" {
		msg += " (" + provider + " said: " + d + ")"
	}
	return &redactedError{kind: kind, msg: Redact(msg, token)}
}

// rateLimit is what a provider said about the rate limit it applied.
type rateLimit struct {
	kind  string        // "primary", "secondary", or "" when it did not say
	limit int           // requests allowed per window, when known
	reset time.Time     // when calls are allowed again, when known
	wait  time.Duration // the wait it asked for (Retry-After), when given
}

// rateLimitedError says the provider rate-limited the token, until when,
// and that waiting and running again is safe.
func rateLimitedError(provider string, r RepoRef, op string, status int, rl rateLimit, detail, token string) error {
	what := strconv.Itoa(status)
	switch rl.kind {
	case "primary":
		what += ", primary rate limit"
		if rl.limit > 0 {
			what += " of " + strconv.Itoa(rl.limit) + " requests"
		}
	case "secondary":
		what += ", secondary rate limit"
	}
	at := rl.reset.UTC().Format(time.RFC3339)
	todo := "wait a few minutes"
	switch {
	case rl.wait > 0:
		what += "; it asks to wait " + rl.wait.Round(time.Second).String() + ", until " + at
		todo = "wait that long"
	case !rl.reset.IsZero():
		what += "; it resets at " + at
		todo = "wait until then"
	}
	msg := fmt.Sprintf("%s rate-limited the token while trying to %s on %s (%s): %s and run again; re-running makes no duplicate pull request", provider, op, r.FullName(), what, todo)
	if d := shortLine(detail); d != "" {
		msg += " (" + provider + " said: " + d + ")"
	}
	return &redactedError{kind: ErrRateLimited, msg: Redact(msg, token)}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			n = 0
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// transportError reports a failure that never got an HTTP status.
func transportError(provider string, r RepoRef, op string, err error, token string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &redactedError{kind: err, msg: Redact(fmt.Sprintf("%s: %s on %s stopped: %v", provider, op, r.FullName(), err), token)}
	}
	msg := fmt.Sprintf("could not reach the %s API to %s on %s: %s: check --api-url and the network", provider, op, r.FullName(), shortLine(err.Error()))
	return &redactedError{kind: ErrPRUnavailable, msg: Redact(msg, token)}
}

func tokenEnvHint(provider string) string {
	return "ADOPT_GIT_TOKEN or " + strings.ToUpper(provider) + "_TOKEN"
}

func permissionHint(provider string) string {
	switch provider {
	case "github":
		return `grant "Pull requests: write" (fine-grained token) or the repo scope (classic token)`
	case "gitlab":
		return "use a token with the api scope for a user with at least the Developer role"
	}
	return "use a token with the write:repository and write:issue scopes and write access to the repository"
}

// shortLine trims a provider's message to one short line.
func shortLine(s string) string {
	s = OneLine(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// retryTransport retries 5xx answers and transport errors with exponential
// backoff. Retrying a create is safe: every provider refuses a second open
// pull request for the same head and base (409 or 422), which EnsurePR
// answers by finding the existing one.
//
// A 403 or 429 with a Retry-After (GitHub's secondary rate limit, GitLab's
// 429) is retried after that wait when it fits in the budget: what the
// backoff waits add up to over all attempts, less what rate limits already
// waited. It counts as an attempt, so the tries stay bounded. A longer
// wait, or a rate limit without Retry-After (GitHub's primary limit, reset
// by the hour), is handed back at once to be reported.
type retryTransport struct {
	next     http.RoundTripper
	attempts int
	backoff  time.Duration
}

func retrying(c *http.Client, attempts int, backoff time.Duration) *http.Client {
	if attempts <= 0 {
		attempts = 4
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = &retryTransport{next: next, attempts: attempts, backoff: backoff}
	return &cc
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	wait := t.backoff
	var budget time.Duration // the sum of the backoff waits, for Retry-After
	for w, n := t.backoff, 1; n < t.attempts && budget < time.Hour; n, w = n+1, w*2 {
		budget += w
	}
	for i := 1; ; i++ {
		r := req
		if i > 1 && req.Body != nil {
			if req.GetBody == nil {
				return nil, errors.New("cannot retry a request whose body cannot be replayed")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)
		if i >= t.attempts || req.Context().Err() != nil {
			return resp, err
		}
		delay := wait
		switch {
		case err != nil || resp.StatusCode >= 500:
			wait *= 2
		case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
			d, ok := retryAfter(resp.Header, time.Now())
			if !ok || d > budget {
				return resp, err
			}
			budget -= d
			delay = d
		default:
			return resp, err
		}
		if resp != nil {
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(delay):
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
