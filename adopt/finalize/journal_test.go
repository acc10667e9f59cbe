package finalize_test

// The journal's own rules, without a cluster: which removals --undo puts
// back whatever the order of lines from concurrent runs, undo twice, the
// lock between processes, and lines that cannot be read.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	fmtpkg "fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
)

// lockChildEnv makes the test binary a helper process instead of running
// tests (TestMain checks it before it starts a control plane): it holds or tries the
// journal named in lockChildPath.
const (
	lockChildEnv  = "ADOPT_TEST_JOURNAL_LOCK_CHILD"
	lockChildPath = "ADOPT_TEST_JOURNAL_LOCK_PATH"
)

// lockChild "try": open the journal, print "opened" or the error, exit 0
// or 3; then try ReadJournal the same way. "hold": open it, print "held",
// and wait to be killed.
func lockChild(mode, path string) int {
	j, err := finalize.OpenJournal(path)
	switch {
	case mode == "hold" && err == nil:
		fmtpkg.Println("held")
		time.Sleep(time.Hour)
		return 0
	case err != nil:
		fmtpkg.Println("open:", err, errors.Is(err, finalize.ErrJournalInUse))
		_, rerr := finalize.ReadJournal(path)
		fmtpkg.Println("read:", rerr, errors.Is(rerr, finalize.ErrJournalInUse))
		return 3
	}
	fmtpkg.Println("opened")
	j.Close()
	return 0
}

var cmTarget = finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "ns", Name: "cm"}, App: "app"}

func named(name string) finalize.Target {
	t := cmTarget
	t.Name = name
	return t
}

// entry is one journal line of run for t, removing value at rv.
func entry(run string, t finalize.Target, rv, value, result string) finalize.Entry {
	e := finalize.NewEntry(t, rv, value, true, result, finalize.Ownership{})
	e.Run = run
	return e
}

// interleavings returns every merge of a and b that keeps each one's order.
func interleavings(a, b []finalize.Entry) [][]finalize.Entry {
	if len(a) == 0 || len(b) == 0 {
		return [][]finalize.Entry{append(append([]finalize.Entry{}, a...), b...)}
	}
	var out [][]finalize.Entry
	for _, rest := range interleavings(a[1:], b) {
		out = append(out, append([]finalize.Entry{a[0]}, rest...))
	}
	for _, rest := range interleavings(a, b[1:]) {
		out = append(out, append([]finalize.Entry{b[0]}, rest...))
	}
	return out
}

// TestRemovedWhateverTheOrderOfConcurrentRuns: two finalize runs read the
// same object; one patch lands (finalized, or unanswered), the other's test
// fails (not-applied). Whatever order their lines reach the journal in, and
// whether or not the lines name their run, undo restores the object; when
// neither landed, nothing is restored. The incident: the loser's
// not-applied written after the winner's finalized hid the removal.
func TestRemovedWhateverTheOrderOfConcurrentRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a, b   []string // results of run A and run B, in order
		remove bool
	}{
		{"A finalized, B not applied", []string{"pending", "finalized"}, []string{"pending", "not-applied"}, true},
		{"A unanswered, B not applied", []string{"pending"}, []string{"pending", "not-applied"}, true},
		{"A finalized, B skipped", []string{"pending", "finalized"}, []string{"skipped"}, true},
		{"both not applied", []string{"pending", "not-applied"}, []string{"pending", "not-applied"}, false},
	} {
		for _, runs := range [][2]string{{"run-a", "run-b"}, {"", ""}} {
			t.Run(fmtpkg.Sprintf("%s/run ids %q", tc.name, runs[0]), func(t *testing.T) {
				var a, b []finalize.Entry
				for _, r := range tc.a {
					a = append(a, entry(runs[0], cmTarget, "7", "the value", r))
				}
				for _, r := range tc.b {
					b = append(b, entry(runs[1], cmTarget, "7", "the value", r))
				}
				for _, lines := range interleavings(a, b) {
					got := finalize.Removed(lines)
					if !tc.remove {
						if len(got) != 0 {
							t.Errorf("%s: Removed = %+v, want nothing", results(lines), got)
						}
						continue
					}
					if len(got) != 1 || got[0].Target != cmTarget || got[0].Annotation == nil || *got[0].Annotation != "the value" {
						t.Errorf("%s: Removed = %+v, want %s with its value", results(lines), got, cmTarget.Ref.String())
					}
				}
			})
		}
	}
}

func results(lines []finalize.Entry) string {
	var s []string
	for _, e := range lines {
		s = append(s, e.Run+":"+e.Result)
	}
	return strings.Join(s, " ")
}

// TestRemovedManyObjectsTwoRuns is the incident's shape: 60 objects, two
// runs, every object patched once by one of them; the loser's not-applied
// line sometimes comes last. All 60 are restored.
func TestRemovedManyObjectsTwoRuns(t *testing.T) {
	for _, ids := range [][2]string{{"run-a", "run-b"}, {"", ""}} {
		var lines []finalize.Entry
		for i := range 60 {
			o, v := named("cm-"+strconv.Itoa(i)), "v"+strconv.Itoa(i)
			win, lose := ids[0], ids[1]
			if i%2 == 1 {
				win, lose = lose, win
			}
			wp, wf := entry(win, o, "1", v, "pending"), entry(win, o, "1", v, "finalized")
			lp, ln := entry(lose, o, "1", v, "pending"), entry(lose, o, "1", v, "not-applied")
			switch i % 3 {
			case 0:
				lines = append(lines, wp, lp, wf, ln)
			case 1: // the incident: the loser's lines after the winner's finalized
				lines = append(lines, wp, wf, lp, ln)
			case 2:
				lines = append(lines, lp, wp, wf, entry("other", named("unrelated"), "3", "u", "pending"), ln, entry("other", named("unrelated"), "3", "u", "not-applied"))
			}
		}
		got := finalize.Removed(lines)
		if len(got) != 60 {
			t.Fatalf("run ids %q: Removed returns %d objects, want 60", ids, len(got))
		}
		for i, e := range got {
			if e.Target.Name != "cm-"+strconv.Itoa(i) || *e.Annotation != "v"+strconv.Itoa(i) {
				t.Errorf("run ids %q: Removed[%d] = %s %q", ids, i, e.Target.Name, *e.Annotation)
			}
		}
	}
}

// TestRemovedAfterRestoreAndRefinalize: a restored line after the last
// removal means restored; a removal after it (finalize run again) counts
// again, with the newer value.
func TestRemovedAfterRestoreAndRefinalize(t *testing.T) {
	restored := finalize.Entry{Run: "u", Target: cmTarget, ResourceVersion: "9", Result: "restored"}
	lines := []finalize.Entry{entry("a", cmTarget, "7", "old", "pending"), entry("a", cmTarget, "7", "old", "finalized"), restored}
	if got := finalize.Removed(lines); len(got) != 0 {
		t.Fatalf("after undo, Removed = %+v, want nothing", got)
	}
	lines = append(lines, entry("b", cmTarget, "10", "new", "pending"), entry("b", cmTarget, "10", "new", "finalized"))
	if got := finalize.Removed(lines); len(got) != 1 || *got[0].Annotation != "new" {
		t.Fatalf("after a second finalize, Removed = %+v, want the new value", got)
	}
}

// fakeObject is one ConfigMap behind finalize.Client, applying the two
// JSON patches Undo sends (test resourceVersion; add the annotation or the
// annotations) as the API server does.
type fakeObject struct {
	mu      sync.Mutex
	obj     *unstructured.Unstructured
	patches int
}

func (f *fakeObject) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.obj.DeepCopy(), nil
}

func (f *fakeObject) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patches++
	var ops []finalize.Op
	if err := json.Unmarshal(data, &ops); err != nil || pt != types.JSONPatchType {
		return nil, fmtpkg.Errorf("bad patch %s: %v", data, err)
	}
	next := f.obj.DeepCopy()
	for _, op := range ops {
		switch {
		case op.Op == "test" && op.Path == "/metadata/resourceVersion":
			if op.Value != next.GetResourceVersion() {
				return nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, name, errors.New("test failed"))
			}
		case op.Op == "add" && op.Path == "/metadata/annotations":
			m := map[string]string{}
			for k, v := range op.Value.(map[string]any) {
				m[k] = v.(string)
			}
			next.SetAnnotations(m)
		case op.Op == "add" && op.Path == "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration":
			ann := next.GetAnnotations()
			ann[budget.LastAppliedKey] = op.Value.(string)
			next.SetAnnotations(ann)
		default:
			return nil, fmtpkg.Errorf("unexpected op %+v", op)
		}
	}
	rv, _ := strconv.Atoi(next.GetResourceVersion())
	next.SetResourceVersion(strconv.Itoa(rv + 1))
	f.obj = next
	return next.DeepCopy(), nil
}

// TestUndoTwiceIsANoOp: the first undo restores and journals it; the second
// finds nothing to restore in the journal, and sends no patch.
func TestUndoTwiceIsANoOp(t *testing.T) {
	ctx := context.Background()
	jp := filepath.Join(t.TempDir(), "plan.yaml.journal")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	// What a finalize run journaled, the annotation now gone.
	for _, r := range []string{"pending", "finalized"} {
		if err := j.Record(finalize.NewEntry(cmTarget, "5", "the value", true, r, finalize.Ownership{})); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetNamespace("ns")
	obj.SetName("cm")
	obj.SetResourceVersion("6")
	obj.SetAnnotations(map[string]string{"other": "x"})
	fake := &fakeObject{obj: obj}

	undo := func() []finalize.Result {
		j, err := finalize.OpenJournal(jp) // as finalize --undo does
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		entries, err := j.Entries()
		if err != nil {
			t.Fatal(err)
		}
		f := &finalize.Finalizer{Client: func(finalize.Target) finalize.Client { return fake }, Journal: j}
		var out []finalize.Result
		for _, e := range finalize.Removed(entries) {
			out = append(out, f.Undo(ctx, e))
		}
		return out
	}
	first := undo()
	if len(first) != 1 || first[0].Status != finalize.StatusRestored {
		t.Fatalf("first undo: %+v", first)
	}
	if got := fake.obj.GetAnnotations()[budget.LastAppliedKey]; got != "the value" || fake.patches != 1 {
		t.Fatalf("first undo left %q after %d patches", got, fake.patches)
	}
	if second := undo(); len(second) != 0 || fake.patches != 1 {
		t.Fatalf("second undo: %+v, %d patches in all; want nothing done", second, fake.patches)
	}
	// Without the journal's word, the live object says so too.
	f := &finalize.Finalizer{Client: func(finalize.Target) finalize.Client { return fake }}
	if r := f.Undo(ctx, entry("", cmTarget, "5", "the value", "finalized")); r.Status != finalize.StatusAlready || fake.patches != 1 {
		t.Fatalf("undo of a restored object: %s (%s), %d patches", r.Status, r.Reason, fake.patches)
	}
}

// TestJournalLockSameProcess: flock locks belong to the open file, so a
// second OpenJournal in the same process is refused too, naming the
// holder; after Close the journal can be opened again and the lock file
// is gone.
func TestJournalLockSameProcess(t *testing.T) {
	jp := filepath.Join(t.TempDir(), "plan.yaml.journal")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	_, err = finalize.OpenJournal(jp)
	checkInUse(t, err, jp, os.Getpid(), host)

	// The holder reads its journal through it (finalize --undo does); a
	// reader that is not the holder is refused, in this process too.
	if err := j.Record(entry("", cmTarget, "1", "v", "pending")); err != nil {
		t.Fatal(err)
	}
	if entries, err := j.Entries(); err != nil || len(entries) != 1 {
		t.Fatalf("Entries by the holder: %d entries, %v", len(entries), err)
	}
	_, err = finalize.ReadJournal(jp)
	checkInUse(t, err, jp, os.Getpid(), host)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jp + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left after Close: %v", err)
	}
	if err := j.Record(entry("", cmTarget, "1", "v", "finalized")); err == nil {
		t.Errorf("Record after Close succeeded")
	}
	if _, err := j.Entries(); err == nil {
		t.Errorf("Entries after Close succeeded")
	}
	if entries, err := finalize.ReadJournal(jp); err != nil || len(entries) != 1 {
		t.Fatalf("ReadJournal after Close: %d entries, %v", len(entries), err)
	}
	j2, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	j2.Close()
}

func checkInUse(t *testing.T, err error, jp string, pid int, host string) {
	t.Helper()
	if err == nil {
		t.Fatal("second opener got the journal")
	}
	if !errors.Is(err, finalize.ErrJournalInUse) {
		t.Errorf("error does not wrap ErrJournalInUse: %v", err)
	}
	checkHolder(t, err.Error(), jp, pid, host)
}

// checkHolder asserts msg names the journal, its holder and the way out.
func checkHolder(t *testing.T, msg, jp string, pid int, host string) {
	t.Helper()
	for _, want := range []string{"journal " + jp + " is in use by adopt finalize", fmtpkg.Sprintf("(pid %d on host %s, since 20", pid, host), "remove " + jp + ".lock"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
}

func child(t *testing.T, mode, jp string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+mode, lockChildPath+"="+jp)
	return cmd
}

// TestJournalLockOtherProcess: another process is refused while this one
// holds the journal, for writing and for reading, and gets it after Close;
// a holder that dies (SIGKILL) releases it with its death.
func TestJournalLockOtherProcess(t *testing.T) {
	jp := filepath.Join(t.TempDir(), "plan.yaml.journal")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	out, err := child(t, "try", jp).Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child while held: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "open: ") || !strings.HasSuffix(lines[0], " true") ||
		!strings.HasPrefix(lines[1], "read: ") || !strings.HasSuffix(lines[1], " true") {
		t.Fatalf("child while held said:\n%s", out)
	}
	checkHolder(t, lines[0], jp, os.Getpid(), host)
	checkHolder(t, lines[1], jp, os.Getpid(), host)
	j.Close()
	if out, err := child(t, "try", jp).Output(); err != nil || strings.TrimSpace(string(out)) != "opened" {
		t.Fatalf("child after Close: %v\n%s", err, out)
	}

	// A holder killed with SIGKILL: its lock dies with it.
	hold := child(t, "hold", jp)
	stdout, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Process.Kill(); hold.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	_, err = finalize.OpenJournal(jp)
	checkInUse(t, err, jp, hold.Process.Pid, host)
	if err := hold.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	hold.Wait()
	j, err = finalize.OpenJournal(jp)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	j.Close()
}

func writeJournal(t *testing.T, lines ...string) string {
	t.Helper()
	jp := filepath.Join(t.TempDir(), "plan.yaml.journal")
	if err := os.WriteFile(jp, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return jp
}

func line(t *testing.T, e finalize.Entry) string {
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestReadJournalRefusesABadLine: a line that is not an entry, anywhere but
// a torn end, fails the whole read with its file:line; no entries come
// back, so no caller can act on part of the journal.
func TestReadJournalRefusesABadLine(t *testing.T) {
	p := line(t, entry("a", cmTarget, "1", "v", "pending"))
	f := line(t, entry("a", cmTarget, "1", "v", "finalized"))
	for _, tc := range []struct {
		name  string
		lines []string
		at    int
		why   string
	}{
		{"garbage in the middle", []string{p, "not json\n", f}, 2, "invalid character"},
		{"torn line in the middle", []string{p, p[:40] + "\n", f}, 2, "unexpected end of JSON input"},
		{"complete last line that is not an entry", []string{p, f, "{}\n"}, 3, "not a journal entry"},
		{"unterminated last line that is not an entry", []string{p, f, "hello"}, 3, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jp := writeJournal(t, tc.lines...)
			entries, err := finalize.ReadJournal(jp)
			var je *finalize.JournalError
			if !errors.As(err, &je) || je.Line != tc.at || je.Path != jp {
				t.Fatalf("err = %v, want a *JournalError for line %d", err, tc.at)
			}
			if entries != nil {
				t.Errorf("entries returned with the error: %d", len(entries))
			}
			if msg := err.Error(); !strings.Contains(msg, fmtpkg.Sprintf("%s:%d", jp, tc.at)) || !strings.Contains(msg, tc.why) {
				t.Errorf("error %q does not say %s:%d and %q", msg, jp, tc.at, tc.why)
			}
			// Nor is such a journal appended to: the next line would join it.
			if tc.at == len(tc.lines) && !strings.HasSuffix(tc.lines[len(tc.lines)-1], "\n") {
				if _, err := finalize.OpenJournal(jp); err == nil || !strings.Contains(err.Error(), "right file") {
					t.Errorf("OpenJournal on a journal ending in a non-entry: %v", err)
				}
			}
		})
	}
}

// TestReadJournalToleratesATornLastLine: a process killed while writing its
// last line leaves it without a newline; that line's patch was never sent
// (or an earlier whole line accounts for it), so it is skipped. The next
// OpenJournal cuts it off, so the next entry starts a line of its own; a
// whole last entry without its newline is kept and given one.
func TestReadJournalToleratesATornLastLine(t *testing.T) {
	p := line(t, entry("a", cmTarget, "1", "v", "pending"))
	f := line(t, entry("a", cmTarget, "1", "v", "finalized"))
	for _, tc := range []struct {
		name string
		tail string
		want int // entries read before the next Record
	}{
		{"torn entry", p[:len(p)/2], 2},
		{"torn in its first bytes", p[:3], 2},
		{"whole entry without its newline", strings.TrimSuffix(p, "\n"), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jp := writeJournal(t, p, f, tc.tail)
			entries, err := finalize.ReadJournal(jp)
			if err != nil || len(entries) != tc.want {
				t.Fatalf("ReadJournal: %d entries, %v; want %d and no error", len(entries), err, tc.want)
			}
			j, err := finalize.OpenJournal(jp)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.Record(entry("b", named("next"), "2", "w", "pending")); err != nil {
				t.Fatal(err)
			}
			j.Close()
			entries, err = finalize.ReadJournal(jp)
			if err != nil || len(entries) != tc.want+1 || entries[tc.want].Target.Name != "next" {
				t.Fatalf("after the next Record: %d entries, %v", len(entries), err)
			}
			b, _ := os.ReadFile(jp)
			if !strings.HasSuffix(string(b), "\n") || strings.Count(string(b), "\n") != tc.want+1 {
				t.Errorf("journal is not whole lines:\n%s", b)
			}
		})
	}
}

// TestReadJournalMissing says which file.
func TestReadJournalMissing(t *testing.T) {
	jp := filepath.Join(t.TempDir(), "none.journal")
	if _, err := finalize.ReadJournal(jp); err == nil || !strings.Contains(err.Error(), jp) {
		t.Fatalf("ReadJournal of a missing file: %v", err)
	}
}
