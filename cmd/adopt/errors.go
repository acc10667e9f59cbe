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
	ExitOK       = 0 // success
	ExitError    = 1 // the work failed: cluster, Git or file error
	ExitUsage    = 2 // bad flags or bad input
	ExitFindings = 3 // findings at or above --fail-on
	ExitPartial  = 4 // some objects could not be finalized
)

const exitCodesHelp = `Exit codes:
  0  success
  1  the work failed (cluster, Git or file error)
  2  bad flags or bad input
  3  findings at or above --fail-on
  4  some objects could not be finalized`

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
