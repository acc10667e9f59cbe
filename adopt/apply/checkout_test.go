package apply

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gitRepo makes a repository with one commit on branch main with the git
// CLI and returns its path.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gitops")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", dir},
		{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// leftovers lists what is in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestCheckout: an on-disk clone is made in a temporary directory the
// checkout names and Remove deletes, its base is the repository's default
// branch unless one is given, the other clone's private temporary
// directory goes at Close, and a failed clone or export leaves no
// directory behind; an export error comes before the clone's.
func TestCheckout(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	co, err := Clone(ctx, CheckoutOptions{URL: repo, OnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	if co.Base != "main" || co.Dir == "" || filepath.Dir(co.Dir) != tmp {
		t.Fatalf("base %q, dir %q (temporary directory %s)", co.Base, co.Dir, tmp)
	}
	if _, err := os.Stat(filepath.Join(co.Dir, ".git")); err != nil {
		t.Fatalf("the clone is not on disk: %v", err)
	}
	co.Remove()
	if l := leftovers(t, tmp); len(l) != 0 {
		t.Fatalf("Remove left %v", l)
	}

	co, err = Clone(ctx, CheckoutOptions{URL: repo, Base: "release"})
	if err != nil || co.Base != "release" || co.Dir != "" {
		t.Fatalf("not on disk, with --base: %+v, %v", co, err)
	}
	if l := leftovers(t, tmp); len(l) != 1 {
		t.Fatalf("the clone's objects are not in one temporary directory: %v", l)
	}
	co.Close()
	if l := leftovers(t, tmp); len(l) != 0 {
		t.Fatalf("Close left %v", l)
	}

	if _, err := Clone(ctx, CheckoutOptions{URL: filepath.Join(tmp, "missing"), OnDisk: true}); err == nil {
		t.Fatal("a missing repository cloned")
	}
	if l := leftovers(t, tmp); len(l) != 0 {
		t.Fatalf("a failed clone left %v", l)
	}

	refused := errors.New("export refused")
	_, _, err = ExportWhileCloning(ctx, func(context.Context) (*Applier, error) { return nil, refused }, CheckoutOptions{URL: repo, OnDisk: true})
	if !errors.Is(err, refused) {
		t.Fatalf("export error: %v", err)
	}
	if l := leftovers(t, tmp); len(l) != 0 {
		t.Fatalf("a failed export left %v", l)
	}
	want := &Applier{}
	a, co, err := ExportWhileCloning(ctx, func(context.Context) (*Applier, error) { return want, nil }, CheckoutOptions{URL: repo})
	if err != nil || a != want || co.Base != "main" {
		t.Fatalf("export and clone: %p, %+v, %v", a, co, err)
	}
	co.Close()
	if l := leftovers(t, tmp); len(l) != 0 {
		t.Fatalf("Close left %v", l)
	}
}
