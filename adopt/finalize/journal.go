package finalize

// The journal: one JSON entry per line, appended and synced before the patch
// it announces is sent, so that --undo can put back what finalize removed.
//
// One process at a time writes a journal: OpenJournal takes an advisory lock
// (flock on Unix, LockFileEx on Windows) on <journal>.lock, which names its holder, and
// holds it until Close or the process's death. ReadJournal reads under a
// shared lock, so an undo never reads a journal another finalize is writing.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Journal appends entries, one JSON document per line, synced to disk
// before the patch it announces is sent. It holds the journal's lock until
// Close.
type Journal struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	lock   *os.File
	run    string
	size   int64 // bytes of whole lines written so far
	broken error // a failed write that could not be rolled back
	closed bool
	// syncMu serializes fsyncs; synced is how many bytes the last one
	// covered. Concurrent Records share one fsync (group commit).
	syncMu sync.Mutex
	synced int64
}

// JournalPath is where finalize keeps the journal of the plan file
// planFile, and where status and --undo read it: <plan>.journal.
func JournalPath(planFile string) string { return planFile + ".journal" }

// OpenJournal opens (or creates, mode 0600; a wider mode is narrowed to
// 0600) the journal at path for
// appending, after taking its lock (<path>.lock). It fails, wrapping
// ErrJournalInUse and naming the holder, while a Journal has it open, in
// this process or another.
//
// A torn last line (no trailing newline, the start of an entry: a process
// killed while writing it) is cut off first, so that the next entry starts
// on a line of its own; a last line that is neither an entry nor the start
// of one is refused, the file left as is. It is safe to drop: a pending line is written in full before its
// patch is sent, so a torn pending line's patch was never sent, and a torn
// finalized, not-applied or restored line follows a whole line that still
// accounts for the object (see Removed).
func OpenJournal(path string) (*Journal, error) {
	lockPath := path + ".lock"
	lock, err := flockFile(lockPath, true, true)
	if err != nil {
		if errors.Is(err, errLocked) {
			return nil, inUse(path, lockPath)
		}
		return nil, fmt.Errorf("open journal: lock %s: %w", lockPath, err)
	}
	j := &Journal{path: path, lock: lock, run: runID()}
	fail := func(err error) (*Journal, error) {
		_ = os.Remove(lockPath) // still ours: we hold the lock
		lock.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := writeHolder(lock, j.run); err != nil {
		return fail(fmt.Errorf("write %s: %w", lockPath, err))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return fail(err)
	}
	j.f = f
	if err := private(f); err != nil {
		f.Close()
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if j.size, err = cutTornTail(f); err != nil {
		f.Close()
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	return j, nil
}

// Record appends e and syncs it. A write that fails half-way is rolled
// back, so that the journal never holds a broken line before whole ones.
func (j *Journal) Record(e Entry) error { return j.write(e, true) }

// Settle appends e, the outcome of a patch whose pending entry Record
// made durable before the patch was sent, without waiting for its own
// fsync: the next Record's fsync, or Close's, covers it. Undo never needs
// it: a pending entry nothing settles counts as a removal, and restoring
// is guarded (it never overwrites a present annotation), so an outcome
// lost in a crash costs at most a restore that finds nothing to do.
func (j *Journal) Settle(e Entry) error { return j.write(e, false) }

func (j *Journal) write(e Entry, durable bool) error {
	if e.Run == "" {
		e.Run = j.run
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(b) >= maxLine {
		return fmt.Errorf("the journal entry of %s would be %d bytes, over the journal's %d-byte line limit", e.Target.Ref, len(b), maxLine)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return fmt.Errorf("journal %s is closed", j.path)
	case j.broken != nil:
		return j.broken
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("journal %s: a write failed (%v) and could not be rolled back (%v)", j.path, err, terr)
		}
		return err
	}
	j.size += int64(len(b)) + 1
	mine := j.size
	if !durable {
		return nil
	}
	j.mu.Unlock()
	// The entry is durable once a sync that started after it was written
	// has finished: whichever Record syncs first covers every line written
	// before its sync, so concurrent finalizes share one fsync.
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	if j.synced >= mine {
		return nil
	}
	upto := j.size
	j.mu.Unlock()
	err = j.f.Sync()
	j.mu.Lock()
	if err == nil && upto > j.synced {
		j.synced = upto
	}
	return err
}

// Close closes the journal file and releases its lock. It may be called
// more than once.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var err error
	if j.synced < j.size && j.broken == nil {
		err = j.f.Sync() // the settled outcomes
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	// Removed while still locked: an opener that opened the old file
	// notices (flockFile checks the path still names what it locked).
	_ = os.Remove(j.path + ".lock")
	if lerr := j.lock.Close(); err == nil {
		err = lerr
	}
	return err
}

// JournalError is a journal line that cannot be read. ReadJournal returns it
// with no entries: acting on the lines before it (or around it) could leave
// a removed annotation unrestored while reporting success, so undo must
// refuse and say which line to repair.
type JournalError struct {
	Path string
	Line int // 1-based
	Err  error
}

func (e *JournalError) Error() string {
	return fmt.Sprintf("journal %s:%d cannot be read: %v. Undo needs every line: repair that line (one JSON entry per line) or restore the file, then run again", e.Path, e.Line, e.Err)
}

func (e *JournalError) Unwrap() error { return e.Err }

// ReadJournal reads every entry of the journal at path, under a shared lock:
// it fails, wrapping ErrJournalInUse, while a Journal has it open, in
// this process or another (its holder reads through Journal.Entries).
//
// Either every line is read or none is returned: a line that is not a
// journal entry is a *JournalError naming the line, with nil entries, and
// undo must refuse it rather than restore part of the journal. The one
// exception is a torn last line: not ended by a newline and the start of
// an entry, as a process killed (or a full disk) leaves it. It is skipped;
// OpenJournal says why that loses nothing. Empty lines are skipped.
func ReadJournal(path string) ([]Entry, error) {
	lockPath := path + ".lock"
	lock, err := flockFile(lockPath, false, false)
	switch {
	case errors.Is(err, errLocked):
		return nil, inUse(path, lockPath)
	case err == nil && lock != nil:
		defer lock.Close()
	}
	// No lock file (nobody holds the journal), or one we may not open:
	// read without it.
	return readEntries(path)
}

// Entries reads every entry of the journal j holds, as ReadJournal
// would: finalize --undo reads the journal it also writes its restores to.
func (j *Journal) Entries() ([]Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, fmt.Errorf("journal %s is closed", j.path)
	}
	return readEntries(j.path)
}

// readEntries reads the journal's lines (see ReadJournal).
func readEntries(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	var out []Entry
	r := bufio.NewReaderSize(f, 64*1024)
	for n := 1; ; n++ {
		line, err := readLine(r)
		if err != nil && err != io.EOF {
			return nil, &JournalError{Path: path, Line: n, Err: err}
		}
		torn := err == io.EOF // the last line, without its newline
		if len(bytes.TrimSpace(line)) > 0 {
			e, perr := parseEntry(line)
			switch {
			case perr == nil:
				out = append(out, e)
			case !torn || !looksTorn(line):
				return nil, &JournalError{Path: path, Line: n, Err: perr}
			}
		}
		if torn {
			return out, nil
		}
	}
}

// readLine returns the next line without its newline, or the rest of the
// file and io.EOF when no newline ends it.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return line, io.EOF
		default:
			return nil, err
		}
	}
}

// private makes f readable and writable by its owner only (0600) when it
// is not already: it may hold a Helm release record in full, and a
// journal copied or made by hand may have come with a wider mode.
func private(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return f.Chmod(0o600)
}

func runID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// cutTornTail drops a torn last line (no newline ends it, see looksTorn),
// gives a whole last entry its missing newline, and returns the file's size
// after. It refuses a last line that is neither.
func cutTornTail(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	buf := make([]byte, 64*1024)
	start := int64(0) // where the last line starts
	for end := size; end > 0; {
		n := int64(len(buf))
		if n > end {
			n = end
		}
		if _, err := f.ReadAt(buf[:n], end-n); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			start = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if start == size {
		return size, nil // ends with a newline
	}
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && err != io.EOF {
		return 0, err
	}
	if _, err := parseEntry(tail); err == nil {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return 0, err
		}
		return size + 1, f.Sync()
	}
	if len(bytes.TrimSpace(tail)) > 0 && !looksTorn(tail) {
		return 0, errors.New("its last line is neither a journal entry nor the start of one (is --journal the right file?); left as is")
	}
	if err := f.Truncate(start); err != nil {
		return 0, err
	}
	return start, f.Sync()
}
