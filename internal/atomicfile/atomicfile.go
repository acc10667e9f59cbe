// Package atomicfile owns writing a file whole or not at all: what write
// produces goes to a temporary file beside path, which then takes path's
// place in one step (a rename, or a link when path must be new), so a
// reader (a metrics collector, a browser, the next status run) never sees
// a half-written file, and a failed write leaves path as it was. Every
// file adopt writes goes through it.
package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes path with mode from what write produces, replacing what
// path held.
func Write(path string, mode os.FileMode, write func(io.Writer) error) error {
	return place(path, mode, write, os.Rename)
}

// WriteFile is Write of data, as os.WriteFile would write it.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	return Write(path, mode, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// Create is Write for a path that must not exist: when it does, it is left
// as it is and the error wraps fs.ErrExist.
func Create(path string, mode os.FileMode, write func(io.Writer) error) error {
	return place(path, mode, write, os.Link)
}

// place writes a temporary file beside path and puts it there with put.
func place(path string, mode os.FileMode, write func(io.Writer) error, put func(tmp, path string) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return failed(path, err)
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing is there
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return failed(path, err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return failed(path, err)
	}
	if err := put(tmp.Name(), path); err != nil {
		return failed(path, err)
	}
	return nil
}

// failed is err as an error writing path: the temporary file's name means
// nothing to whoever reads it.
func failed(path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return &fs.PathError{Op: "write", Path: path, Err: err}
}
