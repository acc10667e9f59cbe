package gitops

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// spool is the object store of a clone that only builds a commit: the
// fetched packs stay in a private temporary directory, where go-git reads
// each object through its pack's index (only the index is in memory), and
// the objects the commit adds stay in memory, so building a change writes
// no loose object file. Iterating over every object (IterEncodedObjects)
// sees the fetched ones only; nothing here does.
type spool struct {
	*filesystem.Storage
	added *memory.Storage
}

func (s *spool) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	return s.added.SetEncodedObject(o)
}

func (s *spool) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, err := s.added.EncodedObject(t, h); err == nil {
		return o, nil
	}
	return s.Storage.EncodedObject(t, h)
}

func (s *spool) HasEncodedObject(h plumbing.Hash) error {
	if s.added.HasEncodedObject(h) == nil {
		return nil
	}
	return s.Storage.HasEncodedObject(h)
}

func (s *spool) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if n, err := s.added.EncodedObjectSize(h); err == nil {
		return n, nil
	}
	return s.Storage.EncodedObjectSize(h)
}
