package finalize_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestRunFleet runs each cluster in turn, in the order of its contexts,
// with its own plan and journal; a cluster that cannot be reached, or
// whose session fails, fails alone, and each session's connections are
// closed.
func TestRunFleet(t *testing.T) {
	dir := t.TempDir()
	f := &fleet.Fleet{Index: &fleet.Index{}, Plans: map[string]*plan.Plan{}, Files: map[string]string{}}
	for _, c := range []string{"b", "c", "a"} {
		f.Plans[c] = &plan.Plan{ID: "plan-" + c}
		f.Files[c] = filepath.Join(dir, c+".yaml")
	}
	// a's journal is empty: an undo with nothing to restore. c has none.
	if err := os.WriteFile(finalize.JournalPath(f.Files["a"]), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	down := errors.New("cluster b is down")
	var events []string
	closed := map[string]bool{}
	reps := finalize.RunFleet(context.Background(), finalize.FleetRun{
		Fleet: f,
		Session: func(_ context.Context, c finalize.FleetCluster) (*finalize.Session, func(), error) {
			events = append(events, "session "+c.Name)
			if c.Plan.ID != "plan-"+c.Name || c.JournalFile != finalize.JournalPath(f.Files[c.Name]) {
				t.Errorf("cluster %s: plan %s, journal %s", c.Name, c.Plan.ID, c.JournalFile)
			}
			if c.Name == "b" {
				return nil, nil, down
			}
			r := &finalize.Runner{Plan: c.Plan, Finalizer: &finalize.Finalizer{}}
			return &finalize.Session{Runner: r, JournalFile: c.JournalFile, DryRun: true, Undo: true}, func() { closed[c.Name] = true }, nil
		},
		Started: func(name string) { events = append(events, "started "+name) },
		Done:    func(r finalize.ClusterReport) { events = append(events, "done "+r.Cluster) },
	})
	want := []string{"started a", "session a", "done a", "started b", "session b", "done b", "started c", "session c", "done c"}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if len(reps) != 3 {
		t.Fatalf("%d reports, want 3", len(reps))
	}
	if a := reps[0]; a.Cluster != "a" || a.Err != nil || a.Report == nil || !a.Report.Undo {
		t.Errorf("a: %+v", a)
	}
	if b := reps[1]; b.Cluster != "b" || !errors.Is(b.Err, down) {
		t.Errorf("b: %+v", b)
	}
	var ie *finalize.InputError
	if c := reps[2]; c.Cluster != "c" || !errors.As(c.Err, &ie) {
		t.Errorf("c: %+v, want the missing journal refused", c)
	}
	if !closed["a"] || !closed["c"] {
		t.Errorf("closed %v, want a and c", closed)
	}
}
