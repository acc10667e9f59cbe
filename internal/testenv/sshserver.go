package testenv

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// SSHGitServer is a real SSH server on loopback for git: it runs the real
// git-upload-pack and git-receive-pack on the bare repositories under Root,
// for clients whose public key was authorized. Its ed25519 host key is made
// per server, so a client must be given it (WriteKnownHosts).
//
// Root may be a GitServer's Root, so one bare repository is reachable over
// smart HTTP and over SSH:
//
//	g, _ := StartGitServer("", "")
//	s, _ := StartSSHGitServer(g.Root)
//	g.CreateRepo("gitops", files)
//	url := s.URL("gitops") // ssh://git@127.0.0.1:PORT/gitops.git
type SSHGitServer struct {
	Root string
	// Addr is 127.0.0.1:PORT; Port its port.
	Addr    string
	Port    int
	HostKey ssh.PublicKey

	ownRoot    bool
	execPath   string
	config     *ssh.ServerConfig
	l          net.Listener
	cancel     context.CancelFunc // ends the git processes (Close)
	wg         sync.WaitGroup
	mu         sync.Mutex
	authorized map[string]bool
	conns      map[net.Conn]bool
	closed     bool
}

// StartSSHGitServer serves the bare repos under root, or under a new temp
// dir (removed by Close) when root is empty.
func StartSSHGitServer(root string) (*SSHGitServer, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git is needed for the test SSH git server: %w", err)
	}
	execPath := strings.TrimSpace(string(out))
	for _, p := range []string{"git-upload-pack", "git-receive-pack"} {
		if _, err := os.Stat(filepath.Join(execPath, p)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: %w", p, execPath, err)
		}
	}
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	s := &SSHGitServer{Root: root, HostKey: signer.PublicKey(), execPath: execPath,
		authorized: map[string]bool{}, conns: map[net.Conn]bool{}}
	if root == "" {
		if s.Root, err = os.MkdirTemp("", "adopt-ssh-git-"); err != nil {
			return nil, err
		}
		s.ownRoot = true
	}
	s.config = &ssh.ServerConfig{PublicKeyCallback: s.checkKey}
	s.config.AddHostKey(signer)
	if s.l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		if s.ownRoot {
			os.RemoveAll(s.Root)
		}
		return nil, err
	}
	s.Addr = s.l.Addr().String()
	s.Port = s.l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go s.serve(ctx)
	return s, nil
}

// Authorize lets clients holding the private half of key in.
func (s *SSHGitServer) Authorize(key ssh.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorized[string(key.Marshal())] = true
}

func (s *SSHGitServer) checkKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authorized[string(key.Marshal())] {
		return nil, errors.New("public key not authorized")
	}
	return &ssh.Permissions{}, nil
}

// NewClientKey writes a new authorized client key to path (see WriteSSHKey).
func (s *SSHGitServer) NewClientKey(path, passphrase string) (ssh.PublicKey, error) {
	pub, err := WriteSSHKey(path, passphrase)
	if err != nil {
		return nil, err
	}
	s.Authorize(pub)
	return pub, nil
}

// WriteSSHKey writes a new ed25519 private key to path in OpenSSH format,
// encrypted when passphrase is not empty, and its public key to path.pub.
// The key is not authorized anywhere.
func WriteSSHKey(path, passphrase string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	var blk *pem.Block
	if passphrase == "" {
		blk, err = ssh.MarshalPrivateKey(priv, "adopt-test")
	} else {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "adopt-test", []byte(passphrase))
	}
	if err != nil {
		return nil, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		return nil, err
	}
	return sp, atomicfile.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644)
}

// KnownHostsLine is the server's known_hosts line,
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...".
func (s *SSHGitServer) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey)
}

// WriteKnownHosts writes a known_hosts file holding only this server.
func (s *SSHGitServer) WriteKnownHosts(path string) error {
	return atomicfile.WriteFile(path, []byte(s.KnownHostsLine()+"\n"), 0o644)
}

// URL is the ssh:// URL of repo name (without .git).
func (s *SSHGitServer) URL(name string) string {
	return "ssh://git@" + s.Addr + "/" + name + ".git"
}

// SCPURL is the scp-style URL git@alias:name.git. An scp-style URL cannot
// carry a port, so alias must be resolved by an ssh_config (WriteSSHConfig).
func (s *SSHGitServer) SCPURL(alias, name string) string {
	return "git@" + alias + ":" + name + ".git"
}

// SSHConfig is an ssh_config file parsed by the parser go-git itself uses
// (github.com/kevinburke/ssh_config). Its Get fits go-git's
// ssh.DefaultSSHConfig.
type SSHConfig struct{ cfg *ssh_config.Config }

// Get returns the first value of key for host alias, or "".
func (c *SSHConfig) Get(alias, key string) string {
	v, err := c.cfg.Get(alias, key)
	if err != nil {
		return ""
	}
	return v
}

// WriteSSHConfig writes an ssh_config to path that sends alias to this
// server ("Host alias / HostName 127.0.0.1 / Port N") and returns it parsed.
//
// The real git CLI uses the file with GIT_SSH_COMMAND="ssh -F path ...".
// go-git cannot be pointed at it through the environment: it reads
// ssh.DefaultSSHConfig, which by default is ssh_config.DefaultUserSettings;
// that finds the home directory with os/user.Current (the passwd entry, not
// $HOME) and caches both files on its first use. A test in package gitops
// therefore swaps go-git's exported hook for the returned value, restores
// it, and does not run in parallel with other SSH tests:
//
//	cfg, _ := s.WriteSSHConfig(filepath.Join(dir, "ssh_config"), "gitops-test")
//	old := gitssh.DefaultSSHConfig // go-git/v5/plumbing/transport/ssh
//	gitssh.DefaultSSHConfig = cfg
//	t.Cleanup(func() { gitssh.DefaultSSHConfig = old })
//	gitops.Clone(ctx, gitops.CloneOptions{URL: s.SCPURL("gitops-test", "gitops"), ...})
//
// go-git resolves HostName and Port from it on every connection, and checks
// the host key as [127.0.0.1]:N, so WriteKnownHosts serves both URL forms.
func (s *SSHGitServer) WriteSSHConfig(path, alias string) (*SSHConfig, error) {
	if !sshAlias.MatchString(alias) {
		return nil, fmt.Errorf("ssh_config alias %q is not a plain host name", alias)
	}
	text := fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n", alias, s.Port)
	if err := atomicfile.WriteFile(path, []byte(text), 0o644); err != nil {
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes([]byte(text))
	if err != nil {
		return nil, err
	}
	return &SSHConfig{cfg: cfg}, nil
}

// CreateRepo makes a bare repo <name>.git under Root as GitServer.CreateRepo
// does, and returns its ssh:// URL.
func (s *SSHGitServer) CreateRepo(name string, files map[string]string) (string, error) {
	if _, err := (&GitServer{Root: s.Root}).CreateRepo(name, files); err != nil {
		return "", err
	}
	return s.URL(name), nil
}

// BarePath is the on-disk path of repo name, for direct inspection.
func (s *SSHGitServer) BarePath(name string) string { return filepath.Join(s.Root, name+".git") }

// Close stops accepting, drops every connection, kills running git
// processes and waits for them; it removes Root only when the server made it.
func (s *SSHGitServer) Close() {
	s.mu.Lock()
	s.closed = true
	s.l.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.ownRoot {
		os.RemoveAll(s.Root)
	}
}

func (s *SSHGitServer) serve(ctx context.Context) {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handleConn(ctx, c)
	}
}

func (s *SSHGitServer) handleConn(ctx context.Context, c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		return // refused key, unknown client, or a dropped handshake
	}
	defer sc.Close()
	_ = c.SetDeadline(time.Time{})
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		s.wg.Add(1)
		go s.session(ctx, ch, creqs)
	}
}

var (
	sshAlias    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]*$`)
	gitProtocol = regexp.MustCompile(`^[A-Za-z0-9=:.,-]*$`)
)

// session serves one session channel: env GIT_PROTOCOL, then one exec.
func (s *SSHGitServer) session(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer s.wg.Done()
	defer ch.Close()
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL" && gitProtocol.MatchString(kv.Value)
			if ok {
				env = append(env, "GIT_PROTOCOL="+kv.Value)
			}
			_ = req.Reply(ok, nil)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			status := s.exec(ctx, ch, cmd.Command, env)
			_ = ch.CloseWrite()
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		default:
			_ = req.Reply(false, nil) // no pty, shell or subsystem
		}
	}
}

// exec runs one git command on the channel and returns its exit status;
// ctx ends with the server.
func (s *SSHGitServer) exec(ctx context.Context, ch ssh.Channel, command string, env []string) uint32 {
	service, arg, err := parseGitCommand(command)
	if err == nil {
		arg, err = s.repoPath(arg)
	}
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.execPath, service), arg)
	cmd.Dir = s.Root
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 128
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return 127
	}
	// The client's stdin ends when it sends EOF or the connection goes,
	// which may be after git exits: Wait must not wait for it.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_, _ = io.Copy(stdin, ch)
		stdin.Close()
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return uint32(ee.ExitCode())
	default:
		return 255
	}
}

// parseGitCommand reads "git-upload-pack '<path>'" or
// "git-receive-pack '<path>'", the path quoted as git's sq_quote quotes it.
func parseGitCommand(command string) (service, path string, err error) {
	service, quoted, ok := strings.Cut(command, " ")
	if !ok || (service != "git-upload-pack" && service != "git-receive-pack") {
		return "", "", fmt.Errorf("only git-upload-pack and git-receive-pack are served, not %q", command)
	}
	path, err = sqDequote(quoted)
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", service, err)
	}
	return service, path, nil
}

// sqDequote undoes git's sq_quote: the path in single quotes, where a
// single quote or ! in it closes the quote, is escaped with a backslash, and
// reopens it.
func sqDequote(s string) (string, error) {
	var b strings.Builder
	for {
		if !strings.HasPrefix(s, "'") {
			return "", fmt.Errorf("path %q is not single-quoted", s)
		}
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated quote in path")
		}
		b.WriteString(s[1 : 1+end])
		s = s[2+end:]
		switch {
		case s == "":
			return b.String(), nil
		case len(s) >= 3 && s[0] == '\\' && (s[1] == '\'' || s[1] == '!'):
			b.WriteByte(s[1])
			s = s[2:]
		default:
			return "", errors.New("malformed quoting in path")
		}
	}
}

// repoPath maps a requested path ("/name.git", "name.git" or "name") to a
// bare repository under Root, refusing anything that leaves Root, by ".."
// or by a symlink.
func (s *SSHGitServer) repoPath(p string) (string, error) {
	rel := strings.TrimPrefix(p, "/")
	if rel == "" || strings.ContainsAny(rel, "\x00\\") {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	for _, e := range strings.Split(rel, "/") {
		if e == "" || e == "." || e == ".." {
			return "", fmt.Errorf("'%s': path outside the served root", p)
		}
	}
	root, err := filepath.EvalSymlinks(s.Root)
	if err != nil {
		return "", err
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(full); err != nil && !strings.HasSuffix(full, ".git") {
		full += ".git"
	}
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	if r, err := filepath.Rel(root, resolved); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("'%s': path outside the served root", p)
	}
	head, err := os.ReadFile(filepath.Join(resolved, "HEAD"))
	if err != nil || (!bytes.HasPrefix(head, []byte("ref: ")) && len(bytes.TrimSpace(head)) != 40) {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	if fi, err := os.Stat(filepath.Join(resolved, "objects")); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("'%s' does not appear to be a git repository", p)
	}
	return resolved, nil
}
