package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/adopt-dev/adopt/internal/testenv"
)

var author = Signature{Name: "Adopt Test", Email: "adopt@example.invalid"}

func startServer(t *testing.T, user, pass string) *testenv.GitServer {
	t.Helper()
	g, err := testenv.StartGitServer(user, pass)
	if err != nil {
		t.Fatalf("git server: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

func seed(t *testing.T, g *testenv.GitServer, name string) string {
	t.Helper()
	u, err := g.CreateRepo(name, map[string]string{"README.md": "gitops\n", "k8s/system/README.md": "kubectl apply -f k8s/system/cm.yaml\n"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func files(m map[string]string, msg string) func(*Repo) (Content, error) {
	return func(*Repo) (Content, error) {
		out := map[string][]byte{}
		for k, v := range m {
			out[k] = []byte(v)
		}
		return Content{Files: out, Message: msg}, nil
	}
}

// branchTip reads a branch of a bare repo on disk with go-git.
func branchTip(t *testing.T, bare, branch string) *object.Commit {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		t.Fatalf("branch %s in %s: %v", branch, bare, err)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fileAt(t *testing.T, c *object.Commit, p string) string {
	t.Helper()
	f, err := c.File(p)
	if err != nil {
		t.Fatalf("%s at %s: %v", p, c.Hash, err)
	}
	s, err := f.Contents()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func publish(t *testing.T, url string, auth Auth, c Change, o PublishOptions) *Result {
	t.Helper()
	r, err := Clone(context.Background(), CloneOptions{URL: url, Auth: auth})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	defer r.Close()
	if c.Base == "" {
		c.Base = r.DefaultBranch()
	}
	res, err := r.Publish(context.Background(), c, o)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

// TestPublishOverSmartHTTP covers branch, files and commit; a second run
// that changes nothing; and a changed input that adds exactly one commit.
// It runs against the real git http-backend with basic auth, and against a
// local bare repository.
func TestPublishOverSmartHTTP(t *testing.T) {
	g := startServer(t, "alice", "s3cret-token")
	httpURL := seed(t, g, "gitops")
	g2 := startServer(t, "", "")
	seed(t, g2, "local")
	for _, tc := range []struct {
		name, url, bare string
		auth            Auth
	}{
		{"smart-http", httpURL, g.BarePath("gitops"), Auth{Username: "alice", Password: "s3cret-token"}},
		{"local-bare", g2.BarePath("local"), g2.BarePath("local"), Auth{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]string{"argocd/apps/adopt-demo.yaml": "kind: Application\n", "adopted/demo/configmap-a.yaml": "kind: ConfigMap\n"}
			c := Change{Branch: "adopt/p1", Build: files(want, "adopt: demo\n\nbody"), Author: author}
			res := publish(t, tc.url, tc.auth, c, PublishOptions{Diff: true})
			if !res.Changed || !res.Pushed || !res.NewBranch || res.Attempts != 1 {
				t.Fatalf("first run: %+v", res)
			}
			tip := branchTip(t, tc.bare, "adopt/p1")
			if tip.Hash.String() != res.Commit || tip.Message != "adopt: demo\n\nbody" || tip.Author.Email != author.Email || tip.NumParents() != 1 {
				t.Fatalf("tip %s %q by %s, result %+v", tip.Hash, tip.Message, tip.Author.Email, res)
			}
			main := branchTip(t, tc.bare, "main")
			if tip.ParentHashes[0] != main.Hash {
				t.Fatalf("branch does not start at main")
			}
			for p, v := range want {
				if got := fileAt(t, tip, p); got != v {
					t.Fatalf("%s = %q, want %q", p, got, v)
				}
			}
			if fileAt(t, tip, "README.md") != "gitops\n" {
				t.Fatal("existing file lost")
			}
			if strings.Join(res.Paths, ",") != "adopted/demo/configmap-a.yaml,argocd/apps/adopt-demo.yaml" || !strings.Contains(res.Diff, "+kind: ConfigMap") {
				t.Fatalf("paths %v diff %q", res.Paths, res.Diff)
			}

			again := publish(t, tc.url, tc.auth, c, PublishOptions{})
			if again.Changed || again.Pushed || again.Commit != tip.Hash.String() {
				t.Fatalf("second run was not a no-op: %+v", again)
			}
			if branchTip(t, tc.bare, "adopt/p1").Hash != tip.Hash {
				t.Fatal("second run moved the branch")
			}

			want["adopted/demo/configmap-a.yaml"] = "kind: ConfigMap\ndata: {a: b}\n"
			c.Build = files(want, "adopt: demo\n\nbody")
			third := publish(t, tc.url, tc.auth, c, PublishOptions{})
			next := branchTip(t, tc.bare, "adopt/p1")
			if !third.Changed || next.NumParents() != 1 || next.ParentHashes[0] != tip.Hash || strings.Join(third.Paths, ",") != "adopted/demo/configmap-a.yaml" {
				t.Fatalf("changed input: %+v, parent %v", third, next.ParentHashes)
			}
		})
	}
}

// TestConcurrentPush: another writer pushes the branch after we built our
// commit on the tip we fetched. Our push is refused as non-fast-forward;
// Publish lists and fetches again (depth 1), rebuilds on top and pushes
// without force, keeping the other writer's commit.
func TestConcurrentPush(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "race")
	ctx := context.Background()
	ours, err := Clone(ctx, CloneOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	var theirs *Result
	calls := 0
	res, err := ours.Publish(ctx, Change{Branch: "adopt/p2", Base: "main", Author: author,
		Build: func(r *Repo) (Content, error) {
			calls++
			if calls == 1 {
				theirs = publish(t, url, Auth{}, Change{Branch: "adopt/p2", Base: "main", Build: files(map[string]string{"theirs.yaml": "x: 1\n"}, "theirs"), Author: author}, PublishOptions{})
			}
			return Content{Files: map[string][]byte{"ours.yaml": []byte("y: 2\n")}, Message: "ours"}, nil
		}}, PublishOptions{})
	if err != nil {
		t.Fatalf("publish after a concurrent push: %v", err)
	}
	if !res.Pushed || res.Attempts != 2 || calls != 2 || res.NewBranch {
		t.Fatalf("result %+v, files built %d times", res, calls)
	}
	tip := branchTip(t, g.BarePath("race"), "adopt/p2")
	if tip.Message != "ours" || tip.ParentHashes[0].String() != theirs.Commit {
		t.Fatalf("tip %q on %v, want on their %s", tip.Message, tip.ParentHashes, theirs.Commit)
	}
	if fileAt(t, tip, "theirs.yaml") != "x: 1\n" || fileAt(t, tip, "ours.yaml") != "y: 2\n" {
		t.Fatal("a writer's file is missing")
	}
}

// TestForceResetsTheBranch: --force rebuilds on the base and force-pushes,
// and is still a no-op when the branch already holds the same tree.
func TestForceResetsTheBranch(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "force")
	publish(t, url, Auth{}, Change{Branch: "b", Build: files(map[string]string{"stray.yaml": "s\n"}, "stray"), Author: author}, PublishOptions{})
	c := Change{Branch: "b", Build: files(map[string]string{"a.yaml": "a\n"}, "forced"), Author: author}
	res := publish(t, url, Auth{}, c, PublishOptions{Force: true})
	tip := branchTip(t, g.BarePath("force"), "b")
	main := branchTip(t, g.BarePath("force"), "main")
	if !res.Pushed || tip.ParentHashes[0] != main.Hash {
		t.Fatalf("force did not reset onto main: %+v", res)
	}
	if _, err := tip.File("stray.yaml"); err == nil {
		t.Fatal("stray file survived --force")
	}
	again := publish(t, url, Auth{}, c, PublishOptions{Force: true})
	if again.Changed || branchTip(t, g.BarePath("force"), "b").Hash != tip.Hash {
		t.Fatalf("second --force run was not a no-op: %+v", again)
	}
}

// TestAuthFailureIsOneRedactedLine: a wrong token, given by option or
// inside the URL, fails with ErrAuth in one line that never shows it.
func TestAuthFailureIsOneRedactedLine(t *testing.T) {
	g := startServer(t, "alice", "right-password")
	url := seed(t, g, "private")
	const canary = "canary-TOKEN-9f8e7d"
	for name, o := range map[string]CloneOptions{
		"token":       {URL: url, Auth: Auth{Token: canary}},
		"url":         {URL: strings.Replace(url, "http://", "http://alice:"+canary+"@", 1)},
		"no-password": {URL: url},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Clone(context.Background(), o)
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("want ErrAuth, got %v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, canary) || strings.Contains(msg, "\n") || !strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, "--git-token") {
				t.Fatalf("error is not one redacted, actionable line: %q", msg)
			}
		})
	}
}

// TestLocalWorkingTree: a local clone with a working tree is refused when
// dirty; when clean, the branch is written into it without touching its
// checked-out branch or files.
func TestLocalWorkingTree(t *testing.T) {
	g := startServer(t, "", "")
	seed(t, g, "upstream")
	dir := filepath.Join(t.TempDir(), "work")
	local, err := git.PlainClone(dir, false, &git.CloneOptions{URL: g.BarePath("upstream")})
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(readme, []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Clone(context.Background(), CloneOptions{URL: dir})
	if !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("dirty tree: want ErrDirty naming README.md, got %v", err)
	}
	if err := os.WriteFile(readme, []byte("gitops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := publish(t, dir, Auth{}, Change{Branch: "adopt/p3", Build: files(map[string]string{"a.yaml": "a\n"}, "m"), Author: author}, PublishOptions{})
	if !res.Pushed {
		t.Fatalf("%+v", res)
	}
	head, err := local.Head()
	if err != nil || head.Name().Short() != "main" {
		t.Fatalf("local HEAD moved: %v %v", head, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.yaml")); !os.IsNotExist(err) {
		t.Fatal("the local working tree was written to")
	}
	if fileAt(t, branchTip(t, dir, "adopt/p3"), "a.yaml") != "a\n" {
		t.Fatal("branch missing in the local repo")
	}
}

// TestNoPushIsADryRun: NoPush on an in-memory clone reports the diff and
// leaves the remote untouched.
func TestNoPushIsADryRun(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "dry")
	res := publish(t, url, Auth{}, Change{Branch: "adopt/p4", Build: files(map[string]string{"a.yaml": "a: 1\n"}, "m"), Author: author}, PublishOptions{NoPush: true, Diff: true})
	if !res.Changed || res.Pushed || !strings.Contains(res.Diff, "+++ b/a.yaml") || !strings.Contains(res.Diff, "+a: 1") {
		t.Fatalf("%+v", res)
	}
	// Without Diff, the changed paths only.
	plain := publish(t, url, Auth{}, Change{Branch: "adopt/p5", Build: files(map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": "c\n"}, "m"), Author: author}, PublishOptions{NoPush: true})
	if !plain.Changed || plain.Diff != "" || strings.Join(plain.Paths, ",") != "a.yaml,b/c.yaml" {
		t.Fatalf("without Diff: %+v", plain)
	}
	r, _ := git.PlainOpen(g.BarePath("dry"))
	if _, err := r.Reference(plumbing.NewBranchReferenceName("adopt/p4"), true); err == nil {
		t.Fatal("a dry run created the branch")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"push https://bob:tok123@h.example/r.git: x": "push https://***@h.example/r.git: x",
		"token tok123 leaked":                        "token *** leaked",
		"ssh://git@h:22/r":                           "ssh://***@h:22/r",
	} {
		if got := Redact(in, "tok123"); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPublishFetchesTipsOnly: a clone holds the base branch's tip, not its
// history, as the fetched pack in a temporary directory of its own; Build
// reads the start tree's files with nothing checked out; the commit's
// objects are written to no file; the push sends exactly the objects the
// change adds (the commit, the trees on the changed path, the new blob),
// which the server takes from a shallow base; and Close, or a failed
// clone, leaves nothing in the temporary directory.
func TestPublishFetchesTipsOnly(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "history")
	bare := g.BarePath("history")
	work := filepath.Join(t.TempDir(), "w")
	gitIn(t, "", "clone", "-q", bare, work)
	first := gitIn(t, work, "rev-parse", "HEAD")
	for i, f := range []string{"a/b/c.yaml", "x/y.yaml", "a/d.yaml"} {
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, work, "add", "-A")
		gitIn(t, work, "-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-qm", "c"+string(rune('0'+i)))
	}
	gitIn(t, work, "push", "-q", "origin", "main")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r, err := Clone(context.Background(), CloneOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(tmp, "adopt-clone-*", "objects", "pack", "pack-*.pack"))
	if len(packs) != 1 {
		t.Fatalf("the fetched objects are not one pack in a temporary directory: %v", packs)
	}
	if _, err := r.repo.CommitObject(plumbing.NewHash(first)); err == nil {
		t.Fatal("the clone holds the base branch's history, not only its tip")
	}
	var listed []string
	var read string
	res, err := r.Publish(context.Background(), Change{Branch: "adopt/tips", Base: r.DefaultBranch(), Author: author,
		Build: func(r *Repo) (Content, error) {
			var err error
			if listed, err = r.Files(); err != nil {
				return Content{}, err
			}
			b, err := r.ReadFile("a/b/c.yaml")
			read = string(b)
			return Content{Files: map[string][]byte{"a/b/new.yaml": []byte("new\n")}, Message: "m"}, err
		}}, PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(listed, ",") != "README.md,a/b/c.yaml,a/d.yaml,k8s/system/README.md,x/y.yaml" || read != "a/b/c.yaml\n" {
		t.Fatalf("Build read files %v and a/b/c.yaml %q", listed, read)
	}
	tip := branchTip(t, bare, "adopt/tips")
	if tip.Hash.String() != res.Commit || tip.ParentHashes[0].String() != gitIn(t, work, "rev-parse", "HEAD") {
		t.Fatalf("tip %s on %v, result %+v", tip.Hash, tip.ParentHashes, res)
	}
	gitIn(t, bare, "fsck", "--strict", "--no-dangling")
	sent, err := r.newObjects(tip.Hash, map[plumbing.Hash]bool{tip.ParentHashes[0]: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 5 {
		t.Fatalf("the push sends %d objects, want 5 (commit, trees /, a, a/b, blob a/b/new.yaml)", len(sent))
	}
	if loose, _ := filepath.Glob(filepath.Join(tmp, "adopt-clone-*", "objects", "??")); len(loose) != 0 {
		t.Fatalf("the commit's objects were written to files: %v", loose)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Clone(context.Background(), CloneOptions{URL: "http://127.0.0.1:1/gitops.git"}); err == nil {
		t.Fatal("a clone from a closed port succeeded")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("Close and a failed clone left %v", left)
	}
}

// TestOnDiskCloneIsShallow: a clone kept on disk (--no-push) holds the base
// tip and the new commit, has its branch checked out at the new commit with
// a clean working tree, and the git CLI pushes from it.
func TestOnDiskCloneIsShallow(t *testing.T) {
	g := startServer(t, "", "")
	url := seed(t, g, "ondisk")
	dir := filepath.Join(t.TempDir(), "clone")
	r, err := Clone(context.Background(), CloneOptions{URL: url, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Publish(context.Background(), Change{Branch: "adopt/disk", Base: r.DefaultBranch(), Author: author,
		Build: files(map[string]string{"a/b.yaml": "b\n"}, "m")}, PublishOptions{NoPush: true})
	if err != nil || !res.Changed || res.Pushed {
		t.Fatalf("%+v %v", res, err)
	}
	if st := gitIn(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("the working tree is not at the new commit:\n%s", st)
	}
	if head := gitIn(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); head != "adopt/disk" {
		t.Fatalf("HEAD is %s", head)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b.yaml")); err != nil || string(b) != "b\n" {
		t.Fatalf("a/b.yaml: %q %v", b, err)
	}
	if n := strings.Count(gitIn(t, dir, "log", "--oneline"), "\n") + 1; n != 2 {
		t.Fatalf("the clone holds %d commits, want the base tip and the new one", n)
	}
	gitIn(t, dir, "push", "-q", "origin", "adopt/disk")
	if branchTip(t, g.BarePath("ondisk"), "adopt/disk").Hash.String() != res.Commit {
		t.Fatal("the git CLI's push from the clone did not land")
	}
}

// TestRemoteDefaultBranch: the default branch is read from the server's
// list of refs over smart HTTP, with credentials, and no pack is fetched
// (the server's log shows no upload-pack POST).
func TestRemoteDefaultBranch(t *testing.T) {
	g := startServer(t, "alice", "s3cret-token")
	url := seed(t, g, "listed")
	before := len(g.Requests())
	b, err := RemoteDefaultBranch(context.Background(), CloneOptions{URL: url, Auth: Auth{Username: "alice", Password: "s3cret-token"}})
	if err != nil || b != "main" {
		t.Fatalf("RemoteDefaultBranch = %q, %v; want main", b, err)
	}
	for _, r := range g.Requests()[before:] {
		if strings.Contains(r, "git-upload-pack") && strings.HasPrefix(r, "POST") {
			t.Errorf("a pack was fetched: %s", r)
		}
	}
	if _, err := RemoteDefaultBranch(context.Background(), CloneOptions{URL: url, Auth: Auth{Username: "alice", Password: "wrong"}}); err == nil {
		t.Errorf("a wrong password listed the branches")
	}
}
