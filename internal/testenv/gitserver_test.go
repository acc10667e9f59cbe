package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitServerSmartHTTP clones and pushes through the real git client, and
// checks that a wrong password is refused.
func TestGitServerSmartHTTP(t *testing.T) {
	g, err := StartGitServer("alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("gitops", map[string]string{"README.md": "hello\n"})
	if err != nil {
		t.Fatal(err)
	}
	authURL := strings.Replace(url, "http://", "http://alice:s3cret@", 1)
	dir := t.TempDir()
	if err := run(dir, "git", "clone", "-q", authURL, "w"); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(dir, "w")
	if err := os.WriteFile(filepath.Join(w, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "b.txt"}, {"-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "b"}, {"push", "-q", "origin", "HEAD:refs/heads/topic"}} {
		if err := run(w, "git", args...); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("git", "--git-dir", g.BarePath("gitops"), "log", "--format=%s", "topic").Output()
	if err != nil || strings.TrimSpace(string(out)) != "b\nseed" {
		t.Fatalf("pushed branch: %q, %v", out, err)
	}
	bad := strings.Replace(url, "http://", "http://alice:wrong@", 1)
	if err := run(dir, "git", "clone", "-q", bad, "x"); err == nil {
		t.Fatal("clone with a wrong password succeeded")
	}
}
