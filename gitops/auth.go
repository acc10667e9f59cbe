package gitops

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/ssh"
	gossh "golang.org/x/crypto/ssh"
)

// Auth holds the credentials for one repository, and how long one network
// call to it may take. The zero value means anonymous HTTPS, or the SSH
// agent for SSH URLs, and DefaultTimeout.
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
	// Timeout bounds each network call to the remote (a listing, a fetch,
	// a push); 0 means DefaultTimeout.
	Timeout time.Duration
}

// secrets are the values that must never appear in output.
func (a Auth) secrets() []string {
	return []string{a.Token, a.Password, a.SSHKeyPassphrase}
}

// method turns Auth into the go-git auth method for a location: SSH keys
// (or the agent) with known_hosts checked for SSH, basic auth for HTTP(S),
// nothing for local paths. Credentials embedded in an HTTP(S) URL are used
// when no other credentials are given; an SSH URL never gets basic auth.
func (a Auth) method(l Location) (transport.AuthMethod, error) {
	switch l.Scheme {
	case SchemeSSH:
		return a.sshMethod(l.Raw)
	case SchemeHTTP:
	default:
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
		if u, p := l.userinfo(); p != "" || u != "" {
			user, pass = u, p
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

// AuthFlags are the Git credential flags every command that reads or writes
// the GitOps repo shares, with their environment variables. Tokens and
// passphrases are best given through the environment, which `ps` does not
// show.
type AuthFlags struct {
	Token      string
	User       string
	SSHKey     string
	KnownHosts string
	// Insecure skips SSH host key checking (for tests and throwaway hosts).
	Insecure bool
	// Timeout bounds each network call to the GitOps repo.
	Timeout time.Duration
}

// Environment variables read by AuthFlags.Complete when a flag is not set.
const (
	EnvToken         = "ADOPT_GIT_TOKEN"
	EnvUser          = "ADOPT_GIT_USERNAME"
	EnvSSHKey        = "ADOPT_SSH_KEY"
	EnvSSHPassphrase = "ADOPT_SSH_KEY_PASSPHRASE"
	EnvKnownHosts    = "SSH_KNOWN_HOSTS"
)

// AddFlags registers the credential flags.
func (f *AuthFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Token, "git-token", "", "HTTPS access token for the GitOps repo (default $"+EnvToken+")")
	fs.StringVar(&f.User, "git-user", "", "user name for HTTPS basic auth with the token (default $"+EnvUser+", else git)")
	fs.StringVar(&f.SSHKey, "ssh-key", "", "private key for ssh:// and git@host:path repos (default $"+EnvSSHKey+", else the SSH agent); its passphrase comes from $"+EnvSSHPassphrase)
	fs.StringVar(&f.KnownHosts, "known-hosts", "", "known_hosts file the SSH host key is checked against (default $"+EnvKnownHosts+", else ~/.ssh/known_hosts)")
	fs.BoolVar(&f.Insecure, "insecure-skip-host-key-check", false, "do not check the SSH host key (never on a network you do not control)")
	fs.DurationVar(&f.Timeout, "git-timeout", DefaultTimeout, "how long one call to the GitOps repo's server (a listing, a fetch, a push) may take before it is given up")
}

// InsecureWarning is what every command that reads or writes the GitOps
// repo prints to stderr, -q or not, when --insecure-skip-host-key-check is
// set.
const InsecureWarning = "warning: --insecure-skip-host-key-check: the SSH host key of the GitOps repo is NOT checked; anyone on the network path can pose as the Git server, read what adopt pushes and give it another tree. Use --known-hosts instead"

// Warn prints to w InsecureWarning when host keys are not checked, quiet
// or not, and, unless quiet, the location's CredentialsNote when repo (the
// --repo value) carries credentials.
func (f AuthFlags) Warn(w io.Writer, repo string, quiet bool) {
	if f.Insecure {
		fmt.Fprintln(w, InsecureWarning)
	}
	if l, err := ParseLocation(repo); !quiet && repo != "" && err == nil && l.HasCredentials() {
		fmt.Fprintln(w, l.CredentialsNote("--repo"))
	}
}

// Complete fills what the flags left empty from the environment (getenv;
// nil means os.Getenv) and returns the Auth with where its token came from
// ("--git-token", "$ADOPT_GIT_TOKEN", or "" when there is none).
func (f AuthFlags) Complete(getenv func(string) string) (Auth, string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	pick := func(flag, env string) string {
		if flag != "" {
			return flag
		}
		return getenv(env)
	}
	from := ""
	switch {
	case f.Token != "":
		from = "--git-token"
	case getenv(EnvToken) != "":
		from = "$" + EnvToken
	}
	return Auth{
		Token: pick(f.Token, EnvToken), Username: pick(f.User, EnvUser),
		SSHKeyFile: pick(f.SSHKey, EnvSSHKey), SSHKeyPassphrase: getenv(EnvSSHPassphrase),
		KnownHostsFile: pick(f.KnownHosts, EnvKnownHosts), InsecureIgnoreHostKey: f.Insecure, Timeout: f.Timeout,
	}, from
}
