package gitops

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitTreeEqualsGitCLI checks that Publish's commit, which writes its
// blobs and trees straight into the object store, has exactly the tree git
// itself makes from the same change (`git add -A && git commit` in a clone):
// new files in new and existing directories, an overwrite, an unchanged
// rewrite, an executable kept executable, removals that empty a directory,
// and removals of files that are not there.
func TestCommitTreeEqualsGitCLI(t *testing.T) {
	g := startServer(t, "", "")
	url, err := g.CreateRepo("tree", map[string]string{
		"README.md":             "gitops\n",
		"apps/a.yaml":           "a: 1\n",
		"apps/b.yaml":           "b: 1\n",
		"gone/only.yaml":        "x: 1\n",
		"keep/deep/nested.yaml": "n: 1\n",
		"tools/run.sh":          "#!/bin/sh\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	bare := g.BarePath("tree")
	// Make tools/run.sh executable in the base commit.
	work := filepath.Join(t.TempDir(), "seed")
	gitIn(t, "", "clone", "-q", bare, work)
	gitIn(t, work, "update-index", "--chmod=+x", "tools/run.sh")
	gitIn(t, work, "-c", "user.name=s", "-c", "user.email=s@e", "commit", "-q", "-m", "exec")
	gitIn(t, work, "push", "-q", "origin", "main")

	change := map[string][]byte{
		"apps/a.yaml":           []byte("a: 2\n"), // overwrite
		"apps/b.yaml":           []byte("b: 1\n"), // same content
		"apps/c.yaml":           []byte("c: 1\n"), // new file, existing dir
		"tools/run.sh":          []byte("#!/bin/sh\necho hi\n"),
		"gone/only.yaml":        nil, // empties the directory
		"missing/file.yaml":     nil, // not there
		"apps/missing.yaml":     nil, // not there
		"keep/deep/nested.yaml": []byte("n: 1\n"),
	}
	for i := 0; i < 300; i++ {
		change[fmt.Sprintf("adopted/ns-%02d/configmap-%03d.yaml", i%7, i)] = []byte(fmt.Sprintf("kind: ConfigMap\nname: cm-%d\n", i))
	}
	res := publish(t, url, Auth{}, Change{Branch: "adopt", Build: func(*Repo) (Content, error) {
		return Content{Files: change, Message: "adopt\n"}, nil
	}}, PublishOptions{})
	if !res.Changed || !res.Pushed {
		t.Fatalf("nothing committed: %+v", res)
	}

	// The same change with the git CLI.
	cli := filepath.Join(t.TempDir(), "cli")
	gitIn(t, "", "clone", "-q", bare, cli)
	for p, data := range change {
		full := filepath.Join(cli, filepath.FromSlash(p))
		if data == nil {
			if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(full); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := os.WriteFile(full, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, cli, "add", "-A")
	gitIn(t, cli, "-c", "user.name=s", "-c", "user.email=s@e", "commit", "-q", "-m", "cli")
	want := gitIn(t, cli, "rev-parse", "HEAD^{tree}")
	got := gitIn(t, "", "--git-dir", bare, "rev-parse", "refs/heads/adopt^{tree}")
	if got != want {
		t.Fatalf("tree %s, git makes %s:\n%s\nvs\n%s", got, want,
			gitIn(t, "", "--git-dir", bare, "ls-tree", "-r", "refs/heads/adopt"), gitIn(t, cli, "ls-tree", "-r", "HEAD"))
	}
	if n := len(res.Paths); n != 300+4 { // 300 new, a, c, run.sh, only.yaml
		t.Fatalf("%d paths changed: %v", n, res.Paths)
	}
	if fsck := gitIn(t, "", "--git-dir", bare, "fsck", "--strict"); strings.Contains(fsck, "error") {
		t.Fatalf("fsck: %s", fsck)
	}

	// Writing what the branch already holds makes no commit.
	again := publish(t, url, Auth{}, Change{Branch: "adopt", Build: func(*Repo) (Content, error) {
		return Content{Files: change, Message: "adopt\n"}, nil
	}}, PublishOptions{})
	if again.Changed || again.Commit != res.Commit {
		t.Fatalf("second publish changed the branch: %+v", again)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd
}
