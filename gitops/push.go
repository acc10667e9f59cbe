package gitops

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// push sends the local branch to the remote in one receive-pack request,
// as go-git's Remote.Push does (the same fast-forward rule, report-status
// and side-band), but with a pack of its own: whole objects, each
// compressed at zlib.BestSpeed on every core. go-git's encoder compresses
// one object after another at the default level, which was most of the
// time of a push of 2,500 new files (see bench row 5).
// With old set, the branch must be at *old (zero: absent) when the remote
// advertises it, and the command names *old as the ref's old value, so the
// server refuses the update if the branch moved after that
// (compare-and-swap).
func (r *Repo) push(ctx context.Context, branch string, force bool, old *plumbing.Hash) error {
	return wrap("push "+branch+" to", r.display, r.call(ctx, func(ctx context.Context) error { return r.sendPack(ctx, branch, force, old) }), r.secrets)
}

// errMoved is sendPack's answer to a branch not at the old value it was
// given; Publish tells the caller with ErrBranchMoved.
var errMoved = errors.New("the branch is not at the commit the push builds on")

// sendPack is push's work; push wraps its error once.
func (r *Repo) sendPack(ctx context.Context, branch string, force bool, old *plumbing.Hash) error {
	remote, err := r.repo.Remote(remoteName)
	if err != nil {
		return err
	}
	ep, err := transport.NewEndpoint(remote.Config().URLs[0])
	if err != nil {
		return err
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, r.auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	name := plumbing.NewBranchReferenceName(branch)
	local, err := r.repo.Reference(name, true)
	if err != nil {
		return err
	}
	cmd := &packp.Command{Name: name, Old: ar.References[name.String()], New: local.Hash()}
	if old != nil && cmd.Old != *old {
		return errMoved
	}
	if r.advertised != nil {
		r.advertised()
	}
	if cmd.Old == cmd.New {
		return nil // already up to date
	}
	if !force && !cmd.Old.IsZero() && !r.isAncestor(cmd.Old, cmd.New) {
		return git.ErrNonFastForwardUpdate
	}
	pack, err := r.pack(cmd.New, ar)
	if err != nil {
		return err
	}
	var said remoteText
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{cmd}
	req.Packfile = io.NopCloser(bytes.NewReader(pack))
	req.Progress = &said
	if ar.Capabilities.Supports(capability.Sideband64k) {
		_ = req.Capabilities.Set(capability.Sideband64k)
	} else if ar.Capabilities.Supports(capability.Sideband) {
		_ = req.Capabilities.Set(capability.Sideband)
	}
	rs, err := sess.ReceivePack(ctx, req)
	if err == nil && rs != nil {
		err = rs.Error()
	}
	if err != nil {
		if said.String() != "" {
			err = fmt.Errorf("%w (the server said: %s)", err, said.String())
		}
		return err
	}
	// As after git push: the remote-tracking branch is where the push left it.
	return r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewRemoteReferenceName(remoteName, branch), cmd.New))
}

// isAncestor reports whether commit old is in the history of commit new;
// false when old is not in this clone (the remote moved on meanwhile).
func (r *Repo) isAncestor(old, new plumbing.Hash) bool {
	o, err := object.GetCommit(r.repo.Storer, old)
	if err != nil {
		return false
	}
	n, err := object.GetCommit(r.repo.Storer, new)
	if err != nil {
		return false
	}
	ok, err := o.IsAncestor(n)
	return err == nil && ok
}

// pack is the packfile of the objects new reaches that the remote lacks.
func (r *Repo) pack(tip plumbing.Hash, ar *packp.AdvRefs) ([]byte, error) {
	hashes, err := r.newObjects(tip, r.remoteHas(ar))
	if err != nil {
		return nil, err
	}
	objs := make([]plumbing.EncodedObject, len(hashes))
	for i, h := range hashes {
		if objs[i], err = r.repo.Storer.EncodedObject(plumbing.AnyObject, h); err != nil {
			return nil, err
		}
	}
	return writePack(objs)
}

// remoteHas is the commits the remote holds: those its refs advertise, and
// the tips this clone fetched from it.
func (r *Repo) remoteHas(ar *packp.AdvRefs) map[plumbing.Hash]bool {
	has := map[plumbing.Hash]bool{}
	for _, h := range ar.References {
		has[h] = true
	}
	refs, err := r.repo.References()
	if err != nil {
		return has
	}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Name().IsRemote() && ref.Type() == plumbing.HashReference {
			has[ref.Hash()] = true
		}
		return nil
	})
	return has
}

// newObjects lists the objects reachable from tip that the remote lacks:
// the commits from tip down to those it has, and for each the trees and
// blobs its first parent's tree does not hold at the same path. Only the
// changed subtrees are read, so the cost follows the change, not the size
// or the history of the repository (git push computes the same set by
// walking the history, which a shallow clone does not hold). A commit
// whose parents this clone lacks sends its whole tree.
func (r *Repo) newObjects(tip plumbing.Hash, has map[plumbing.Hash]bool) ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for queue := []plumbing.Hash{tip}; len(queue) > 0; queue = queue[1:] {
		h := queue[0]
		if has[h] || seen[h] {
			continue
		}
		seen[h] = true
		c, err := object.GetCommit(r.repo.Storer, h)
		if err != nil {
			return nil, fmt.Errorf("commit %s: %w", h, err)
		}
		out = append(out, h)
		var parentTree plumbing.Hash
		for i, ph := range c.ParentHashes {
			pc, err := object.GetCommit(r.repo.Storer, ph)
			if err != nil {
				continue // beyond a shallow clone's depth
			}
			if i == 0 {
				parentTree = pc.TreeHash
			}
			queue = append(queue, ph)
		}
		if out, err = r.newTreeObjects(out, c.TreeHash, parentTree, seen); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newTreeObjects appends tree t and what it holds that tree old (zero for
// none) does not hold at the same path.
func (r *Repo) newTreeObjects(out []plumbing.Hash, t, old plumbing.Hash, seen map[plumbing.Hash]bool) ([]plumbing.Hash, error) {
	if t == old || seen[t] {
		return out, nil
	}
	seen[t] = true
	out = append(out, t)
	tree, err := object.GetTree(r.repo.Storer, t)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", t, err)
	}
	was := map[string]object.TreeEntry{}
	if !old.IsZero() {
		ot, err := object.GetTree(r.repo.Storer, old)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", old, err)
		}
		for _, e := range ot.Entries {
			was[e.Name] = e
		}
	}
	for _, e := range tree.Entries {
		o, had := was[e.Name]
		switch {
		case had && o.Hash == e.Hash, e.Mode == filemode.Submodule:
		case e.Mode == filemode.Dir:
			var oh plumbing.Hash
			if had && o.Mode == filemode.Dir {
				oh = o.Hash
			}
			if out, err = r.newTreeObjects(out, e.Hash, oh, seen); err != nil {
				return nil, err
			}
		case !seen[e.Hash]:
			seen[e.Hash] = true
			out = append(out, e.Hash)
		}
	}
	return out, nil
}

// writePack encodes objs as a version 2 packfile of whole (undeltified)
// objects, compressing them concurrently.
func writePack(objs []plumbing.EncodedObject) ([]byte, error) {
	packed := make([][]byte, len(objs))
	errs := make([]error, len(objs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(objs)/64))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			zw, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed) // a valid level: no error
			for i := w; i < len(objs); i += workers {
				buf.Reset()
				entryHeader(&buf, objs[i].Type(), objs[i].Size())
				zw.Reset(&buf)
				errs[i] = compress(zw, objs[i])
				packed[i] = bytes.Clone(buf.Bytes())
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString("PACK")
	_ = binary.Write(&out, binary.BigEndian, [2]uint32{2, uint32(len(objs))})
	for _, p := range packed {
		out.Write(p)
	}
	sum := sha1.Sum(out.Bytes())
	out.Write(sum[:])
	return out.Bytes(), nil
}

func compress(zw *zlib.Writer, o plumbing.EncodedObject) error {
	rd, err := o.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	if _, err := io.Copy(zw, rd); err != nil {
		return err
	}
	return zw.Close()
}

// entryHeader writes a pack entry's type and size: the type in bits 4-6
// of the first byte, the size 4 bits then 7 bits a byte, low bits first,
// the high bit saying another byte follows.
func entryHeader(w *bytes.Buffer, t plumbing.ObjectType, size int64) {
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		w.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	w.WriteByte(c)
}
