package gitindex

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestFilesAsGitLsFiles: Files lists what the real `git ls-files --
// <pattern>` lists (the repo-server's default for a Git file generator),
// for literal paths, directories and wildcards that cross "/"; Dirs lists
// every directory but the root and hidden ones.
func TestFilesAsGitLsFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"apps/a/config.json":     "{}",
		"apps/a/b/config.json":   "{}",
		"apps/top.yaml":          "a: 1\n",
		"clusters/prod/c.yml":    "a: 1\n",
		".hidden/deep/x.yaml":    "a: 1\n",
		"config.json":            "{}",
		"apps/Beta_Two/cfg.json": "{}",
	}
	if err := testenv.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "one"}} {
		if _, err := testenv.Git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	ix, err := Load(context.Background(), Source{Location: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{
		"apps/*/config.json", "apps/*.yaml", "apps", "apps/", "*.json", "config.json", "apps/[ab]/config.json",
		"apps/?/config.json", "clusters/**", "nothing/*", ".", "apps/[!a]*/cfg.json",
	} {
		out, err := testenv.Git(dir, "ls-files", "--full-name", "--", pattern)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if out != "" {
			want = strings.Split(out, "\n")
		}
		got, err := ix.Files(pattern)
		if err != nil {
			t.Errorf("Files(%q): %v", pattern, err)
			continue
		}
		keys := slices.Sorted(maps.Keys(got))
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("Files(%q) = %q, git ls-files lists %q", pattern, keys, want)
		}
	}
	want := []string{"apps", "apps/Beta_Two", "apps/a", "apps/a/b", "clusters", "clusters/prod"}
	if got := ix.Dirs(); !slices.Equal(got, want) {
		t.Errorf("Dirs() = %q, want %q", got, want)
	}
}
