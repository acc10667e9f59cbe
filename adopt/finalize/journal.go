package finalize

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// Entry is one line of the journal: an object, its resourceVersion and
// annotation before the change, and what happened.
type Entry struct {
	Time            time.Time `json:"time"`
	Target          Target    `json:"target"`
	ResourceVersion string    `json:"resourceVersion"`
	HadAnnotation   bool      `json:"hadAnnotation"`
	AnnotationBytes int       `json:"annotationBytes,omitempty"`
	AnnotationHash  string    `json:"annotationSHA256,omitempty"`
	// Annotation is the removed value, kept so --undo can restore it. It is
	// not kept for Secrets, whose last-applied copy holds the secret data.
	Annotation *string   `json:"annotation,omitempty"`
	Managers   Ownership `json:"managers"`
	// Result is pending (about to patch), finalized or not-applied.
	Result string `json:"result"`
}

// NewEntry builds a journal entry.
func NewEntry(t Target, rv, annotation string, has bool, result string, own Ownership) Entry {
	e := Entry{Time: time.Now().UTC(), Target: t, ResourceVersion: rv, HadAnnotation: has, Managers: own, Result: result}
	if has {
		sum := sha256.Sum256([]byte(annotation))
		e.AnnotationHash = hex.EncodeToString(sum[:])
		e.AnnotationBytes = len(annotation)
		if !(t.Group == "" && t.Kind == "Secret") {
			v := annotation
			e.Annotation = &v
		}
	}
	return e
}

// Journal appends entries, one JSON document per line, synced to disk
// before the patch it announces is sent.
type Journal struct {
	f *os.File
}

// OpenJournal opens (or creates, mode 0600) the journal at path for appending.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Record appends e and syncs it.
func (j *Journal) Record(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return j.f.Sync()
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal reads every entry of the journal at path.
func ReadJournal(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*budget.AnnotationCap)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// A line cut short by a kill is the last one; earlier lines are whole.
			return out, fmt.Errorf("journal %s line %d is not readable (cut short by an interruption?): %v", path, n, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Removed returns, per object, the last entry whose annotation removal was
// sent (finalized, or pending with no later not-applied), in journal order.
func Removed(entries []Entry) []Entry {
	last := map[string]Entry{}
	var order []string
	for _, e := range entries {
		ref := e.Target.Ref()
		switch e.Result {
		case "pending", string(StatusFinalized):
			if !e.HadAnnotation {
				continue
			}
			if _, ok := last[ref]; !ok {
				order = append(order, ref)
			}
			last[ref] = e
		case "not-applied":
			if p, ok := last[ref]; ok && p.Result == "pending" && p.ResourceVersion == e.ResourceVersion {
				delete(last, ref)
			}
		}
	}
	var out []Entry
	for _, ref := range order {
		if e, ok := last[ref]; ok {
			out = append(out, e)
		}
	}
	return out
}

// Undo puts back the annotation that e records as removed, with a guarded
// JSON patch (test of the resourceVersion just read). It never overwrites
// an annotation that is present.
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
	err := retry.OnError(backoff, retriable, func() error {
		res.Attempts++
		live, err := c.Get(ctx, t.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
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
	}
	return res
}
