// Package printer renders plans for people and machines: a table grouped by
// proposed Application, JSON, YAML, Markdown, SARIF 2.1.0 (code scanning)
// and JUnit XML (CI test reports), one file per format. It writes only to the io.Writer it is
// given and never decides anything about the objects it prints.
package printer

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// Formats lists the -o values Print accepts.
var Formats = []string{"table", "json", "yaml", "markdown", "sarif", "junit"}

// Options tune the human output.
type Options struct {
	// Color enables ANSI colour for risk levels (off under NO_COLOR or when
	// stdout is not a terminal).
	Color bool
	// ShowSkipped lists skipped objects and types with their reasons.
	ShowSkipped bool
	// Version is adopt's version, for the tool sections of SARIF and JUnit.
	Version string
	// FailOn is the severity from which a JUnit test case fails (critical
	// when empty), as --fail-on.
	FailOn plan.Severity
}

// Print writes p in format f.
func Print(w io.Writer, p *plan.Plan, f string, o Options) error {
	return buffered(w, func(w io.Writer) error { return printPlan(w, p, f, o) })
}

// buffered runs write on a 64 KiB buffer over w, then flushes it: a
// report of a large plan is tens of thousands of short writes, a system
// call each unbuffered (the table was most of the time of a
// 20,000-object plan after its lists). Every report goes through it.
func buffered(w io.Writer, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	err := write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func printPlan(w io.Writer, p *plan.Plan, f string, o Options) error {
	switch f {
	case "", "table":
		return Table(w, p, o)
	case "json":
		return JSON(w, p)
	case "yaml":
		return YAML(w, p)
	case "markdown", "md":
		return Markdown(w, p)
	case "sarif":
		return SARIF(w, p, o)
	case "junit":
		return JUnit(w, p, o)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", f, strings.Join(Formats, ", "))
}

// Bytes formats n with thousands separators: 262,144 B.
func Bytes(n int) string { return string(appendBytes(nil, n)) }

// appendBytes appends Bytes(n) to b.
func appendBytes(b []byte, n int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	if d[0] == '-' {
		b, d = append(b, '-'), d[1:]
	}
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, c)
	}
	return b
}
