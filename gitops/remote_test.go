package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamRemote: the remote a checkout is fetched from, read from the
// repository's config as git leaves it after `git clone`, for every form
// --repo names on disk: the upstream of the checked-out branch, else
// origin, and never the credentials its url holds.
func TestUpstreamRemote(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@localhost")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@localhost")
	root := t.TempDir()
	server := filepath.Join(root, "server.git")
	seed := filepath.Join(root, "seed")
	gitIn(t, root, "init", "-q", "--bare", "-b", "main", server)
	gitIn(t, root, "init", "-q", "-b", "main", seed)
	gitIn(t, seed, "commit", "-q", "--allow-empty", "-m", "first")
	gitIn(t, seed, "push", "-q", server, "main")

	clone := filepath.Join(root, "clone")
	gitIn(t, root, "clone", "-q", server, clone)
	const token = "s3cret-t0ken"
	gitIn(t, clone, "remote", "set-url", "origin", "https://bot:"+token+"@Git.Example.invalid/org/gitops.git")
	gitIn(t, clone, "remote", "add", "fork", "git@git.example.invalid:me/gitops.git")
	sub := filepath.Join(clone, "apps", "web")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, clone, "commit", "-q", "--allow-empty", "-m", "second")

	bare := filepath.Join(root, "bare.git")
	gitIn(t, root, "clone", "-q", "--bare", server, bare)
	gitIn(t, bare, "remote", "set-url", "origin", "ssh://git:pa55word@git.example.invalid/org/gitops.git")

	linked := filepath.Join(root, "linked")
	gitIn(t, clone, "worktree", "add", "-q", "-b", "feature", linked)

	none := filepath.Join(root, "none")
	gitIn(t, root, "init", "-q", "-b", "main", none)
	gitIn(t, none, "commit", "-q", "--allow-empty", "-m", "first")

	for _, tc := range []struct {
		name  string
		dir   string
		setup []string // git arguments run in dir first
		want  Remote
	}{
		{"clone: main's upstream is origin", clone, nil,
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git", Branch: "main"}},
		{"a directory inside the clone", sub, nil,
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git", Branch: "main"}},
		{"a branch whose upstream is on another remote", clone, []string{"checkout", "-q", "-b", "dev"},
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git"}},
		{"", clone, []string{"config", "branch.dev.remote", "fork"},
			Remote{Name: "fork", URL: "git@git.example.invalid:me/gitops.git", Branch: "dev"}},
		{"an upstream in the repository itself (.) is no remote", clone, []string{"config", "branch.dev.remote", "."},
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git"}},
		{"an upstream remote that is not configured", clone, []string{"config", "branch.dev.remote", "gone"},
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git"}},
		{"detached HEAD", clone, []string{"checkout", "-q", "--detach"},
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git"}},
		{"a linked worktree (its .git is a file)", linked, nil,
			Remote{Name: "origin", URL: "https://Git.Example.invalid/org/gitops.git"}},
		{"", linked, []string{"config", "branch.feature.remote", "fork"},
			Remote{Name: "fork", URL: "git@git.example.invalid:me/gitops.git", Branch: "feature"}},
		{"a bare clone", bare, nil,
			Remote{Name: "origin", URL: "ssh://git@git.example.invalid/org/gitops.git"}},
		{"no remote", none, nil, Remote{}},
	} {
		if tc.setup != nil {
			gitIn(t, tc.dir, tc.setup...)
		}
		name := tc.name
		if name == "" {
			name = strings.Join(tc.setup, " ")
		}
		r, err := OpenLocal(tc.dir)
		if err != nil {
			t.Fatalf("%s: open %s: %v", name, tc.dir, err)
		}
		got, err := UpstreamRemote(r)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, tc.want)
		}
		if strings.Contains(got.URL, token) || strings.Contains(got.URL, "pa55word") {
			t.Errorf("%s: the URL %s carries the remote's credentials", name, got.URL)
		}
	}
}
