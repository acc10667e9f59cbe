package finalize_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestSessionRefusesBeforeAnyChange: the journal policy of one finalize
// run, with no cobra and no cluster, since each case stops before the
// first read: a journal another finalize holds is ErrJournalInUse; one that
// cannot be created is an InputError that names it; an undo whose journal
// has a line that is not an entry is an InputError that restores nothing;
// a dry-run undo reads the journal and writes nothing to it.
func TestSessionRefusesBeforeAnyChange(t *testing.T) {
	dir := t.TempDir()
	session := func(journal string, undo, dryRun bool) *finalize.Session {
		return &finalize.Session{
			Runner:      &finalize.Runner{Plan: &plan.Plan{ID: "p"}, Finalizer: &finalize.Finalizer{}},
			JournalFile: journal, Undo: undo, DryRun: dryRun,
		}
	}
	ctx := context.Background()

	held := filepath.Join(dir, "held.journal")
	j, err := finalize.OpenJournal(held)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := session(held, false, false).Run(ctx); !errors.Is(err, finalize.ErrJournalInUse) {
		t.Errorf("a held journal: %v, want ErrJournalInUse", err)
	}

	var ie *finalize.InputError
	nowhere := filepath.Join(dir, "no-such-dir", "x.journal")
	if _, err := session(nowhere, false, false).Run(ctx); !errors.As(err, &ie) || !strings.Contains(err.Error(), nowhere) {
		t.Errorf("an unwritable journal: %v, want an InputError naming it", err)
	}

	torn := filepath.Join(dir, "bad.journal")
	if err := os.WriteFile(torn, []byte("not a journal entry\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := session(torn, true, false).Run(ctx)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "Nothing was restored") || rep != nil {
		t.Errorf("undo of a bad journal: %v (report %v), want an InputError that restores nothing", err, rep)
	}

	// A dry-run undo reads the journal and writes nothing to it.
	dry := filepath.Join(dir, "dry.journal")
	if err := os.WriteFile(dry, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := session(dry, true, true).Run(ctx); err != nil || rep == nil || !rep.DryRun || !rep.Undo {
		t.Errorf("a dry-run undo of an empty journal: %v %+v", err, rep)
	}
	if b, err := os.ReadFile(dry); err != nil || len(b) != 0 {
		t.Errorf("a dry run wrote to the journal: %q %v", b, err)
	}
}
