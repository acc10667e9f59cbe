//go:build !windows

package finalize

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errLocked is a lock another process holds.
var errLocked = errors.New("locked by another process")

// lockFile takes an advisory lock on f (flock, LOCK_EX or LOCK_SH, with
// LOCK_NB), held until f is closed or the process dies.
func lockFile(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("%s: %w", f.Name(), errLocked)
		}
		return err
	}
}
