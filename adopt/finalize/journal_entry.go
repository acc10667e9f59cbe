package finalize

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
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
// value (under the 262,144-byte cap), JSON-escaped, or one Helm release
// record (a Secret or ConfigMap, at most 1 MiB of data: under 1.4 MiB in
// base64). Journal.Record refuses a longer entry, so that every line it
// wrote can be read back.
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
	// not kept for Secrets, whose last-applied copy holds the secret data,
	// and neither are AnnotationBytes and AnnotationHash.
	Annotation *string   `json:"annotation,omitempty"`
	Managers   Ownership `json:"managers"`
	// Release is set on the entries of a Helm release record that
	// --retire-helm-records deleted (Target names the record): the
	// release's name. Record is the record in full, as the API server
	// returned it, in the pending entry written before its delete, so that
	// --undo can create it again byte for byte. It holds the release, its
	// values included, which may be secret: the journal is mode 0600 and
	// nothing of it is printed.
	Release string          `json:"release,omitempty"`
	Record  json.RawMessage `json:"record,omitempty"`
	// Result is pending (about to patch), finalized or not-applied; or
	// restored (undo put the annotation back: AnnotationBytes and
	// AnnotationSHA256 describe the restored value, which is not repeated).
	// A record's entries are pending, then retired or not-applied, and
	// restored once undo created it again.
	Result string `json:"result"`
}

// NewEntry builds a journal entry.
func NewEntry(t Target, rv, annotation string, has bool, result string, own Ownership) Entry {
	e := Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: rv, HadAnnotation: has, Managers: own, Result: result}
	if has && !t.IsSecret() {
		// A Secret's last-applied copy holds its data: nothing of it is
		// kept, not even a digest or a length, which would let weak values
		// be guessed offline (and undo never restores it).
		sum := sha256.Sum256([]byte(annotation))
		e.AnnotationHash = hex.EncodeToString(sum[:])
		e.AnnotationBytes = len(annotation)
		v := annotation
		e.Annotation = &v
	}
	return e
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
