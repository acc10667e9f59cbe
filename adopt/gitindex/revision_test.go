package gitindex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestAtRevision reads the repo at an Application's targetRevision: an
// annotated tag, a branch the clone has only as its remote's (as Argo CD
// fetches it), a commit, from a checkout and from the URL, each commit
// once; "" and HEAD are the plan's own index; a revision the clone lacks
// says how to fetch it.
func TestAtRevision(t *testing.T) {
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: web\ndata:\n  v: " + v + "\n"
	}
	url, err := g.CreateRepo("gitops", map[string]string{"apps/web/cm.yaml": cm("one")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := testenv.Git(dir, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Upstream: v1 tagged (annotated), a release branch at v1, then main
	// moves on.
	up := filepath.Join(dir, "up")
	git(dir, "clone", "-q", url, up)
	one := git(up, "rev-parse", "HEAD")
	git(up, "tag", "-a", "v1", "-m", "v1")
	git(up, "branch", "release")
	if err := os.WriteFile(filepath.Join(up, "apps/web/cm.yaml"), []byte(cm("two")), 0o644); err != nil {
		t.Fatal(err)
	}
	git(up, "commit", "-qam", "two")
	git(up, "push", "-q", "origin", "main", "release", "v1")
	// The user's clone has release only as origin/release.
	clone := filepath.Join(dir, "clone")
	git(dir, "clone", "-q", url, clone)

	value := func(ix *Index) string {
		m := ix.Lookup("", "ConfigMap", "web", "web")
		if len(m) != 1 {
			t.Fatalf("web: %d manifests at %s", len(m), ix.Revision)
		}
		return m[0].Object["data"].(map[string]any)["v"].(string)
	}
	ctx := context.Background()
	for _, loc := range []string{clone, url} {
		ix, err := Load(ctx, Source{Location: loc})
		if err != nil {
			t.Fatal(err)
		}
		if value(ix) != "two" {
			t.Fatalf("%s: HEAD reads %s", loc, value(ix))
		}
		for _, rev := range []string{"", "HEAD", "main"} {
			at, err := ix.AtRevision(ctx, rev)
			if err != nil || at != ix || !ix.SameRevision(ctx, rev) {
				t.Errorf("%s: %q is not the plan's own index (%v)", loc, rev, err)
			}
		}
		var first *Index
		for _, rev := range []string{"v1", "release", one, one[:12]} {
			if loc == url && rev == one[:12] {
				continue // a short commit is resolved only in a clone
			}
			at, err := ix.AtRevision(ctx, rev)
			if err != nil {
				t.Fatalf("%s at %s: %v", loc, rev, err)
			}
			if at.Revision != one || value(at) != "one" || ix.SameRevision(ctx, rev) {
				t.Errorf("%s at %s: commit %s reads %s, want %s reading one", loc, rev, at.Revision, value(at), one)
			}
			if first == nil {
				first = at
			} else if at != first {
				t.Errorf("%s at %s: the commit was read again", loc, rev)
			}
			// From the other revision, "" is the plan's revision again.
			if back, err := at.AtRevision(ctx, ""); err != nil || back != ix || at.SameRevision(ctx, "") {
				t.Errorf("%s: \"\" from %s is not the plan's index", loc, rev)
			}
		}
		_, err = ix.AtRevision(ctx, "v9")
		if err == nil || !strings.Contains(err.Error(), "v9") {
			t.Errorf("%s: a missing revision: %v", loc, err)
		}
		if loc == clone && !strings.Contains(err.Error(), `run "git fetch origin"`) {
			t.Errorf("the clone's error does not say how to fetch: %v", err)
		}
	}

	plain := t.TempDir()
	if err := testenv.WriteFiles(plain, map[string]string{"cm.yaml": cm("one")}); err != nil {
		t.Fatal(err)
	}
	px, err := Load(ctx, Source{Location: plain})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := px.AtRevision(ctx, "v1"); err == nil || !strings.Contains(err.Error(), "not a Git repository") {
		t.Errorf("a plain directory at v1: %v", err)
	}
}
