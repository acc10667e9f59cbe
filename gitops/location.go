package gitops

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Scheme says how a repository is reached.
type Scheme string

// The repository locations adopt understands.
const (
	// SchemeLocal is a directory on this machine (a work tree or a bare
	// repository).
	SchemeLocal Scheme = "local"
	// SchemeFile is a file:// URL.
	SchemeFile Scheme = "file"
	// SchemeHTTP is http:// or https://.
	SchemeHTTP Scheme = "http"
	// SchemeSSH is ssh:// or scp-style [user@]host:path.
	SchemeSSH Scheme = "ssh"
)

// Location is where a repository is: the one parse of --repo shared by
// plan, apply and the Argo CD Application's repoURL.
type Location struct {
	// Raw is the string as the user gave it (may hold credentials).
	Raw    string
	Scheme Scheme
	// Path is the absolute directory for SchemeLocal and SchemeFile.
	Path string
	// SCP is set for scp-style [user@]host:path.
	SCP bool
}

// ParseLocation reads a repository location: a local path, file://,
// http(s)://, ssh:// or scp-style git@host:path. It refuses what is none of
// them, with the form it wants.
func ParseLocation(s string) (Location, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Location{}, fmt.Errorf("empty repository location: give a local path, an https:// or ssh:// URL, or git@host:path")
	}
	l := Location{Raw: raw}
	if i := strings.Index(s, "://"); i > 0 {
		u, err := url.Parse(s)
		if err != nil {
			return Location{}, fmt.Errorf("repository URL %s is not valid: %v. Give https://host/org/repo.git, ssh://git@host/org/repo.git or git@host:org/repo.git", Redact(s), redactURLError(err))
		}
		switch strings.ToLower(u.Scheme) {
		case "http", "https":
			l.Scheme = SchemeHTTP
		case "ssh", "git+ssh":
			l.Scheme = SchemeSSH
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				return Location{}, fmt.Errorf("repository URL %s names host %q: a file:// URL reads this machine only. Give file:///path/to/repo.git", Redact(s), u.Host)
			}
			l.Scheme, l.Path = SchemeFile, filepath.Clean(filepath.FromSlash(u.Path))
			return l, nil
		default:
			return Location{}, fmt.Errorf("repository URL %s: scheme %q is not supported: use https://, ssh://, file:// or git@host:path", Redact(s), u.Scheme)
		}
		if u.Host == "" {
			return Location{}, fmt.Errorf("repository URL %s has no host", Redact(s))
		}
		return l, nil
	}
	if isSCP(s) {
		l.Scheme, l.SCP = SchemeSSH, true
		return l, nil
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return Location{}, fmt.Errorf("repository path %s: %v", s, err)
	}
	l.Scheme, l.Path = SchemeLocal, abs
	return l, nil
}

// isSCP reports whether s is scp-style [user@]host:path, as git reads it:
// a colon before any slash, and not a Windows drive letter.
func isSCP(s string) bool {
	colon := strings.Index(s, ":")
	if colon <= 0 {
		return false
	}
	if slash := strings.Index(s, "/"); slash >= 0 && slash < colon {
		return false
	}
	return colon > 1 || !isLetter(s[0])
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// Remote reports whether the repository is reached over the network.
func (l Location) Remote() bool { return l.Scheme == SchemeHTTP || l.Scheme == SchemeSSH }

// OnDisk reports whether the repository is a directory on this machine (a
// path or a file:// URL): Path names it.
func (l Location) OnDisk() bool { return l.Scheme == SchemeLocal || l.Scheme == SchemeFile }

// Clean is the location without secrets, exact otherwise: the form written
// into an Application's repoURL. HTTP(S) loses its userinfo; ssh:// keeps
// its user (git@) and loses a password; scp-style and local paths are kept
// as they are (they cannot hold a password).
func (l Location) Clean() string {
	switch {
	case l.Scheme == SchemeLocal:
		return l.Path
	case l.SCP || l.Scheme == SchemeFile:
		return strings.TrimSpace(l.Raw)
	}
	u, err := url.Parse(strings.TrimSpace(l.Raw))
	if err != nil {
		return Redact(l.Raw)
	}
	switch {
	case u.User == nil:
	case l.Scheme == SchemeSSH:
		u.User = url.User(u.User.Username())
	default:
		u.User = nil
	}
	return u.String()
}

// HasCredentials reports whether the location itself carries a password
// or token (userinfo of an http(s) URL, or a password in an ssh:// URL).
func (l Location) HasCredentials() bool {
	if l.Scheme != SchemeHTTP && l.Scheme != SchemeSSH || l.SCP {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(l.Raw))
	if err != nil || u.User == nil {
		return false
	}
	_, hasPass := u.User.Password()
	return hasPass || l.Scheme == SchemeHTTP && u.User.Username() != ""
}

// CredentialsNote is the line a command prints when the location given with
// flag carries credentials: they are used to reach the repository and
// stripped from everything adopt writes or prints (Clean). "" otherwise.
func (l Location) CredentialsNote(flag string) string {
	if !l.HasCredentials() {
		return ""
	}
	return fmt.Sprintf("note: %s carries credentials: adopt uses them to reach the repository and strips them from everything it writes or prints (%s)", flag, l.Clean())
}

// userinfo returns the user name and password an http(s) URL carries.
func (l Location) userinfo() (string, string) {
	u, err := url.Parse(strings.TrimSpace(l.Raw))
	if err != nil || u.User == nil {
		return "", ""
	}
	p, _ := u.User.Password()
	return u.User.Username(), p
}

// redactURLError drops the URL net/url echoes in its errors.
func redactURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
