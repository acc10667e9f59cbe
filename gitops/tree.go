package gitops

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// dirNode is one directory of the tree being built: its entries as the
// start commit has them, and its changed subdirectories.
type dirNode struct {
	entries map[string]object.TreeEntry
	subdirs map[string]*dirNode // loaded subdirectories, by name
	changed bool
}

// commitFiles writes content on top of the start commit's tree and stores
// the commit: each blob and each changed tree is written once to the
// object store, without the working tree's index or status (go-git's
// Worktree.Add scans the whole tree per call). It reports changed false,
// and stores nothing but blobs, when the tree comes out the same.
func (r *Repo) commitFiles(start plumbing.Hash, content Content, sig object.Signature) (plumbing.Hash, bool, error) {
	base, err := r.repo.CommitObject(start)
	if err != nil {
		return plumbing.ZeroHash, false, wrap("read commit of", r.display, err, r.secrets)
	}
	root := &dirNode{}
	if err := r.loadDir(root, base.TreeHash); err != nil {
		return plumbing.ZeroHash, false, err
	}
	paths := make([]string, 0, len(content.Files))
	for p := range content.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := r.setFile(root, p, content.Files[p]); err != nil {
			return plumbing.ZeroHash, false, wrap("write "+p+" in", r.display, err, r.secrets)
		}
	}
	tree, err := r.writeDir(root)
	if err != nil {
		return plumbing.ZeroHash, false, wrap("write the tree of", r.display, err, r.secrets)
	}
	if tree == base.TreeHash {
		return plumbing.ZeroHash, false, nil
	}
	c := &object.Commit{Author: sig, Committer: sig, Message: content.Message, TreeHash: tree, ParentHashes: []plumbing.Hash{start}}
	h, err := r.store(c)
	if err != nil {
		return plumbing.ZeroHash, false, wrap("commit to", r.display, err, r.secrets)
	}
	return h, true, nil
}

// loadDir reads the entries of tree h into d.
func (r *Repo) loadDir(d *dirNode, h plumbing.Hash) error {
	d.entries = map[string]object.TreeEntry{}
	if h.IsZero() {
		return nil
	}
	t, err := r.repo.TreeObject(h)
	if err != nil {
		return wrap("read tree of", r.display, err, r.secrets)
	}
	for _, e := range t.Entries {
		d.entries[e.Name] = e
	}
	return nil
}

// sub returns the subdirectory name of d, loading it from the start tree
// or creating it when create is set; nil when absent.
func (r *Repo) sub(d *dirNode, name string, create bool) (*dirNode, error) {
	if s := d.subdirs[name]; s != nil {
		return s, nil
	}
	e, ok := d.entries[name]
	switch {
	case ok && e.Mode != filemode.Dir:
		if !create {
			return nil, nil
		}
		return nil, fmt.Errorf("%s is a file, not a directory", name)
	case !ok && !create:
		return nil, nil
	}
	s := &dirNode{}
	var h plumbing.Hash
	if ok {
		h = e.Hash
	}
	if err := r.loadDir(s, h); err != nil {
		return nil, err
	}
	if d.subdirs == nil {
		d.subdirs = map[string]*dirNode{}
	}
	d.subdirs[name] = s
	return s, nil
}

// setFile writes data at p (nil removes p), marking the directories on
// the way as changed.
func (r *Repo) setFile(root *dirNode, p string, data []byte) error {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	parts := strings.Split(p, "/")
	if p == "" || parts[0] == ".git" {
		return fmt.Errorf("not a file path")
	}
	dirs := []*dirNode{root}
	d := root
	for _, name := range parts[:len(parts)-1] {
		s, err := r.sub(d, name, data != nil)
		if err != nil {
			return err
		}
		if s == nil {
			return nil // removing a file under a directory that is not there
		}
		d = s
		dirs = append(dirs, d)
	}
	name := parts[len(parts)-1]
	old, had := d.entries[name]
	if had && old.Mode == filemode.Dir {
		return fmt.Errorf("%s is a directory", p)
	}
	if data == nil {
		if !had {
			return nil
		}
		delete(d.entries, name)
	} else {
		h, err := r.storeBlob(data)
		if err != nil {
			return err
		}
		mode := filemode.Regular
		if had && old.Mode == filemode.Executable {
			mode = filemode.Executable // git add keeps the executable bit
		}
		if had && old.Hash == h && old.Mode == mode {
			return nil
		}
		d.entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
	}
	for _, x := range dirs {
		x.changed = true
	}
	return nil
}

// writeDir stores d's tree (and its changed subtrees) and returns its hash;
// the zero hash for a directory left empty, which git does not record.
func (r *Repo) writeDir(d *dirNode) (plumbing.Hash, error) {
	for name, s := range d.subdirs {
		if !s.changed {
			continue
		}
		h, err := r.writeDir(s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() {
			delete(d.entries, name)
		} else {
			d.entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
		}
	}
	if len(d.entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(d.entries))}
	for _, e := range d.entries {
		t.Entries = append(t.Entries, e)
	}
	// Git orders entries by name, a directory's name as if it ended in "/".
	sort.Slice(t.Entries, func(i, j int) bool { return sortName(t.Entries[i]) < sortName(t.Entries[j]) })
	return r.store(t)
}

func sortName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// encoder is a git object go-git can encode (a tree or a commit).
type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func (r *Repo) store(o encoder) (plumbing.Hash, error) {
	eo := r.repo.Storer.NewEncodedObject()
	if err := o.Encode(eo); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.repo.Storer.SetEncodedObject(eo)
}

func (r *Repo) storeBlob(data []byte) (plumbing.Hash, error) {
	eo := r.repo.Storer.NewEncodedObject()
	eo.SetType(plumbing.BlobObject)
	eo.SetSize(int64(len(data)))
	w, err := eo.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return r.repo.Storer.SetEncodedObject(eo)
}
