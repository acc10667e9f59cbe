package finalize

import (
	"context"
	"errors"
	"fmt"
)

// Session is one finalize run over one plan: it opens the plan's journal
// (unless DryRun), then either restores what the journal removed (Undo) or
// waits for each Application and finalizes its objects (Runner.Run). It
// prints nothing; the caller prints the report.
type Session struct {
	// Runner does the work; its Finalizer gets the journal.
	Runner *Runner
	// JournalFile is the plan's journal (JournalPath).
	JournalFile string
	DryRun      bool
	Undo        bool
	// ArgoCD, when set, says how the Runner talks to Argo CD and which
	// version it is; the report carries it.
	ArgoCD *ArgoCD
	// Explain, when set, words an error of Argo CD's or the cluster's for
	// where it happened (the caller knows the connection); InputError and
	// ErrJournalInUse are returned as they are.
	Explain func(error) error
	// Access, when set, is asked before an undo that restores Helm release
	// records whether what that needs (RestoreNeeds) is allowed; its error
	// stops the undo before any change.
	Access func(context.Context, []Access) error
}

// InputError is a session refused for its input (a journal that cannot be
// opened for writing, or read for --undo), as opposed to a cluster or Argo
// CD failure. Nothing was changed.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Run runs the session and returns its report. ErrJournalInUse (another
// finalize holds the journal) and InputError stop it before any change; any
// other error is Argo CD's or the cluster's, with the report so far. Once
// the cleanup is done and the journal closed, each ready Application is
// watched for the settle window (Runner.SettleAll).
func (s *Session) Run(ctx context.Context) (*Report, error) {
	rep, err := s.run(ctx)
	if err != nil || s.Undo || s.DryRun {
		return rep, err
	}
	return rep, s.explain(s.Runner.SettleAll(ctx, rep))
}

func (s *Session) run(ctx context.Context) (*Report, error) {
	if !s.DryRun {
		j, err := OpenJournal(s.JournalFile)
		switch {
		case errors.Is(err, ErrJournalInUse):
			return nil, err
		case err != nil && !s.Undo:
			return nil, &InputError{fmt.Errorf("%v. Pick a writable --journal", err)}
		}
		if j != nil {
			defer j.Close()
			s.Runner.Finalizer.Journal = j // undo records what it restored, so a second undo is a no-op
			if s.Runner.Retirer != nil {
				s.Runner.Retirer.Journal = j
			}
		}
	}
	rep := &Report{DryRun: s.DryRun, Undo: s.Undo, ArgoCD: s.ArgoCD}
	if !s.Undo {
		if err := s.Runner.Run(ctx, rep); err != nil {
			return rep, s.explain(err)
		}
		if s.Runner.Retire {
			s.Runner.RetireAll(ctx, rep)
		}
		return rep, nil
	}
	read := func() ([]Entry, error) { return ReadJournal(s.JournalFile) }
	if j := s.Runner.Finalizer.Journal; j != nil {
		read = j.Entries // this run holds it
	}
	entries, err := read()
	if errors.Is(err, ErrJournalInUse) {
		return nil, err
	}
	if err != nil {
		return nil, &InputError{fmt.Errorf("%v. Nothing was restored: an unreadable journal could hide a removed annotation; repair or restore the file, then re-run --undo", err)}
	}
	if records := s.Runner.RetiredRecords(entries); len(records) > 0 && s.Access != nil {
		if err := s.Access(ctx, RestoreNeeds(records)); err != nil {
			return nil, err
		}
	}
	s.Runner.Undo(ctx, entries, rep)
	return rep, nil
}

// explain is Explain on an error of Argo CD's or the cluster's.
func (s *Session) explain(err error) error {
	var ie *InputError
	if err == nil || s.Explain == nil || errors.As(err, &ie) || errors.Is(err, ErrJournalInUse) {
		return err
	}
	return s.Explain(err)
}
