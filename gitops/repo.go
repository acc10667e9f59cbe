// Package gitops owns everything Git: the repository seam (clone, branch,
// write files, commit, push) built on go-git, and its credentials. It clones
// into a private temporary directory (or into memory for the history, or
// into a directory the caller names), fetching only the branch tips a
// commit builds on unless asked for the history; it never touches a local
// repository's working tree or its checked-out branch, never force-pushes
// unless asked, and redacts credentials from every error it returns. It
// does not know what an Application or a plan is: callers hand it files.
package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// DefaultAttempts bounds how many times Publish rebuilds its commit on top
// of a branch that moved while it was pushing.
const DefaultAttempts = 4

// DefaultTimeout bounds each network call to the remote (a listing, a
// fetch, a push) when Auth.Timeout is 0: a server that accepts and
// never answers ends the call with ErrTimeout instead of hanging the run.
const DefaultTimeout = 2 * time.Minute

const remoteName = "origin"

// CloneOptions says which repository to clone and how.
type CloneOptions struct {
	// URL is https://, http://, ssh://, user@host:path, file://, or a local
	// path (a bare repository, or a clone with a working tree or a
	// directory inside one).
	URL  string
	Auth Auth
	// Dir clones into this directory, with a working tree, so the result
	// survives the process (used with --no-push on a remote URL). Without
	// it the fetched objects go to a private temporary directory (a bare
	// object store: the fetched pack stays on disk and only its index is
	// read into memory) that Close removes, and the new ones to memory; or,
	// with History, all of them to memory.
	Dir string
	// Base is the branch fetched now; "" is the remote's default branch.
	// Publish fetches the other branch a change names when it needs it.
	Base string
	// History fetches every branch with its whole history, as git clone
	// does, for the questions about ancestry status asks (OnBranch).
	// Without it the clone holds only the tips of the branches it needs
	// (depth 1), so its cost follows the change, not the repository's
	// size or age.
	History bool
	// ListOnly lists the remote's branches (DefaultBranch) and fetches
	// nothing.
	ListOnly bool
}

// Repo is a clone of the GitOps repository.
type Repo struct {
	repo          *git.Repository
	url           string
	display       string
	local         bool
	auth          transport.AuthMethod
	secrets       []string
	defaultBranch string
	dir           string
	history       bool
	timeout       time.Duration
	// spool is the private temporary object store, removed by Close.
	spool   string
	storage *filesystem.Storage
	// refs are the remote's branches as last listed, by name.
	refs map[plumbing.ReferenceName]plumbing.Hash
	// fetched are the branches fetched (or found absent) since the last
	// listing.
	fetched map[string]bool
	// tree is the tree Build reads: the commit's start point's.
	tree *object.Tree
	// advertised, when set, is called by a push once the remote has
	// advertised its refs and before the pack is sent (a test's barrier).
	advertised func()
}

// Clone opens the repository: it lists the remote's branches and fetches
// the base branch's tip (or, with History, every branch and its history).
// It checks out no file. A local path must have a clean working tree; it
// is read through git's own upload-pack, without any network. The caller
// must Close the result; on an error nothing is left on disk.
func Clone(ctx context.Context, o CloneOptions) (*Repo, error) {
	r, err := clone(ctx, o)
	if err != nil {
		if r != nil {
			r.Close()
		}
		return nil, err
	}
	return r, nil
}

func clone(ctx context.Context, o CloneOptions) (*Repo, error) {
	loc, err := ParseLocation(o.URL)
	if err != nil {
		return nil, newError(ErrNotFound, o.Auth.secrets(), "%v", err)
	}
	r := &Repo{url: strings.TrimSpace(o.URL), display: loc.Clean(), secrets: o.Auth.secrets(), dir: o.Dir, history: o.History, timeout: o.Auth.Timeout, fetched: map[string]bool{}}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if loc.Scheme == SchemeLocal {
		root, err := localRoot(loc.Path)
		if err != nil {
			return nil, err
		}
		r.url, r.local = root, true
	}
	auth, err := o.Auth.method(loc)
	if err != nil {
		return nil, err
	}
	r.auth = auth
	// The remote is configured without the URL's credentials (auth carries
	// them), so an on-disk clone's .git/config never holds a password.
	remoteURL := r.url
	if loc.Remote() {
		remoteURL = loc.Clean()
	}
	if o.History {
		co := &git.CloneOptions{URL: remoteURL, Auth: auth, RemoteName: remoteName, NoCheckout: true, Tags: git.NoTags}
		if o.Dir != "" {
			r.repo, err = git.PlainCloneContext(ctx, o.Dir, false, co)
		} else {
			r.repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, co)
		}
		if err != nil {
			return nil, wrap("clone", r.display, err, r.secrets)
		}
		if head, err := r.repo.Reference(plumbing.HEAD, false); err == nil && head.Type() == plumbing.SymbolicReference {
			r.defaultBranch = head.Target().Short()
		}
		return r, nil
	}
	if o.Dir != "" {
		r.repo, err = git.PlainInit(o.Dir, false)
	} else if r.spool, err = os.MkdirTemp("", "adopt-clone-"); err == nil {
		r.storage = filesystem.NewStorageWithOptions(osfs.New(r.spool), cache.NewObjectLRUDefault(), filesystem.Options{ExclusiveAccess: true})
		r.repo, err = git.Init(&spool{Storage: r.storage, added: memory.NewStorage()}, nil)
	}
	if err == nil {
		_, err = r.repo.CreateRemote(&gitconfig.RemoteConfig{Name: remoteName, URLs: []string{remoteURL}, Fetch: []gitconfig.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}})
	}
	if err != nil {
		return r, wrap("clone", r.display, err, r.secrets)
	}
	if err := r.list(ctx); err != nil {
		return r, err
	}
	if o.ListOnly {
		return r, nil
	}
	base := o.Base
	if base == "" {
		base = r.defaultBranch
	}
	if base != "" {
		if err := r.fetch(ctx, base); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Close removes the private temporary directory the clone's objects are
// in, if it has one; the Repo reads no object afterwards. A directory named
// by CloneOptions.Dir is kept.
func (r *Repo) Close() error {
	if r.spool == "" {
		return nil
	}
	r.storage.Close()
	err := os.RemoveAll(r.spool)
	r.spool, r.tree = "", nil
	return err
}

// list reads the remote's branches and its default branch (what HEAD
// names, or else the branch HEAD's commit is the tip of).
func (r *Repo) list(ctx context.Context) error {
	rem, err := r.repo.Remote(remoteName)
	if err != nil {
		return wrap("list the branches of", r.display, err, r.secrets)
	}
	var refs []*plumbing.Reference
	err = r.call(ctx, func(ctx context.Context) (err error) {
		refs, err = rem.ListContext(ctx, &git.ListOptions{Auth: r.auth})
		return err
	})
	if err != nil {
		return wrap("list the branches of", r.display, err, r.secrets)
	}
	r.refs, r.fetched = map[plumbing.ReferenceName]plumbing.Hash{}, map[string]bool{}
	var head *plumbing.Reference
	for _, ref := range refs {
		switch {
		case ref.Name() == plumbing.HEAD:
			head = ref
		case ref.Name().IsBranch() && ref.Type() == plumbing.HashReference:
			r.refs[ref.Name()] = ref.Hash()
		}
	}
	switch {
	case head == nil:
	case head.Type() == plumbing.SymbolicReference:
		r.defaultBranch = head.Target().Short()
	default:
		var names []string
		for n, h := range r.refs {
			if h == head.Hash() {
				names = append(names, n.Short())
			}
		}
		sort.Strings(names)
		if len(names) > 0 {
			r.defaultBranch = names[0]
		}
	}
	return nil
}

// localRoot is the repository a local path names: the root of the work
// tree it is in, or the path itself for a bare repository. A work tree
// must be clean.
func localRoot(dir string) (string, error) {
	lr, err := OpenLocal(dir)
	if err != nil {
		return "", newError(ErrNotFound, nil, "repository %s: %v. Pass a Git checkout, a bare repository or a URL", dir, err)
	}
	wt, err := lr.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return dir, nil
	}
	if err != nil {
		return "", newError(ErrGit, nil, "repository %s: %v", dir, err)
	}
	root := wt.Filesystem.Root()
	return root, checkClean(root, wt)
}

// checkClean refuses a local repository whose working tree has changes.
func checkClean(dir string, wt *git.Worktree) error {
	st, err := wt.Status()
	if err != nil {
		return newError(ErrGit, nil, "status of %s: %v", dir, err)
	}
	var dirty []string
	for p, s := range st {
		if s.Worktree == git.Untracked && s.Staging == git.Untracked {
			continue // untracked files are not at risk
		}
		if s.Worktree != git.Unmodified || s.Staging != git.Unmodified {
			dirty = append(dirty, p)
		}
	}
	if len(dirty) == 0 {
		return nil
	}
	sort.Strings(dirty)
	more := ""
	if len(dirty) > 3 {
		more = fmt.Sprintf(" and %d more", len(dirty)-3)
		dirty = dirty[:3]
	}
	return newError(ErrDirty, nil, "refusing to touch %s: its working tree has uncommitted changes (%s%s). Commit or stash them, then run again", dir, strings.Join(dirty, ", "), more)
}

// RemoteDefaultBranch lists o.URL's branches, fetching nothing, and
// returns its default branch (its HEAD), or "" when it does not tell.
func RemoteDefaultBranch(ctx context.Context, o CloneOptions) (string, error) {
	o.ListOnly = true
	r, err := Clone(ctx, o)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.DefaultBranch(), nil
}

// DefaultBranch is the remote's default branch (its HEAD), or "".
func (r *Repo) DefaultBranch() string { return r.defaultBranch }

// URL is the repository URL without credentials, or the local path.
func (r *Repo) URL() string { return r.display }

// Local reports whether the repository is a path on this machine.
func (r *Repo) Local() bool { return r.local }

// Dir is the on-disk clone, or "" for an in-memory clone.
func (r *Repo) Dir() string { return r.dir }

// SourceURL is the URL Argo CD should fetch the repository from: the
// location without credentials (Location.Clean, so ssh:// and git@host:path
// keep their user), or for a local path its remote as UpstreamRemote
// chooses it (else a file:// URL, which only an Argo CD on the same
// machine can read).
func (r *Repo) SourceURL() string {
	if !r.local {
		return r.display
	}
	if lr, err := OpenLocal(r.url); err == nil {
		if rem, err := UpstreamRemote(lr); err == nil && rem.URL != "" {
			return rem.URL
		}
	}
	return "file://" + filepath.ToSlash(r.url)
}

// ReadFile reads a file of the tree the change builds on (Build's input),
// straight from the object store: nothing is checked out.
func (r *Repo) ReadFile(p string) ([]byte, error) {
	if r.tree == nil {
		return nil, fmt.Errorf("read %s of %s: no commit to read (ReadFile is for Build)", p, r.display)
	}
	f, err := r.tree.File(strings.TrimPrefix(path.Clean("/"+p), "/"))
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", p, r.display, err)
	}
	s, err := f.Contents()
	return []byte(s), err
}

// Files lists the files of the tree the change builds on (regular and
// executable files), slash-separated, sorted.
func (r *Repo) Files() ([]string, error) {
	if r.tree == nil {
		return nil, fmt.Errorf("list files of %s: no commit to read (Files is for Build)", r.display)
	}
	var out []string
	w := object.NewTreeWalker(r.tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list files of %s: %w", r.display, err)
		}
		if e.Mode == filemode.Regular || e.Mode == filemode.Executable {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Signature is a commit author.
type Signature struct {
	Name  string
	Email string
}

// Change is one commit to make on a branch.
type Change struct {
	Branch string
	// Base is where a new branch starts.
	Base string
	// Build computes the files to write and the commit message from the
	// tree at the branch tip (or Base), which it reads with ReadFile and
	// Files. It is called again whenever the commit is rebuilt on top of a
	// concurrent push.
	Build  func(r *Repo) (Content, error)
	Author Signature
}

// Content is what one commit writes.
type Content struct {
	// Files maps slash-separated paths to contents; nil deletes the file.
	Files   map[string][]byte
	Message string
}

// PublishOptions say whether and how to push.
type PublishOptions struct {
	// NoPush commits locally only. For an in-memory clone the commit is
	// then only reported (dry run).
	NoPush bool
	// Force resets the branch to Base and force-pushes it.
	Force bool
	// Attempts bounds the rebuilds after a non-fast-forward push;
	// 0 means DefaultAttempts.
	Attempts int
	// Now stamps the commit; zero means time.Now.
	Now time.Time
	// Diff asks for Result.Diff, the unified diff (for a dry run's
	// report): building it reads every changed file twice.
	Diff bool
	// Expect, when set, are the tips of the branch the caller decided
	// from (BranchAbsent: the branch does not exist). Publish builds only
	// on one of them, and its push names the tip it built on as the
	// ref's old value, so the server refuses it if the branch moved after
	// that (compare-and-swap). A branch found elsewhere, before the build
	// or at the push, is an error wrapping ErrBranchMoved: nothing is
	// pushed, rebuilt or retried. Not with Force.
	Expect []string
	// FromBase builds on Base even when the branch exists: a branch whose
	// pull request was merged (its commits are in Base) gets a new change
	// on what Base holds now. With Expect, the push replaces the branch
	// only at the expected tip (compare-and-swap), a fast-forward or not.
	FromBase bool
	// BeforePush, when set, is called with the built commit before it is
	// pushed (so a caller can record what it is about to push); its error
	// stops Publish with nothing pushed. It is called again for each
	// rebuild after a concurrent push (never with Expect).
	BeforePush func(ctx context.Context, res *Result) error
}

// BranchAbsent in PublishOptions.Expect says the caller decided from a
// branch that does not exist (git's zero object name).
const BranchAbsent = "0000000000000000000000000000000000000000"

// Result says what Publish did.
type Result struct {
	Branch string
	// Start is the commit the change was built on; Commit the new one (equal
	// to Start when nothing changed).
	Start   string
	Commit  string
	Changed bool
	Pushed  bool
	// NewBranch is true when the branch did not exist on the remote.
	NewBranch bool
	// Attempts is how many times the commit was built (more than 1 after a
	// concurrent push).
	Attempts int
	// Paths lists the files the commit changed.
	Paths []string
	// Diff is the unified diff from Start to Commit (PublishOptions.Diff).
	Diff string
}

// Publish builds the change on the branch, commits it when it changes
// anything, and pushes it. It first fetches the tips of Base and Branch
// that the clone does not hold yet. When the branch moved on the remote
// meanwhile, it lists and fetches both again, rebuilds the commit on the new
// tip and retries, a bounded number of times; with Expect it never
// rebuilds, and returns ErrBranchMoved instead. It never force-pushes
// unless Force is set.
func (r *Repo) Publish(ctx context.Context, c Change, o PublishOptions) (*Result, error) {
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if !r.history {
		var need []string
		for _, b := range []string{c.Base, c.Branch} {
			if !r.fetched[b] {
				need = append(need, b)
			}
		}
		if err := r.fetch(ctx, need...); err != nil {
			return nil, err
		}
	}
	expect := len(o.Expect) > 0 && !o.Force
	if expect {
		if tip := r.tip(c.Branch); !slices.Contains(o.Expect, tip) {
			return nil, r.moved(c.Branch, tip)
		}
	}
	for i := 1; ; i++ {
		res, err := r.commit(c, o)
		if err != nil {
			return nil, err
		}
		res.Attempts = i
		if !res.Changed || o.NoPush {
			return res, nil
		}
		if o.BeforePush != nil {
			if err := o.BeforePush(ctx, res); err != nil {
				return nil, err
			}
		}
		var old *plumbing.Hash
		if expect {
			h := plumbing.NewHash(res.Start)
			switch {
			case res.NewBranch:
				h = plumbing.ZeroHash
			case o.FromBase:
				h = plumbing.NewHash(r.tip(c.Branch))
			}
			old = &h
		}
		err = r.push(ctx, c.Branch, o.Force || o.FromBase && expect, old)
		if err == nil {
			res.Pushed = true
			return res, nil
		}
		if expect {
			// Refused, or not sent: say so when the branch moved.
			if r.list(ctx) == nil {
				if tip := r.tip(c.Branch); tip != old.String() && tip != res.Commit {
					return nil, r.moved(c.Branch, tip)
				}
			}
			return nil, err
		}
		if !errors.Is(err, ErrNonFastForward) || o.Force {
			return nil, err
		}
		if i >= attempts {
			return nil, newError(ErrNonFastForward, r.secrets, "push %s to %s: the branch kept moving; gave up after %d attempts. Run again, or pick another --branch", c.Branch, r.display, i)
		}
		if !r.history {
			if err := r.list(ctx); err != nil {
				return nil, err
			}
		}
		if err := r.fetch(ctx, c.Base, c.Branch); err != nil {
			return nil, err
		}
	}
}

// tip is the branch's commit as last listed (or, in a clone of the whole
// history, as fetched), or BranchAbsent.
func (r *Repo) tip(branch string) string {
	if r.refs == nil {
		if ref := r.remoteRef(branch); ref != nil {
			return ref.Hash().String()
		}
		return BranchAbsent
	}
	if h, ok := r.refs[plumbing.NewBranchReferenceName(branch)]; ok {
		return h.String()
	}
	return BranchAbsent
}

// moved is the error of a branch found at tip, not where the caller
// decided from.
func (r *Repo) moved(branch, tip string) error {
	at := "is at " + tip[:12]
	if tip == BranchAbsent {
		at = "does not exist"
	}
	return newError(ErrBranchMoved, r.secrets, "branch %s of %s %s, not at a commit this change was decided from: nothing was pushed over it", branch, r.display, at)
}

// remoteRef returns the remote-tracking ref of branch, or nil.
func (r *Repo) remoteRef(branch string) *plumbing.Reference {
	ref, err := r.repo.Reference(plumbing.NewRemoteReferenceName(remoteName, branch), true)
	if err != nil {
		return nil
	}
	return ref
}

// commit checks out the start point, writes the files and commits.
func (r *Repo) commit(c Change, o PublishOptions) (*Result, error) {
	res := &Result{Branch: c.Branch}
	base := r.remoteRef(c.Base)
	if base == nil {
		return nil, newError(ErrNoBase, r.secrets, "base branch %q not found in %s. Pass --base with an existing branch", c.Base, r.display)
	}
	existing := r.remoteRef(c.Branch)
	res.NewBranch = existing == nil
	start := base.Hash()
	if existing != nil && !o.Force && !o.FromBase {
		start = existing.Hash()
	}
	res.Start = start.String()
	local := plumbing.NewBranchReferenceName(c.Branch)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(local, start)); err != nil {
		return nil, wrap("create branch "+c.Branch+" in", r.display, err, r.secrets)
	}
	sc, err := r.repo.CommitObject(start)
	if err == nil {
		r.tree, err = sc.Tree()
	}
	if err != nil {
		return nil, wrap("read the tree of "+c.Branch+" of", r.display, err, r.secrets)
	}
	content, err := c.Build(r)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	sig := object.Signature{Name: c.Author.Name, Email: c.Author.Email, When: now}
	h, changed, err := r.commitFiles(start, content, sig)
	if err != nil {
		return nil, err
	}
	if !changed {
		res.Commit = res.Start
		return res, r.checkout(local, start)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(local, h)); err != nil {
		return nil, wrap("update branch "+c.Branch+" in", r.display, err, r.secrets)
	}
	if err := r.checkout(local, h); err != nil {
		return nil, err
	}
	if o.Force && existing != nil && sameTree(r.repo, h, existing.Hash()) {
		// --force rebuilt exactly what the branch already holds.
		if err := r.repo.Storer.SetReference(plumbing.NewHashReference(local, existing.Hash())); err != nil {
			return nil, wrap("reset branch in", r.display, err, r.secrets)
		}
		res.Start, res.Commit = existing.Hash().String(), existing.Hash().String()
		return res, nil
	}
	res.Commit, res.Changed = h.String(), true
	if res.Paths, res.Diff, err = r.diff(start, h, o.Diff); err != nil {
		return nil, err
	}
	return res, nil
}

// checkout leaves an on-disk clone's HEAD on branch and its working tree
// and index at commit h, as git commit would; an in-memory clone has no
// working tree.
func (r *Repo) checkout(branch plumbing.ReferenceName, h plumbing.Hash) error {
	if r.dir == "" {
		return nil
	}
	wt, err := r.repo.Worktree()
	if err == nil {
		err = r.repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branch))
	}
	if err == nil {
		err = wt.Reset(&git.ResetOptions{Commit: h, Mode: git.HardReset})
	}
	return wrap("check out "+branch.Short()+" of", r.display, err, r.secrets)
}

func sameTree(repo *git.Repository, a, b plumbing.Hash) bool {
	ca, err1 := repo.CommitObject(a)
	cb, err2 := repo.CommitObject(b)
	return err1 == nil && err2 == nil && ca.TreeHash == cb.TreeHash
}

// diff is the list of changed paths between commits and, when patch is
// set, the unified diff.
func (r *Repo) diff(from, to plumbing.Hash, patch bool) ([]string, string, error) {
	a, err := r.repo.CommitObject(from)
	if err != nil {
		return nil, "", wrap("read commit of", r.display, err, r.secrets)
	}
	b, err := r.repo.CommitObject(to)
	if err != nil {
		return nil, "", wrap("read commit of", r.display, err, r.secrets)
	}
	ta, err := a.Tree()
	if err != nil {
		return nil, "", wrap("read tree of", r.display, err, r.secrets)
	}
	tb, err := b.Tree()
	if err != nil {
		return nil, "", wrap("read tree of", r.display, err, r.secrets)
	}
	changes, err := ta.Diff(tb) // as Commit.Patch: renames detected
	if err != nil {
		return nil, "", wrap("diff in", r.display, err, r.secrets)
	}
	var paths []string
	for _, c := range changes {
		if c.To.Name != "" {
			paths = append(paths, c.To.Name)
		} else {
			paths = append(paths, c.From.Name)
		}
	}
	sort.Strings(paths)
	if !patch {
		return paths, "", nil
	}
	p, err := changes.Patch()
	if err != nil {
		return nil, "", wrap("diff in", r.display, err, r.secrets)
	}
	return paths, p.String(), nil
}

// remoteText keeps the first 4 KiB of what the server sends on the progress
// side band, where pre-receive hooks and branch protection explain a refused
// push. Progress counters are dropped.
type remoteText struct{ b strings.Builder }

var progressLine = regexp.MustCompile(`^[A-Za-z ]+:\s+\d+% \(`)

func (w *remoteText) Write(p []byte) (int, error) {
	if room := 4096 - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String is the server's messages on one line.
func (w *remoteText) String() string {
	var lines []string
	for _, l := range strings.FieldsFunc(w.b.String(), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" && !progressLine.MatchString(l) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " / ")
}

// call runs one network call to the remote within the repository's
// timeout; a call that ran out of it (and not the caller's context)
// wraps ErrTimeout.
func (r *Repo) call(ctx context.Context, fn func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := fn(cctx)
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("%w: no answer within %s (%v)", ErrTimeout, r.timeout, err)
	}
	return err
}

// fetch updates the remote-tracking refs of branches: with History every
// branch, whole; else the tips of those branches the last listing found
// (depth 1), forgetting those it did not.
func (r *Repo) fetch(ctx context.Context, branches ...string) error {
	fo := &git.FetchOptions{RemoteName: remoteName, Auth: r.auth, Tags: git.NoTags}
	if r.history {
		fo.RefSpecs = []gitconfig.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}
	} else {
		fo.Depth = 1
		for _, b := range branches {
			r.fetched[b] = true
			h, ok := r.refs[plumbing.NewBranchReferenceName(b)]
			tracking := plumbing.NewRemoteReferenceName(remoteName, b)
			switch cur := r.remoteRef(b); {
			case !ok:
				if err := r.repo.Storer.RemoveReference(tracking); err != nil {
					return wrap("forget branch "+b+" of", r.display, err, r.secrets)
				}
			case cur == nil || cur.Hash() != h:
				fo.RefSpecs = append(fo.RefSpecs, gitconfig.RefSpec("+refs/heads/"+b+":"+tracking.String()))
			}
		}
		if len(fo.RefSpecs) == 0 {
			return nil
		}
	}
	err := r.call(ctx, func(ctx context.Context) error { return r.repo.FetchContext(ctx, fo) })
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return wrap("fetch", r.display, err, r.secrets)
}

// ChooseAuthor is the commit author: flag ("Name <email>") when given,
// else user.name and user.email from git config (repo's own when repo is
// a local path, then the global one), else adopt <adopt@localhost>. note
// says where it came from when that was not the flag.
func ChooseAuthor(flag, repo string) (a Signature, note string, err error) {
	if flag != "" {
		a, err := ParseAuthor(flag)
		return a, "", err
	}
	dir := ""
	if l, err := ParseLocation(repo); err == nil && l.Scheme == SchemeLocal {
		dir = l.Path
	}
	if a, ok := ConfiguredAuthor(dir); ok {
		return a, "from git config", nil
	}
	return Signature{Name: "adopt", Email: "adopt@localhost"}, "no --author and no git config user.name/user.email; using adopt <adopt@localhost>", nil
}

// ParseAuthor reads "Name <email>".
func ParseAuthor(s string) (Signature, error) {
	name, rest, ok := strings.Cut(s, "<")
	email, _, ok2 := strings.Cut(rest, ">")
	name, email = strings.TrimSpace(name), strings.TrimSpace(email)
	if !ok || !ok2 || name == "" || email == "" {
		return Signature{}, fmt.Errorf("author %q is not in the form \"Name <email>\"", s)
	}
	return Signature{Name: name, Email: email}, nil
}

// ConfiguredAuthor reads user.name and user.email from the local
// repository's config (when dir is one) and then the global git config.
func ConfiguredAuthor(dir string) (Signature, bool) {
	var s Signature
	if dir != "" {
		if r, err := git.PlainOpen(dir); err == nil {
			if c, err := r.Config(); err == nil {
				s = Signature{Name: c.User.Name, Email: c.User.Email}
			}
		}
	}
	if s.Name == "" || s.Email == "" {
		if c, err := gitconfig.LoadConfig(gitconfig.GlobalScope); err == nil {
			if s.Name == "" {
				s.Name = c.User.Name
			}
			if s.Email == "" {
				s.Email = c.User.Email
			}
		}
	}
	return s, s.Name != "" && s.Email != ""
}
