package printer

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/adopt-dev/adopt/adopt/reconcile"
)

// ReconcileFormats are the output formats of adopt reconcile.
var ReconcileFormats = []string{"table", "json", "yaml"}

// Reconcile writes one reconcile run's report in format f.
func Reconcile(w io.Writer, rep *reconcile.Report, f string) error {
	return buffered(w, func(w io.Writer) error {
		return tableJSONYAML(w, rep, f, ReconcileFormats, func(w io.Writer) error { return reconcileTable(w, rep) })
	})
}

// reconcileTable writes the report for people: nothing to do in a line,
// else one row per group with its outcome and why.
func reconcileTable(w io.Writer, rep *reconcile.Report) error {
	if rep.NothingToDo {
		fmt.Fprintf(w, "reconcile of cluster %s: nothing to do: no untracked object to propose and no merged group waiting to be finalized\n", rep.Cluster)
		secretsNote(w, rep)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "reconcile of cluster %s: %d untracked object(s) in %d group(s), %d pull request(s) open\n", rep.Cluster, rep.Untracked, len(rep.Groups), rep.OpenPRs)
	fmt.Fprintln(tw, "GROUP\tBRANCH\tOBJECTS\tOUTCOME\tWHY")
	for _, g := range rep.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", g.App, g.Branch, g.Objects, g.Outcome, strings.ReplaceAll(g.Why, "\t", " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	secretsNote(w, rep)
	return nil
}

// secretsNote says why Secrets are not adopted, when the report says so.
func secretsNote(w io.Writer, rep *reconcile.Report) {
	if rep.SecretsNote != "" {
		fmt.Fprintln(w, rep.SecretsNote)
	}
}
