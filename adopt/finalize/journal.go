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
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// Entry results. Finalize writes pending before its patch and then
// finalized (StatusFinalized) or not-applied; Undo writes restored after the
// annotation is back. Any other result (skipped, ...) is kept but means
// nothing to Removed.
const (
	resultPending    = "pending"
	resultNotApplied = "not-applied"
	resultRestored   = "restored"
)

// maxLine bounds one journal line: an entry holds at most one annotation
// value (under the 262,144-byte cap), JSON-escaped.
const maxLine = 8 * budget.AnnotationCap

// Entry is one line of the journal: an object, its resourceVersion and
// annotation before the change, and what happened.
type Entry struct {
	Time time.Time `json:"time"`
	// Run identifies the process that wrote the entry (set by Record), so
	// that a not-applied is matched with its own run's pending. Journals
	// written before it existed have none.
	Run             string `json:"run,omitempty"`
	Target          Target `json:"target"`
	ResourceVersion string `json:"resourceVersion"`
	HadAnnotation   bool   `json:"hadAnnotation"`
	AnnotationBytes int    `json:"annotationBytes,omitempty"`
	AnnotationHash  string `json:"annotationSHA256,omitempty"`
	// Annotation is the removed value, kept so --undo can restore it. It is
	// not kept for Secrets, whose last-applied copy holds the secret data.
	Annotation *string   `json:"annotation,omitempty"`
	Managers   Ownership `json:"managers"`
	// Result is pending (about to patch), finalized or not-applied; or
	// restored (undo put the annotation back: AnnotationBytes and
	// AnnotationSHA256 describe the restored value, which is not repeated).
	Result string `json:"result"`
}

// NewEntry builds a journal entry.
func NewEntry(t Target, rv, annotation string, has bool, result string, own Ownership) Entry {
	e := Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: rv, HadAnnotation: has, Managers: own, Result: result}
	if has {
		sum := sha256.Sum256([]byte(annotation))
		e.AnnotationHash = hex.EncodeToString(sum[:])
		e.AnnotationBytes = len(annotation)
		if !redact.IsSecret(t.Group, t.Kind) {
			v := annotation
			e.Annotation = &v
		}
	}
	return e
}

// ErrJournalInUse is wrapped by the error OpenJournal and ReadJournal return
// when another process (or another open Journal) holds the journal's lock.
var ErrJournalInUse = errors.New("journal in use")

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

// holder is what the lock file says about the process that holds it.
type holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
	Command string    `json:"command"`
	Run     string    `json:"run"`
}

// JournalPath is where finalize keeps the journal of the plan file
// planFile, and where status and --undo read it: <plan>.journal.
func JournalPath(planFile string) string { return planFile + ".journal" }

// OpenJournal opens (or creates, mode 0600) the journal at path for
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

func parseEntry(line []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		return e, err
	}
	if e.Result == "" || e.Target.Name == "" {
		return e, errors.New("not a journal entry (no result or target name)")
	}
	return e, nil
}

// Removed returns the entry to restore for each object whose annotation a
// run removed and no later undo restored, in the order the objects first
// appear.
//
// An object's annotation was removed by a finalized entry, or by a pending
// entry that no outcome settles (the process died after sending the patch:
// whether it landed is unknown, and Undo never overwrites a present
// annotation, so it is counted). Each not-applied or finalized settles the
// latest unsettled pending of the same object, resourceVersion and run;
// lines from other runs, interleaved in any order, never cancel a removal.
// A restored entry after an object's last removal means it is back
// already, so a second undo restores nothing.
func Removed(entries []Entry) []Entry {
	type key struct{ ref, rv, run string }
	settled := make([]bool, len(entries))
	open := map[key][]int{} // unsettled pending entries, oldest first
	for i, e := range entries {
		k := key{e.Target.Ref(), e.ResourceVersion, e.Run}
		switch e.Result {
		case resultPending:
			open[k] = append(open[k], i)
		case resultNotApplied, string(StatusFinalized):
			if s := open[k]; len(s) > 0 {
				settled[s[len(s)-1]] = true
				open[k] = s[:len(s)-1]
			}
		}
	}
	type state struct{ removed, restored int } // entry indexes, -1 for none
	objects := map[string]*state{}
	var order []string
	for i, e := range entries {
		ref := e.Target.Ref()
		removal := e.HadAnnotation && (e.Result == string(StatusFinalized) || e.Result == resultPending && !settled[i])
		if !removal && e.Result != resultRestored {
			continue
		}
		s, ok := objects[ref]
		if !ok {
			if !removal {
				continue // restored before any removal this journal knows of
			}
			s = &state{removed: -1, restored: -1}
			objects[ref] = s
			order = append(order, ref)
		}
		if removal {
			s.removed = i
		} else {
			s.restored = i
		}
	}
	var out []Entry
	for _, ref := range order {
		if s := objects[ref]; s.removed > s.restored {
			out = append(out, entries[s.removed])
		}
	}
	return out
}

// Undo puts back the annotation that e records as removed, with a guarded
// JSON patch (test of the resourceVersion just read). It never overwrites
// an annotation that is present. When f.Journal is set, a restored (or
// found restored) annotation is journaled as restored, so that Removed no
// longer returns it.
func (f *Finalizer) Undo(ctx context.Context, e Entry) Result {
	t := e.Target
	res := Result{Object: t.Ref(), App: t.App}
	if e.Annotation == nil {
		res.Status = StatusFailed
		res.Reason = fmt.Sprintf("%s: the journal keeps only a digest of its annotation (Secret data is never written to disk); re-create it with kubectl apply if you need it", t.Ref())
		return res
	}
	c := f.Client(t)
	backoff := f.Backoff
	if backoff.Steps == 0 {
		backoff = retry.DefaultRetry
	}
	rv := ""
	err := retry.OnError(backoff, retriable, func() error {
		res.Attempts++
		live, err := c.Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rv = live.GetResourceVersion()
		ann := live.GetAnnotations()
		res.Before = budget.MeasureBudget(ann)
		if v, ok := ann[budget.LastAppliedKey]; ok {
			if v == *e.Annotation {
				res.Status, res.After = StatusAlready, res.Before
				res.Reason = "annotation already restored"
				return nil
			}
			return &refusal{msg: fmt.Sprintf("%s carries another %s now; left as is", t.Ref(), budget.LastAppliedKey)}
		}
		ops := []Op{{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()}}
		if ann == nil {
			ops = append(ops, Op{Op: "add", Path: "/metadata/annotations", Value: map[string]string{budget.LastAppliedKey: *e.Annotation}})
		} else {
			ops = append(ops, Op{Op: "add", Path: annotationPath, Value: *e.Annotation})
		}
		if f.DryRun {
			res.Status = StatusWould
			res.Patch = append(ops[:1:1], Op{Op: ops[1].Op, Path: annotationPath, Value: Digest(*e.Annotation)})
			return nil
		}
		body, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		out, err := c.Patch(ctx, t.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: f.fieldManager()})
		if err != nil {
			return err
		}
		res.Status, res.After = StatusRestored, budget.MeasureBudget(out.GetAnnotations())
		return nil
	})
	if err != nil {
		res.Status, res.Reason = StatusFailed, explain(t, err, res.Attempts)
		return res
	}
	if f.Journal != nil && !f.DryRun && (res.Status == StatusRestored || res.Status == StatusAlready) {
		// Best effort, as finalize's own after-patch line: the annotation
		// is back either way, and a later undo finds it present.
		sum := sha256.Sum256([]byte(*e.Annotation))
		_ = f.Journal.Record(Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: rv, Result: resultRestored,
			AnnotationBytes: len(*e.Annotation), AnnotationHash: hex.EncodeToString(sum[:])})
	}
	return res
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

func runID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// entryStart is how every entry's JSON starts (Time is Entry's first field).
var entryStart = []byte(`{"time":"`)

// looksTorn says whether b could be an entry cut short: it starts as every
// entry starts (or is a beginning of that start).
func looksTorn(b []byte) bool {
	if len(b) < len(entryStart) {
		return bytes.HasPrefix(entryStart, b)
	}
	return bytes.HasPrefix(b, entryStart)
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
