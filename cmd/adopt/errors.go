package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/discover"
)

// Exit codes. They are documented in the README and in `adopt --help`.
const (
	ExitOK       = 0 // success (reconcile: also a run that found the Lease held and did nothing)
	ExitError    = 1 // the work failed: cluster, Git or file error
	ExitUsage    = 2 // bad flags or bad input
	ExitFindings = 3 // findings at or above --fail-on
	ExitPartial  = 4 // partly done: objects not finalized, groups failed or types not read
)

const exitCodesHelp = `Exit codes (every command):
  0  success; reconcile: also a run that found the Lease held and did nothing
  1  the work failed (cluster, Git or file error)
  2  bad flags or bad input
  3  findings at or above --fail-on
  4  partly done: some objects could not be finalized, or some reconcile
     groups failed or types could not be read; a re-run carries on`

// exitError carries an exit code with the error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// report prints err as one line and returns its exit code.
func report(w io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	msg := strings.TrimSpace(err.Error())
	msg = strings.ReplaceAll(msg, "\n", " ")
	fmt.Fprintf(w, "error: %s\n", msg)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, discover.ErrNoNamespace):
		return ExitUsage // -n names a namespace the cluster does not have
	}
	return ExitError
}
