package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/finalize"
)

// FinalizeFormats lists the -o values Finalize accepts.
var FinalizeFormats = []string{"table", "json", "yaml"}

// Finalize writes finalize's (or undo's) report in format f.
func Finalize(w io.Writer, rep *finalize.Report, f string) error {
	return buffered(w, func(w io.Writer) error { return finalizeReport(w, rep, f) })
}

func finalizeReport(w io.Writer, rep *finalize.Report, f string) error {
	return tableJSONYAML(w, rep, f, FinalizeFormats, func(w io.Writer) error { return finalizeTable(w, rep) })
}

// finalizeTable writes the report for people: Applications, one row per
// object, reasons, patches in a dry run, and the totals.
func finalizeTable(w io.Writer, rep *finalize.Report) error {
	if rep.ArgoCD != nil {
		fmt.Fprintln(w, rep.ArgoCD.String())
	}
	for _, a := range rep.Apps {
		state := "ready"
		if !a.Ready {
			state = "not ready: " + a.Waiting
		}
		fmt.Fprintf(w, "Application %s: sync %s, health %s, %s\n", a.Name, dash(a.Sync), dash(a.Health), state)
		if a.SyncStarted {
			fmt.Fprintf(w, "  sync started by adopt (%s, no prune)\n", strings.Join(a.SyncOptions, ", "))
		}
		if s := a.Settle; s != nil && s.Synced {
			fmt.Fprintf(w, "  stayed Synced over the %s settle window after cleanup\n", s.Window)
		}
		for _, p := range a.Problems {
			fmt.Fprintln(w, "  "+p)
		}
		for _, n := range a.Notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	if len(rep.Apps) > 0 {
		fmt.Fprintln(w)
	}
	tw := newTabwriter(w)
	fmt.Fprintln(tw, "OBJECT\tAPPLICATION\tSTATUS\tANNOTATIONS BEFORE -> AFTER\t% CAP\tMANAGERS REMOVED")
	for _, r := range rep.Objects {
		bytes, pct := "-", "-"
		if r.Status != finalize.StatusSkipped && !(r.Status == finalize.StatusFailed && r.Before.AnnotationBytes == 0) {
			bytes = fmt.Sprintf("%s B -> %s B", Bytes(r.Before.AnnotationBytes), Bytes(r.After.AnnotationBytes))
			pct = fmt.Sprintf("%.1f%% -> %.1f%%", r.Before.PercentOfCap, r.After.PercentOfCap)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Object, dash(r.App), r.Status, bytes, pct, managers(r.Managers))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var reasons []string
	for _, r := range rep.Objects {
		if r.Reason != "" && r.Status != finalize.StatusAlready {
			reasons = append(reasons, fmt.Sprintf("  %s: %s", r.Status, r.Reason))
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nNot done:")
		fmt.Fprintln(w, strings.Join(reasons, "\n"))
	}
	if rep.DryRun {
		fmt.Fprintln(w, "\nPatches (dry run, nothing sent; annotation values shown as size and digest):")
		for _, r := range rep.Objects {
			if len(r.Patch) == 0 {
				continue
			}
			b, err := json.Marshal(r.Patch)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s\n    %s\n", r.Object, b)
		}
	}
	if err := helmRecordsTable(w, rep); err != nil {
		return err
	}
	t := rep.Total
	fmt.Fprintf(w, "\n%d objects: %s; annotations %s B -> %s B in total\n",
		t.Objects, rep.Counts(), Bytes(t.BytesBefore), Bytes(t.BytesAfter))
	return nil
}

// helmRecordsTable writes, for --retire-helm-records and --undo, one row
// per Helm release record (names only) and one line per release.
func helmRecordsTable(w io.Writer, rep *finalize.Report) error {
	if rep.RetireNote != "" {
		fmt.Fprintln(w, "\n"+rep.RetireNote)
	}
	if len(rep.Releases) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := newTabwriter(w)
	rows := 0
	for _, r := range rep.Releases {
		for _, rec := range r.Records {
			if rows == 0 {
				fmt.Fprintln(tw, "HELM RECORD\tRELEASE\tAPPLICATION\tSTATUS")
			}
			rows++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rec.Object, r.String(), dash(r.App), rec.Status)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Releases {
		fmt.Fprintf(w, "Helm release %s: %s\n", r.String(), releaseLine(r))
		for _, rec := range r.Records {
			if rec.Reason != "" && rec.Status != finalize.StatusAlready && !strings.Contains(r.Reason, rec.Reason) {
				fmt.Fprintf(w, "  %s: %s\n", rec.Status, rec.Reason)
			}
		}
	}
	return nil
}

// releaseLine says what happened to a release's records and what it means
// for helm.
func releaseLine(r finalize.ReleaseReport) string {
	n := len(r.Records)
	switch r.Status {
	case finalize.StatusRetired:
		return fmt.Sprintf("retired (%d records): `helm list -n %s` no longer shows it and `helm uninstall %s` finds nothing to delete; finalize --undo puts the records back", n, r.Namespace, r.Name)
	case finalize.StatusWouldRetire:
		return fmt.Sprintf("would retire %d records (dry run, nothing deleted)", n)
	case finalize.StatusRestored:
		return fmt.Sprintf("%d records restored: `helm list -n %s` shows it again", n, r.Namespace)
	case finalize.StatusWouldRestore:
		return fmt.Sprintf("would restore %d records (dry run, nothing created)", n)
	}
	if r.Reason == "" {
		return string(r.Status)
	}
	return string(r.Status) + ": " + r.Reason
}

func managers(o finalize.Ownership) string {
	var parts []string
	parts = append(parts, o.Removed...)
	for _, m := range o.Migrated {
		parts = append(parts, "migrated "+m)
	}
	for _, m := range o.Trimmed {
		parts = append(parts, "trimmed "+m)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
