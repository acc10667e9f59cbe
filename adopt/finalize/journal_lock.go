package finalize

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrJournalInUse is wrapped by the error OpenJournal and ReadJournal return
// when another process (or another open Journal) holds the journal's lock.
var ErrJournalInUse = errors.New("journal in use")

// holder is what the lock file says about the process that holds it.
type holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
	Command string    `json:"command"`
	Run     string    `json:"run"`
}

// flockFile opens path (creating it when create is set) and locks it,
// exclusive or shared, without waiting. It returns an error wrapping
// errLocked when
// someone holds a conflicting lock, and (nil, nil) when path does not exist
// and create is unset. A lock taken on a file its last holder removed in
// the meantime is dropped and taken again on the new file.
func flockFile(path string, exclusive, create bool) (*os.File, error) {
	for range 10 {
		var f *os.File
		var err error
		if create {
			f, err = os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		} else {
			f, err = os.Open(path)
		}
		if err != nil {
			if !create && errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			return nil, err
		}
		if err := lockFile(f, exclusive); err != nil {
			f.Close()
			return nil, err
		}
		mine, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(mine, now) {
			return f, nil
		}
		f.Close()
		if !create && errors.Is(err2, os.ErrNotExist) {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("%s keeps being replaced while being locked", path)
}

func writeHolder(lock *os.File, run string) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(holder{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second), Command: "adopt finalize", Run: run})
	if err != nil {
		return err
	}
	if err := lock.Truncate(0); err != nil {
		return err
	}
	_, err = lock.WriteAt(append(b, '\n'), 0)
	return err
}

// inUse is the error for a journal whose lock someone else holds, naming
// the holder as its lock file does.
func inUse(path, lockPath string) error {
	who := "another adopt finalize (its lock file names no holder yet)"
	if b, err := os.ReadFile(lockPath); err == nil {
		var h holder
		if json.Unmarshal(b, &h) == nil && h.PID > 0 {
			cmd := h.Command
			if cmd == "" {
				cmd = "adopt finalize"
			}
			who = fmt.Sprintf("%s (pid %d on host %s, since %s)", cmd, h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
		}
	}
	return &inUseError{msg: fmt.Sprintf("journal %s is in use by %s: wait for it to finish, or remove %s if that process is gone, then run again", path, who, lockPath)}
}

// inUseError is ErrJournalInUse for errors.Is, with its own one-line text.
type inUseError struct{ msg string }

func (e *inUseError) Error() string { return e.msg }
func (e *inUseError) Unwrap() error { return ErrJournalInUse }
