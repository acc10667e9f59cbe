package gitops

import (
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Auth holds the credentials for one repository. The zero value means
// anonymous HTTPS, or the SSH agent for SSH URLs.
type Auth struct {
	// Token is an HTTPS access token, sent with basic auth. Username
	// defaults to "git" when only a token is given (GitHub, Gitea and GitLab
	// all accept any user name with a token).
	Token string
	// Username and Password are HTTPS basic auth.
	Username string
	Password string
	// SSHKeyFile is a private key for SSH URLs; empty means the SSH agent.
	SSHKeyFile       string
	SSHKeyPassphrase string
	// KnownHostsFile overrides the known_hosts file (default: $SSH_KNOWN_HOSTS
	// or ~/.ssh/known_hosts). Host keys are always checked unless
	// InsecureIgnoreHostKey is set.
	KnownHostsFile        string
	InsecureIgnoreHostKey bool
}

// secrets are the values that must never appear in output.
func (a Auth) secrets() []string {
	return []string{a.Token, a.Password, a.SSHKeyPassphrase}
}

// isSSH reports whether a repo URL uses SSH (ssh:// or scp-like user@host:path).
func isSSH(u string) bool {
	if strings.HasPrefix(u, "ssh://") {
		return true
	}
	return !strings.Contains(u, "://") && strings.Contains(u, "@") && strings.Contains(u, ":")
}

// method turns Auth into a go-git auth method for repoURL. Credentials
// embedded in an HTTPS URL are used when no other credentials are given.
func (a Auth) method(repoURL string) (transport.AuthMethod, error) {
	if isSSH(repoURL) {
		return a.sshMethod(repoURL)
	}
	if !strings.HasPrefix(repoURL, "http://") && !strings.HasPrefix(repoURL, "https://") {
		return nil, nil // local path or file://
	}
	user, pass := a.Username, a.Password
	if a.Token != "" {
		pass = a.Token
		if user == "" {
			user = "git"
		}
	}
	if pass == "" {
		if u, err := url.Parse(repoURL); err == nil && u.User != nil {
			p, _ := u.User.Password()
			user, pass = u.User.Username(), p
		}
	}
	if pass == "" && user == "" {
		return nil, nil
	}
	return &http.BasicAuth{Username: user, Password: pass}, nil
}

func (a Auth) sshMethod(repoURL string) (transport.AuthMethod, error) {
	user := "git"
	if ep, err := transport.NewEndpoint(repoURL); err == nil && ep.User != "" {
		user = ep.User
	}
	var helper ssh.HostKeyCallbackHelper
	switch {
	case a.InsecureIgnoreHostKey:
		helper.HostKeyCallback = gossh.InsecureIgnoreHostKey()
	case a.KnownHostsFile != "":
		cb, err := ssh.NewKnownHostsCallback(a.KnownHostsFile)
		if err != nil {
			return nil, newError(ErrAuth, a.secrets(), "read known_hosts %s: %v. Point --known-hosts at a readable file", a.KnownHostsFile, err)
		}
		helper.HostKeyCallback = cb
	default:
		cb, err := ssh.NewKnownHostsCallback()
		if err != nil {
			return nil, newError(ErrAuth, a.secrets(), "read known_hosts: %v. Create ~/.ssh/known_hosts (ssh-keyscan the host, then check the key) or set SSH_KNOWN_HOSTS", err)
		}
		helper.HostKeyCallback = cb
	}
	if a.SSHKeyFile != "" {
		k, err := ssh.NewPublicKeysFromFile(user, a.SSHKeyFile, a.SSHKeyPassphrase)
		if err != nil {
			return nil, newError(ErrAuth, a.secrets(), "read SSH key %s: %v. Check the path and the passphrase", a.SSHKeyFile, err)
		}
		k.HostKeyCallbackHelper = helper
		return k, nil
	}
	ag, err := ssh.NewSSHAgentAuth(user)
	if err != nil {
		return nil, newError(ErrAuth, a.secrets(), "no SSH key given and the SSH agent is not usable: %v. Start ssh-agent or pass an SSH key", err)
	}
	ag.HostKeyCallbackHelper = helper
	return ag, nil
}

// CleanURL removes userinfo from an HTTP(S) URL, for display and for
// Application.spec.source.repoURL.
func CleanURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil || (p.Scheme != "http" && p.Scheme != "https") {
		return Redact(u)
	}
	p.User = nil
	return p.String()
}
