package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a write lands whole with its mode and leaves no temporary
// file; a failed write leaves the old file as it was and no temporary
// file either.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := Write(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("render failed")
	if err := Write(p, 0o644, func(w io.Writer) error { io.WriteString(w, "half"); return failed }); !errors.Is(err, failed) {
		t.Fatalf("a failed write returned %v, want its error", err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "one" {
		t.Fatalf("after a failed write the file holds %q (%v), want the old %q", b, err, "one")
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want only the file (no temporary left)", len(entries))
	}
}

// TestCreate: Create puts a new file whole with its mode, refuses a path
// that exists (fs.ErrExist), leaving it as it was, and leaves no
// temporary file either way; WriteFile replaces with its own mode.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "status-1.json")
	if err := Create(p, 0o600, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }); err != nil {
		t.Fatal(err)
	}
	err := Create(p, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "second"); return err })
	if !errors.Is(err, fs.ErrExist) || err.Error() != "write "+p+": file exists" {
		t.Fatalf("a second Create of %s returned %v, want fs.ErrExist naming the file", p, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Errorf("Create over an existing file left %q, want %q", b, "first")
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want only the file (no temporary left)", len(entries))
	}
	if err := WriteFile(p, []byte("third"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "third" {
		t.Errorf("WriteFile left %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("WriteFile's mode %v, want 0640", st.Mode().Perm())
	}
}
