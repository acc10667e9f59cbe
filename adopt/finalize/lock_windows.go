//go:build windows

package finalize

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// errLocked is a lock another process holds.
var errLocked = errors.New("locked by another process")

// lockFile takes a lock on f's first byte (LockFileEx, exclusive or
// shared, failing at once), held until f is closed or the process dies.
func lockFile(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, &windows.Overlapped{})
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return fmt.Errorf("%s: %w", f.Name(), errLocked)
	}
	return err
}
