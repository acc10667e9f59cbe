// Package atomicfile owns writing a file whole or not at all: what write
// produces goes to a temporary file beside path, which then replaces path
// in one rename, so a reader (a metrics collector, a browser) never sees
// a half-written file, and a failed write leaves path as it was.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes path with mode from what write produces.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
