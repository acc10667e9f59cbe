package gitops

// Clone and Publish over SSH, against a real SSH server on loopback that
// runs the real git-upload-pack and git-receive-pack (testenv.SSHGitServer)
// on the same bare repos as the smart-HTTP server.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/adopt-dev/adopt/internal/testenv"
)

const sshPassphrase = "ssh-PASSPHRASE-4c3b2a"

// sshFixture is a seeded bare repo "gitops" served over SSH, a
// passphrase-protected authorized key and a known_hosts file for the server.
type sshFixture struct {
	g    *testenv.GitServer
	s    *testenv.SSHGitServer
	dir  string
	auth Auth
}

func startSSHFixture(t *testing.T) *sshFixture {
	t.Helper()
	g := startServer(t, "", "")
	seed(t, g, "gitops")
	s, err := testenv.StartSSHGitServer(g.Root)
	if err != nil {
		t.Fatalf("ssh git server: %v", err)
	}
	t.Cleanup(s.Close)
	f := &sshFixture{g: g, s: s, dir: t.TempDir()}
	f.auth = Auth{SSHKeyFile: filepath.Join(f.dir, "id_ed25519"), SSHKeyPassphrase: sshPassphrase, KnownHostsFile: filepath.Join(f.dir, "known_hosts")}
	if _, err := s.NewClientKey(f.auth.SSHKeyFile, sshPassphrase); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteKnownHosts(f.auth.KnownHostsFile); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPublishOverSSH: clone and publish over ssh:// with a
// passphrase-protected key and the host key checked; a second change on the
// same branch is fetched and pushed on top.
func TestPublishOverSSH(t *testing.T) {
	f := startSSHFixture(t)
	url := f.s.URL("gitops")
	res := publish(t, url, f.auth, Change{Branch: "adopt/ssh", Build: files(map[string]string{"apps/a.yaml": "a: 1\n"}, "add a"), Author: author}, PublishOptions{})
	if !res.Pushed || !res.NewBranch || !res.Changed {
		t.Fatalf("first publish: %+v", res)
	}
	tip := branchTip(t, f.g.BarePath("gitops"), "adopt/ssh")
	if tip.Hash.String() != res.Commit || fileAt(t, tip, "apps/a.yaml") != "a: 1\n" || fileAt(t, tip, "README.md") != "gitops\n" {
		t.Fatalf("pushed branch tip %s, want %s", tip.Hash, res.Commit)
	}
	res2 := publish(t, url, f.auth, Change{Branch: "adopt/ssh", Base: "main", Build: files(map[string]string{"apps/b.yaml": "b: 2\n"}, "add b"), Author: author}, PublishOptions{})
	if !res2.Pushed || res2.NewBranch || res2.Start != res.Commit {
		t.Fatalf("second publish: %+v", res2)
	}
	tip = branchTip(t, f.g.BarePath("gitops"), "adopt/ssh")
	if tip.Hash.String() != res2.Commit || fileAt(t, tip, "apps/a.yaml") != "a: 1\n" || fileAt(t, tip, "apps/b.yaml") != "b: 2\n" {
		t.Fatalf("second push: tip %s, want %s", tip.Hash, res2.Commit)
	}
	r, err := Clone(context.Background(), CloneOptions{URL: url, Auth: f.auth})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.DefaultBranch() != "main" || strings.Contains(r.URL(), sshPassphrase) {
		t.Fatalf("URL %q, default branch %q", r.URL(), r.DefaultBranch())
	}
	// The repoURL an Application gets is the URL itself, git@ kept.
	if r.SourceURL() != url || r.URL() != url {
		t.Errorf("SourceURL %q, URL %q; want %q", r.SourceURL(), r.URL(), url)
	}
}

// TestSSHKeyPassphrase: a wrong or missing passphrase fails with ErrAuth in
// one line that names the key and never shows a passphrase.
func TestSSHKeyPassphrase(t *testing.T) {
	f := startSSHFixture(t)
	const wrong = "wrong-PASSPHRASE-0d1e2f"
	for name, pass := range map[string]string{"wrong": wrong, "missing": ""} {
		t.Run(name, func(t *testing.T) {
			a := f.auth
			a.SSHKeyPassphrase = pass
			_, err := Clone(context.Background(), CloneOptions{URL: f.s.URL("gitops"), Auth: a})
			checkGitError(t, err, ErrAuth, []string{wrong, sshPassphrase}, a.SSHKeyFile, "passphrase")
		})
	}
}

// TestSSHHostKeyChecked: a server whose key known_hosts does not list, or
// lists with another key, is refused before any credential is offered.
func TestSSHHostKeyChecked(t *testing.T) {
	f := startSSHFixture(t)
	other, err := testenv.StartSSHGitServer("")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for name, line := range map[string]string{
		"unknown": other.KnownHostsLine(),
		"changed": knownhosts.Line([]string{knownhosts.Normalize(f.s.Addr)}, other.HostKey),
	} {
		t.Run(name, func(t *testing.T) {
			a := f.auth
			a.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
			if err := os.WriteFile(a.KnownHostsFile, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Clone(context.Background(), CloneOptions{URL: f.s.URL("gitops"), Auth: a})
			checkGitError(t, err, ErrAuth, []string{sshPassphrase}, "known_hosts", "127.0.0.1")
		})
	}
	// --insecure-skip-host-key-check is what lets the unknown key through,
	// and the flags print the warning that says so.
	t.Run("opted out", func(t *testing.T) {
		a := f.auth
		a.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(a.KnownHostsFile, []byte(other.KnownHostsLine()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a.InsecureIgnoreHostKey = true
		r, err := Clone(context.Background(), CloneOptions{URL: f.s.URL("gitops"), Auth: a})
		if err != nil {
			t.Fatalf("with host key checking off the clone failed: %v", err)
		}
		r.Close()
		var b strings.Builder
		AuthFlags{}.Warn(&b, "https://u:p4ss@host/x.git", true)
		if b.Len() != 0 {
			t.Errorf("a warning with checking on: %q", b.String())
		}
		AuthFlags{Insecure: true}.Warn(&b, "", true)
		if b.String() != InsecureWarning+"\n" {
			t.Errorf("warning %q", b.String())
		}
	})
}

// TestSSHUnauthorizedKeyRefused: a key the server does not know fails with
// ErrAuth and the hint to check the SSH key.
func TestSSHUnauthorizedKeyRefused(t *testing.T) {
	f := startSSHFixture(t)
	a := f.auth
	a.SSHKeyFile, a.SSHKeyPassphrase = filepath.Join(f.dir, "stranger"), ""
	if _, err := testenv.WriteSSHKey(a.SSHKeyFile, ""); err != nil {
		t.Fatal(err)
	}
	_, err := Clone(context.Background(), CloneOptions{URL: f.s.URL("gitops"), Auth: a})
	checkGitError(t, err, ErrAuth, nil, "unable to authenticate", "SSH key")
}

// TestPublishOverSCPStyleSSH: git@alias:gitops.git, the alias resolved to
// 127.0.0.1 and the server's port by an ssh_config. go-git reads ssh_config
// through its exported hook ssh.DefaultSSHConfig (by default the user's
// ~/.ssh/config, found through the passwd entry and cached), so the test
// points the hook at its own file and restores it; it must not run in
// parallel.
func TestPublishOverSCPStyleSSH(t *testing.T) {
	f := startSSHFixture(t)
	cfg, err := f.s.WriteSSHConfig(filepath.Join(f.dir, "ssh_config"), "gitops-test")
	if err != nil {
		t.Fatal(err)
	}
	old := gitssh.DefaultSSHConfig
	gitssh.DefaultSSHConfig = cfg
	t.Cleanup(func() { gitssh.DefaultSSHConfig = old })
	url := f.s.SCPURL("gitops-test", "gitops")
	res := publish(t, url, f.auth, Change{Branch: "adopt/scp", Build: files(map[string]string{"apps/c.yaml": "c: 3\n"}, "add c"), Author: author}, PublishOptions{})
	if !res.Pushed || !res.NewBranch {
		t.Fatalf("publish over %s: %+v", url, res)
	}
	tip := branchTip(t, f.g.BarePath("gitops"), "adopt/scp")
	if tip.Hash.String() != res.Commit || fileAt(t, tip, "apps/c.yaml") != "c: 3\n" {
		t.Fatalf("pushed branch tip %s, want %s", tip.Hash, res.Commit)
	}
	r, err := Clone(context.Background(), CloneOptions{URL: url, Auth: f.auth})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.SourceURL() != url {
		t.Errorf("SourceURL %q, want %q", r.SourceURL(), url)
	}
}
