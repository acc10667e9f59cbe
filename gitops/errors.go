package gitops

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Errors callers can test with errors.Is. Every error this package returns
// wraps one of them, says which repository, and has credentials redacted.
var (
	ErrAuth           = errors.New("authentication failed")
	ErrForbidden      = errors.New("not allowed")
	ErrNotFound       = errors.New("repository not found")
	ErrEmptyRepo      = errors.New("repository is empty")
	ErrDirty          = errors.New("working tree has uncommitted changes")
	ErrNoBase         = errors.New("base branch not found")
	ErrNonFastForward = errors.New("non-fast-forward")
	// ErrBranchMoved is a branch that is not where the caller decided
	// from (PublishOptions.Expect): nothing was pushed over it.
	ErrBranchMoved  = errors.New("branch moved")
	ErrPushRejected = errors.New("push rejected")
	// ErrTimeout is a remote that did not answer one network call within
	// Auth.Timeout.
	ErrTimeout = errors.New("the git server did not answer in time")
	ErrGit     = errors.New("git operation failed")
)

// userinfo matches the user:password@ part of a URL anywhere in a string.
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// Redact is adopt's one redaction rule, for Git, pull-request and Argo CD
// errors alike: it removes URL userinfo and every given secret (also
// trimmed, and URL-escaped as a library may echo it) from s. Secrets
// shorter than 4 bytes are left alone: they would blank out ordinary words.
func Redact(s string, secrets ...string) string {
	s = userinfo.ReplaceAllString(s, "${1}***@")
	for _, sec := range secrets {
		for _, v := range []string{sec, strings.TrimSpace(sec)} {
			if len(v) >= 4 {
				s = strings.ReplaceAll(s, v, "***")
				s = strings.ReplaceAll(s, url.QueryEscape(v), "***")
			}
		}
	}
	return s
}

// OneLine is s with every run of white space, line breaks included, as
// one space: how adopt quotes an error from a library or a server in its
// one-line messages.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// redactedError keeps the sentinel for errors.Is while its text is redacted.
type redactedError struct {
	kind error
	msg  string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.kind }

// wrap classifies err from go-git, and returns one redacted sentence saying
// what failed (op), where (repo) and what to do next.
func wrap(op, repo string, err error, secrets []string) error {
	if err == nil {
		return nil
	}
	kind, hint := classify(err)
	msg := fmt.Sprintf("%s %s: %v", op, repo, err)
	if hint != "" {
		msg += ". " + hint
	}
	msg = strings.ReplaceAll(Redact(msg, secrets...), "\n", " ")
	return &redactedError{kind: kind, msg: msg}
}

// newError makes a redacted error of a given kind.
func newError(kind error, secrets []string, format string, a ...any) error {
	msg := strings.ReplaceAll(Redact(fmt.Sprintf(format, a...), secrets...), "\n", " ")
	return &redactedError{kind: kind, msg: msg}
}

func classify(err error) (kind error, hint string) {
	s := err.Error()
	switch {
	case errors.Is(err, ErrTimeout):
		return ErrTimeout, "Check that the git server is up and reachable, or raise --git-timeout"
	case errors.Is(err, transport.ErrAuthenticationRequired), strings.Contains(s, "unable to authenticate"), strings.Contains(s, "ssh: handshake failed: ssh: unable"):
		return ErrAuth, "Check --git-token (or ADOPT_GIT_TOKEN), the user name in the URL, or the SSH key"
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return ErrForbidden, "The credentials are valid but lack write access to this repository"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrNotFound, "Check --repo; private repositories also answer 'not found' without credentials"
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return ErrEmptyRepo, "Push a first commit to the base branch, then run again"
	case strings.Contains(s, "non-fast-forward"), strings.Contains(s, "fetch first"):
		return ErrNonFastForward, ""
	case strings.Contains(s, "knownhosts") || strings.Contains(s, "key mismatch") || strings.Contains(s, "host key"):
		return ErrAuth, "The SSH host key is unknown or changed; add it to known_hosts (ssh-keyscan) after checking it"
	case strings.Contains(s, "pre-receive hook declined"), strings.Contains(s, "rejected"), strings.Contains(s, "command error on"):
		return ErrPushRejected, "The server refused the push; fix what its message says (branch protection or hook), then run again"
	case strings.Contains(s, "connection reset"), strings.Contains(s, "broken pipe"), strings.Contains(s, "EOF"), strings.Contains(s, "i/o timeout"), strings.Contains(s, "use of closed network connection"):
		return ErrGit, "The connection dropped during the transfer; check the network and run again: a re-run with the same input makes no duplicate commit"
	case strings.Contains(s, "connection refused"), strings.Contains(s, "no such host"), strings.Contains(s, "network is unreachable"):
		return ErrGit, "Cannot reach the Git server; check --repo and the network"
	case serverFailed.MatchString(s):
		code := serverFailed.FindStringSubmatch(s)[1]
		return ErrGit, "The Git server (or a proxy before it) answered " + code + ", a failure on its side; run again later: a re-run with the same input makes no duplicate commit"
	}
	return ErrGit, ""
}

// serverFailed finds go-git's word for a 5xx answer of a Git server over
// HTTP ("unexpected requesting … status code: 502"), which it does not
// wrap as an error value.
var serverFailed = regexp.MustCompile(`status code: (5[0-9][0-9])\b`)
