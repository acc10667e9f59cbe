package argoapp

import (
	"net/url"
	"strings"

	argogit "github.com/argoproj/argo-cd/v2/util/git"
)

// SameArgoRepo reports whether Argo CD itself takes two repository URLs
// for one repository (git.SameURL), with one set of credentials.
func SameArgoRepo(a, b string) bool { return argogit.SameURL(a, b) }

// SameRepo reports whether two repository URLs name the same Git
// repository, for tying an Application's source to the plan's repo. It is
// Argo CD's own comparison (git.SameURL: case, a .git suffix and the
// git@host:path and ssh:// spellings of one URL do not matter), and one
// thing more: an https:// (or http://) URL and an ssh:// or git@host:path
// URL with the same host name and path are the same repository, as on
// every Git host, whatever their users and ports. Argo CD itself treats
// those two as different repositories (different credentials, different
// cache).
func SameRepo(a, b string) bool {
	if argogit.SameURL(a, b) {
		return true
	}
	sa, ha, pa := hostPath(a)
	sb, hb, pb := hostPath(b)
	return sa != "" && sb != "" && sa != sb && ha == hb && pa == pb
}

// SameSource says whether a source reading path of repoURL reads wantPath
// of wantRepo (any repository when wantRepo is ""), slashes at either end
// of a path not counting.
func SameSource(repoURL, path, wantRepo, wantPath string) bool {
	return strings.Trim(path, "/") == strings.Trim(wantPath, "/") && (wantRepo == "" || SameRepo(repoURL, wantRepo))
}

// hostPath reads a repository URL as its kind of transport ("http" or
// "ssh"), its host name and its path, lower case and without a .git
// suffix or slashes at either end; "" for other forms.
func hostPath(s string) (kind, host, path string) {
	s = strings.ToLower(strings.TrimSpace(s))
	if ok, _ := argogit.IsSSHURL(s); ok && !strings.Contains(s, "://") {
		// git@host:org/repo, as Argo CD reads it.
		s = "ssh://" + strings.Replace(s, ":", "/", 1)
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return "", "", ""
	}
	switch u.Scheme {
	case "http", "https":
		kind = "http"
	case "ssh", "git+ssh":
		kind = "ssh"
	default:
		return "", "", ""
	}
	path = strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	return kind, u.Hostname(), path
}
