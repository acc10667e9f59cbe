package gitindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/adopt-dev/adopt/gitops"
)

// Source says which repo and revision to index.
type Source struct {
	// Location is a remote URL (cloned in memory), or a local path or
	// file:// URL (a Git work tree or a subdirectory of one, or a bare
	// repository, whose committed revision is read; or a plain directory).
	Location string
	// Revision is a branch, tag or commit; "" means HEAD.
	Revision string
	// Auth are the credentials for a URL; userinfo in Location is used
	// when Auth has none.
	Auth gitops.Auth
	// Kustomize are the build options kustomizations are rendered with.
	Kustomize KustomizeOptions
}

// IsURL says whether loc names a remote repository rather than a path.
func IsURL(loc string) bool {
	l, err := gitops.ParseLocation(loc)
	return err == nil && l.Remote()
}

// Load reads the repo and indexes it.
func Load(ctx context.Context, src Source) (*Index, error) {
	l, err := gitops.ParseLocation(src.Location)
	switch {
	case err != nil:
		return nil, err
	case l.Remote():
		return loadURL(ctx, src)
	}
	return loadPath(ctx, src, l.Path)
}

func loadURL(ctx context.Context, src Source) (*Index, error) {
	snap, err := gitops.Read(ctx, gitops.ReadOptions{URL: src.Location, Auth: src.Auth, Revision: src.Revision})
	if err != nil {
		return nil, fmt.Errorf("cannot read repo: %w", err)
	}
	ix, err := indexRepo(snap.Repo, snap.Commit, src.Revision, src.Kustomize)
	if err != nil {
		return nil, fmt.Errorf("repo %s: %s", snap.URL, gitops.OneLine(gitops.Redact(err.Error(), src.Auth.Token, src.Auth.Password)))
	}
	ix.Source = snap.URL
	ix.revs = &revisions{src: src, head: ix.Revision, resolve: urlResolver(src), at: map[string]*Index{}, root: ix}
	return ix, nil
}

// loadPath indexes the directory abs, which src.Location names.
func loadPath(ctx context.Context, src Source, abs string) (*Index, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("repo path %s: %v. Give a local Git checkout or a URL", src.Location, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("repo path %s is not a directory. Give a local Git checkout or a URL", src.Location)
	}
	repo, err := gitops.OpenLocal(abs)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if src.Revision != "" {
			return nil, fmt.Errorf("repo path %s is not a Git repository, so --revision %s cannot be read", src.Location, src.Revision)
		}
		ix, err := indexDir(abs, src.Kustomize)
		if err != nil {
			return nil, err
		}
		ix.Source = src.Location
		return ix, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open repo %s: %v", src.Location, err)
	}
	hash := plumbing.ZeroHash
	if src.Revision != "" {
		h, err := repo.ResolveRevision(plumbing.Revision(src.Revision))
		if err != nil {
			return nil, fmt.Errorf("repo %s has no revision %q: %v. Check --revision", src.Location, src.Revision, err)
		}
		hash = *h
	}
	kept, release := keepOpen(repo)
	ix, err := indexRepo(kept, hash, src.Revision, src.Kustomize)
	release()
	if err != nil {
		return nil, fmt.Errorf("repo %s: %v", src.Location, err)
	}
	// A subdirectory of a work tree indexes only that subtree, with paths
	// relative to the repository root.
	if wt, werr := repo.Worktree(); werr == nil {
		if rel, rerr := filepath.Rel(wt.Filesystem.Root(), abs); rerr == nil && rel != "." {
			ix = ix.subtree(filepath.ToSlash(rel))
		}
	}
	ix.Source = src.Location
	if ix.Remote, err = gitops.UpstreamRemote(repo); err != nil {
		ix.RemoteErr = err.Error()
	}
	ix.revs = &revisions{src: src, head: ix.Revision, resolve: localResolver(abs, src.Location, ix.Remote.Name), at: map[string]*Index{}, root: ix}
	return ix, nil
}

// indexRepo indexes the tree of commit hash (HEAD when zero).
func indexRepo(repo *git.Repository, hash plumbing.Hash, rev string, opts KustomizeOptions) (*Index, error) {
	if hash.IsZero() {
		head, err := repo.Head()
		if err != nil {
			return nil, fmt.Errorf("no commit to read (empty repository?): %v", err)
		}
		hash = head.Hash()
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("revision %s %s: %v", rev, hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	ix := New()
	ix.Revision = hash.String()
	ix.Kustomize = opts
	// The names first, from the trees alone: every file is read only when a
	// kustomization may read it, and a blob is read only when indexed.
	type file struct {
		name string
		hash plumbing.Hash
	}
	var files []file
	all := false
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
			continue
		}
		files = append(files, file{name, e.Hash})
		all = all || isKustomizationFile(name) || path.Base(name) == "Chart.yaml"
	}
	ix.paths = make([]string, 0, len(files))
	for _, f := range files {
		ix.paths = append(ix.paths, f.name)
	}
	for _, f := range files {
		if !all && !IsManifestFile(f.name) && !strings.HasSuffix(f.name, ".jsonnet") {
			continue
		}
		b, err := repo.BlobObject(f.hash)
		if err != nil {
			return nil, fmt.Errorf("read %s: %v", f.name, err)
		}
		if b.Size > MaxFileBytes {
			ix.Skipped = append(ix.Skipped, Skipped{Path: f.name, Reason: fmt.Sprintf("file is %d bytes, over the %d-byte limit", b.Size, MaxFileBytes)})
			continue
		}
		data, err := readBlob(b)
		if err != nil {
			return nil, fmt.Errorf("read %s: %v", f.name, err)
		}
		ix.Add(f.name, data)
	}
	ix.Finish()
	return ix, nil
}

func readBlob(b *object.Blob) ([]byte, error) {
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// keepOpen is repo with its pack files kept open while it is read: go-git
// otherwise opens a pack file again for every object it reads from it,
// which was a third of reading a 20,000-file repository. release closes
// them.
func keepOpen(repo *git.Repository) (kept *git.Repository, release func()) {
	st, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return repo, func() {}
	}
	ks := filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	kept, err := git.Open(ks, nil)
	if err != nil {
		return repo, func() {}
	}
	return kept, func() { ks.Close() }
}

// indexDir indexes a plain directory (no Git), skipping .git directories.
func indexDir(root string, opts KustomizeOptions) (*Index, error) {
	ix := New()
	ix.Kustomize = opts
	all := false
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if err == nil && (isKustomizationFile(p) || filepath.Base(p) == "Chart.yaml") {
			all = true
			return filepath.SkipAll
		}
		return nil
	})
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		ix.paths = append(ix.paths, rel)
		if !all && !IsManifestFile(rel) && !strings.HasSuffix(rel, ".jsonnet") {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > MaxFileBytes {
			ix.Skipped = append(ix.Skipped, Skipped{Path: rel, Reason: fmt.Sprintf("file is %d bytes, over the %d-byte limit", info.Size(), MaxFileBytes)})
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ix.Add(rel, b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read repo directory %s: %v", root, err)
	}
	ix.Finish()
	return ix, nil
}

// subtree keeps only what lies under dir.
func (ix *Index) subtree(dir string) *Index {
	out := New()
	out.Revision = ix.Revision
	out.Notes = ix.Notes
	for _, r := range ix.Rendered {
		if r == dir || strings.HasPrefix(r, dir+"/") {
			out.Rendered = append(out.Rendered, r)
		}
	}
	in := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for _, m := range ix.manifests {
		if in(m.Path) {
			out.commit([]*Manifest{m})
		}
	}
	for _, k := range ix.Kustomizations {
		if in(k) {
			out.addKustomization(k)
		}
	}
	for _, s := range ix.Skipped {
		if in(s.Path) {
			out.Skipped = append(out.Skipped, s)
		}
	}
	for _, s := range ix.Unrendered {
		if in(s.Path) {
			out.Unrendered = append(out.Unrendered, s)
		}
	}
	out.Finish()
	// Existing Applications may point anywhere in the repo.
	out.docs, out.renders, out.charts, out.unrenderable, out.jsonnet, out.fs = ix.docs, ix.renders, ix.charts, ix.unrenderable, ix.jsonnet, ix.fs
	out.usedBy, out.read, out.revs, out.overrides, out.paths = ix.usedBy, ix.read, ix.revs, ix.overrides, ix.paths
	return out
}
