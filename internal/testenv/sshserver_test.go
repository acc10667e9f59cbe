package testenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// startSSH serves g's repos over SSH too, and hands back an authorized key
// and a known_hosts file for it.
func startSSH(t *testing.T, root string) (s *SSHGitServer, key, knownHosts string) {
	t.Helper()
	s, err := StartSSHGitServer(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	dir := t.TempDir()
	key, knownHosts = filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts")
	if _, err := s.NewClientKey(key, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteKnownHosts(knownHosts); err != nil {
		t.Fatal(err)
	}
	return s, key, knownHosts
}

// sshCommand is GIT_SSH_COMMAND for OpenSSH with only the given key, only
// the given known_hosts, strict checking and no prompts. git adds -p PORT
// itself for an ssh:// URL with a port.
func sshCommand(t *testing.T, key, knownHosts string, extra ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("the OpenSSH client (Debian openssh-client) is needed for the git CLI over SSH: %v", err)
	}
	args := append([]string{"ssh"}, extra...)
	args = append(args, "-i", key, "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
		"-o", "UserKnownHostsFile="+knownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes")
	for i, a := range args {
		args[i] = "'" + a + "'"
	}
	return strings.Join(args, " ")
}

// gitSSH runs git with GIT_SSH_COMMAND set and returns its combined output.
func gitSSH(dir, sshCmd string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_SSH_COMMAND="+sshCmd)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSSHGitServerCloneAndPush: the real git CLI clones over ssh:// and
// over an scp-style URL resolved by ssh_config, and pushes a branch that
// the same bare repo then serves over smart HTTP.
func TestSSHGitServerCloneAndPush(t *testing.T) {
	g, err := StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	httpURL, err := g.CreateRepo("gitops", map[string]string{"README.md": "hello\n"})
	if err != nil {
		t.Fatal(err)
	}
	s, key, kh := startSSH(t, g.Root)
	if want := "ssh://git@127.0.0.1:" + strconv.Itoa(s.Port) + "/gitops.git"; s.URL("gitops") != want {
		t.Fatalf("URL = %q, want %q", s.URL("gitops"), want)
	}
	if line := s.KnownHostsLine(); !strings.HasPrefix(line, "[127.0.0.1]:"+strconv.Itoa(s.Port)+" ssh-ed25519 ") {
		t.Fatalf("known_hosts line %q", line)
	}
	dir := t.TempDir()
	sshCmd := sshCommand(t, key, kh)
	if out, err := gitSSH(dir, sshCmd, "clone", "-q", s.URL("gitops"), "w"); err != nil {
		t.Fatalf("clone over ssh://: %v: %s", err, out)
	}
	w := filepath.Join(dir, "w")
	if b, err := os.ReadFile(filepath.Join(w, "README.md")); err != nil || string(b) != "hello\n" {
		t.Fatalf("cloned README.md: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(w, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "b.txt"}, {"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "b"}, {"push", "-q", "origin", "HEAD:refs/heads/topic"}} {
		if out, err := gitSSH(w, sshCmd, args...); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "--git-dir", g.BarePath("gitops"), "log", "--format=%s", "topic").Output()
	if err != nil || strings.TrimSpace(string(out)) != "b\nseed" {
		t.Fatalf("pushed branch: %q, %v", out, err)
	}
	if err := run(dir, "git", "clone", "-q", "-b", "topic", httpURL, "h"); err != nil {
		t.Fatalf("the branch pushed over SSH is not served over HTTP: %v", err)
	}

	// scp-style: git@alias:gitops.git, the port coming from ssh_config.
	cfgPath := filepath.Join(dir, "ssh_config")
	cfg, err := s.WriteSSHConfig(cfgPath, "gitops-test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Get("gitops-test", "HostName") != "127.0.0.1" || cfg.Get("gitops-test", "Port") != strconv.Itoa(s.Port) || cfg.Get("elsewhere", "Port") != "" {
		t.Fatalf("parsed ssh_config: HostName %q Port %q", cfg.Get("gitops-test", "HostName"), cfg.Get("gitops-test", "Port"))
	}
	scp := s.SCPURL("gitops-test", "gitops")
	if scp != "git@gitops-test:gitops.git" {
		t.Fatalf("SCPURL = %q", scp)
	}
	if out, err := gitSSH(dir, sshCommand(t, key, kh, "-F", cfgPath), "clone", "-q", "-b", "topic", scp, "scp"); err != nil {
		t.Fatalf("clone over %s: %v: %s", scp, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "scp", "b.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestSSHGitServerRefusesUnauthorizedKey: a key the server was not given
// is refused at authentication, before any git runs.
func TestSSHGitServerRefusesUnauthorizedKey(t *testing.T) {
	s, _, kh := startSSH(t, "")
	if _, err := s.CreateRepo("gitops", map[string]string{"README.md": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stranger := filepath.Join(dir, "stranger")
	if _, err := WriteSSHKey(stranger, ""); err != nil {
		t.Fatal(err)
	}
	out, err := gitSSH(dir, sshCommand(t, stranger, kh), "clone", "-q", s.URL("gitops"), "w")
	if err == nil {
		t.Fatal("clone with an unauthorized key succeeded")
	}
	if !strings.Contains(out, "Permission denied (publickey)") {
		t.Fatalf("refusal does not say why: %s", out)
	}
}

// TestSSHGitServerRefusesWrongHostKey: a known_hosts entry for the
// server's address with another key stops the client before it
// authenticates.
func TestSSHGitServerRefusesWrongHostKey(t *testing.T) {
	s, key, _ := startSSH(t, "")
	if _, err := s.CreateRepo("gitops", nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other, err := WriteSSHKey(filepath.Join(dir, "other"), "")
	if err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, other)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := gitSSH(dir, sshCommand(t, key, kh), "clone", "-q", s.URL("gitops"), "w")
	if err == nil {
		t.Fatal("clone with a wrong host key in known_hosts succeeded")
	}
	if !strings.Contains(out, "Host key verification failed") {
		t.Fatalf("refusal does not say why: %s", out)
	}
}

// TestSSHGitServerRefusesPathsOutsideRoot: with a valid key, only bare
// repos under Root are served; "..", a symlink out of Root, a non-repo and
// any other command are refused with git's exit status 128.
func TestSSHGitServerRefusesPathsOutsideRoot(t *testing.T) {
	s, key, _ := startSSH(t, "")
	if _, err := s.CreateRepo("gitops", map[string]string{"README.md": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := run("", "git", "init", "-q", "--bare", filepath.Join(outside, "secret.git")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.git"), filepath.Join(s.Root, "link.git")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(s.Root, filepath.Join(outside, "secret.git"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", s.Addr, &ssh.ClientConfig{User: "git", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(s.HostKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exit := func(command string) (int, string) {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var stderr strings.Builder
		sess.Stderr = &stderr
		err = sess.Run(command)
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			return ee.ExitStatus(), stderr.String()
		}
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		return 0, stderr.String()
	}
	for _, command := range []string{
		"git-upload-pack '/" + filepath.ToSlash(rel) + "'",
		"git-upload-pack '../" + filepath.Base(outside) + "/secret.git'",
		"git-receive-pack '/gitops.git/../../" + filepath.Base(outside) + "/secret.git'",
		"git-upload-pack '" + filepath.Join(outside, "secret.git") + "'",
		"git-upload-pack '/link.git'",
		"git-upload-pack '/gitops.git/objects'",
		"git-upload-pack '/missing.git'",
		"git-upload-pack /gitops.git",
		"sh -c 'id'",
		"git-upload-pack '/gitops.git' ; id",
	} {
		if code, msg := exit(command); code != 128 || !strings.HasPrefix(msg, "fatal: ") {
			t.Errorf("%s: exit %d, %q; want 128 and a fatal: message", command, code, msg)
		}
	}
	// A served repo: upload-pack advertises refs and waits; an immediate
	// EOF on stdin ends it cleanly.
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	sess.Stdout = &stdout
	if err := sess.Start("git-upload-pack '/gitops.git'"); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("0000"))
	stdin.Close()
	if err := sess.Wait(); err != nil || !strings.Contains(stdout.String(), " refs/heads/main\n") {
		t.Fatalf("upload-pack on a served repo: %v, %q", err, stdout.String())
	}
}

// TestSSHCommandQuoting: the path is unquoted as git's sq_quote quotes it.
func TestSSHCommandQuoting(t *testing.T) {
	for in, want := range map[string]string{
		`'/gitops.git'`:      "/gitops.git",
		`'it'\''s.git'`:      "it's.git",
		`'wow'\!'.git'`:      "wow!.git",
		`'/a b.git'`:         "/a b.git",
		`'/gitops.git' ; id`: "",
		`/gitops.git`:        "",
		`'/gitops.git`:       "",
		`'a'\x'b'`:           "",
		`'/gitops.git''/x'`:  "",
	} {
		got, err := sqDequote(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("sqDequote(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestSSHGitServerCloseStopsSessions: Close returns while a client holds a
// git process waiting on its input, ends that session, and refuses new
// connections.
func TestSSHGitServerCloseStopsSessions(t *testing.T) {
	s, err := StartSSHGitServer("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRepo("gitops", map[string]string{"README.md": "hello\n"}); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "id")
	if _, err := s.NewClientKey(key, ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		t.Fatal(err)
	}
	cc := &ssh.ClientConfig{User: "git", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(s.HostKey)}
	c, err := ssh.Dial("tcp", s.Addr, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("git-receive-pack '/gitops.git'"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 4)); err != nil {
		t.Fatalf("receive-pack did not start: %v", err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return while a session was open")
	}
	if err := sess.Wait(); err == nil {
		t.Fatal("the session outlived Close")
	}
	if _, err := ssh.Dial("tcp", s.Addr, cc); err == nil {
		t.Fatal("a connection was accepted after Close")
	}
	if _, err := os.Stat(s.Root); !os.IsNotExist(err) {
		t.Fatalf("Close left its own root %s: %v", s.Root, err)
	}
}
