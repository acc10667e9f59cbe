package gitops

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackIsReadByGit: the git CLI indexes the pack writePack makes and
// gives back every object byte for byte, for sizes on each side of the
// entry header's byte boundaries and for data that does not compress.
func TestPackIsReadByGit(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	noise := make([]byte, 1<<20)
	rnd.Read(noise)
	var objs []plumbing.EncodedObject
	want := map[string][]byte{}
	for _, n := range []int{0, 1, 15, 16, 127, 128, 2047, 2048, 262143, 262144, 1 << 20} {
		for _, data := range [][]byte{bytes.Repeat([]byte("key: value\n"), n/11+1)[:n], noise[:n]} {
			o := &plumbing.MemoryObject{}
			o.SetType(plumbing.BlobObject)
			o.Write(data)
			if _, dup := want[o.Hash().String()]; dup {
				continue
			}
			objs = append(objs, o)
			want[o.Hash().String()] = data
		}
	}
	pack, err := writePack(objs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "--bare", "repo.git")
	bare := filepath.Join(dir, "repo.git")
	file := filepath.Join(dir, "in.pack")
	if err := os.WriteFile(file, pack, 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, bare, "index-pack", "--strict", "-o", filepath.Join(bare, "objects", "pack", "in.idx"), file)
	if err := os.Rename(file, filepath.Join(bare, "objects", "pack", "in.pack")); err != nil {
		t.Fatal(err)
	}
	listed := gitIn(t, bare, "verify-pack", "-v", filepath.Join(bare, "objects", "pack", "in.idx"))
	if got := strings.Count(listed, " blob "); got != len(objs) {
		t.Fatalf("git lists %d blobs in the pack, want %d:\n%s", got, len(objs), listed)
	}
	for h, data := range want {
		cmd := gitCmd(bare, "cat-file", "blob", h)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("git cat-file blob %s: %v", h, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("blob %s: git reads %d bytes, want %d", h, len(got), len(data))
		}
	}
}
