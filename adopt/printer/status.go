package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/status"
)

// StatusFormats lists the -o values Status accepts.
var StatusFormats = []string{"table", "json", "yaml", "markdown"}

// Status writes the status report in format f.
func Status(w io.Writer, r *status.Report, f string) error {
	return buffered(w, func(w io.Writer) error { return statusReport(w, r, f) })
}

func statusReport(w io.Writer, r *status.Report, f string) error {
	switch f {
	case "", "table":
		return statusTable(w, r)
	case "json":
		return writeJSON(w, r)
	case "yaml":
		return writeYAML(w, r)
	case "markdown", "md":
		return statusMarkdown(w, r)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", f, strings.Join(StatusFormats, ", "))
}

// StatusLine is the headline: coverage, objects per stage, stuck.
func StatusLine(r *status.Report) string {
	var parts []string
	for _, s := range status.Stages {
		parts = append(parts, fmt.Sprintf("%s %d", s.Title(), r.Counts.Of(s)))
	}
	return fmt.Sprintf("%d objects: %s; %d stuck", r.Counts.Total(), strings.Join(parts, ", "), r.Stuck)
}

// CoverageLine says how much of the estate Argo CD tracks.
func CoverageLine(c *status.Coverage) string {
	if c == nil {
		return "coverage not counted"
	}
	return fmt.Sprintf("%.1f%% of user objects tracked by Argo CD (%d of %d; %s)", c.Percent, c.Tracked, c.Objects, c.Scope)
}

// ClusterLine is one fleet cluster's objects per stage.
func ClusterLine(c status.ClusterCounts) string {
	var parts []string
	for _, s := range status.Stages {
		parts = append(parts, fmt.Sprintf("%s %d", s.Title(), c.Counts.Of(s)))
	}
	return fmt.Sprintf("cluster %s: %d objects: %s; %d stuck", c.Cluster, c.Counts.Total(), strings.Join(parts, ", "), c.Stuck)
}

// clusterCol is the cluster column's header and cell, for a fleet plan's
// report only.
func clusterCol(r *status.Report, cluster string) string {
	switch {
	case len(r.Clusters) == 0:
		return ""
	case cluster == "":
		return "-\t"
	}
	return cluster + "\t"
}

func statusTable(w io.Writer, r *status.Report) error {
	fmt.Fprintf(w, "Coverage: %s\n", CoverageLine(r.Coverage))
	fmt.Fprintf(w, "Stages: %s\n", StatusLine(r))
	for _, c := range r.Clusters {
		fmt.Fprintln(w, "  "+ClusterLine(c))
	}
	fmt.Fprintln(w)
	head := clusterCol(r, "CLUSTER")
	tw := newTabwriter(w)
	fmt.Fprintln(tw, head+"OBJECT\tAPPLICATION\tSTAGE\tANNOTATIONS\tWHERE IT STANDS\tNEXT")
	for _, o := range r.Objects {
		stage := o.Stage.Title()
		if o.Stuck {
			stage += " (stuck)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s B (%.1f%%)\t%s\t%s\n", clusterCol(r, o.Cluster), o.Ref, o.App, stage, Bytes(o.Budget.AnnotationBytes), o.Budget.PercentOfCap, dash(o.Reason), dash(o.Next))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Applications) > 0 {
		fmt.Fprintln(w)
		tw = newTabwriter(w)
		fmt.Fprintln(tw, head+"APPLICATION\tPLAN\tSTAGE\tOBJECTS\tPULL REQUEST\tSYNC\tHEALTH")
		for _, a := range r.Applications {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t%s\t%s\t%s\n", clusterCol(r, a.Cluster), a.Name, a.Plan, a.Stage.Title(), a.Objects, prText(a), dash(a.Sync), dash(a.Health))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if c := r.Coverage; c != nil && len(c.Namespaces) > 0 {
		fmt.Fprintln(w)
		tw = newTabwriter(w)
		fmt.Fprintln(tw, head+"NAMESPACE\tTRACKED\tOBJECTS\tCOVERAGE")
		for _, n := range c.Namespaces {
			fmt.Fprintf(tw, "%s%s\t%d\t%d\t%.1f%%\n", clusterCol(r, n.Cluster), nsName(n.Namespace), n.Tracked, n.Objects, n.Percent)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	return nil
}

func statusMarkdown(w io.Writer, r *status.Report) error {
	fmt.Fprintf(w, "# Adoption status %s\n\n", r.Time.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- Coverage: %s\n- %s\n", md(CoverageLine(r.Coverage)), md(StatusLine(r)))
	for _, c := range r.Clusters {
		fmt.Fprintf(w, "  - %s\n", md(ClusterLine(c)))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- Note: %s\n", md(n))
	}
	if stuck := r.StuckObjects(); len(stuck) > 0 {
		fmt.Fprintln(w, "\n## Stuck\n\n| Object | Stage | Why | Next |\n|---|---|---|---|")
		for _, o := range stuck {
			fmt.Fprintf(w, "| `%s` | %s | %s | `%s` |\n", o.Ref, o.Stage.Title(), md(o.Reason), o.Next)
		}
	}
	col, sep := "", ""
	cell := func(string) string { return "" }
	if len(r.Clusters) > 0 {
		col, sep = " Cluster |", "---|"
		cell = func(c string) string { return " " + md(c) + " |" }
	}
	fmt.Fprintln(w, "\n## Applications\n\n|"+col+" Application | Stage | Objects | Pull request | Sync | Health |\n|"+sep+"---|---|---:|---|---|---|")
	for _, a := range r.Applications {
		pr := prText(a)
		if a.PR != nil {
			pr = fmt.Sprintf("[#%d](%s) %s", a.PR.Number, a.PR.URL, a.PR.State)
		}
		fmt.Fprintf(w, "|%s `%s` | %s | %d | %s | %s | %s |\n", cell(a.Cluster), a.Name, a.Stage.Title(), a.Objects, pr, dash(a.Sync), dash(a.Health))
	}
	fmt.Fprintln(w, "\n## Objects\n\n|"+col+" Object | Stage | Annotations | % cap | Where it stands |\n|"+sep+"---|---|---:|---:|---|")
	for _, o := range r.Objects {
		fmt.Fprintf(w, "|%s `%s` | %s | %s B | %.1f%% | %s |\n", cell(o.Cluster), o.Ref, o.Stage.Title(), Bytes(o.Budget.AnnotationBytes), o.Budget.PercentOfCap, md(o.Reason))
	}
	if c := r.Coverage; c != nil && len(c.Namespaces) > 0 {
		fmt.Fprintln(w, "\n## Coverage per namespace\n\n|"+col+" Namespace | Tracked | Objects | Coverage |\n|"+sep+"---|---:|---:|---:|")
		for _, n := range c.Namespaces {
			fmt.Fprintf(w, "|%s `%s` | %d | %d | %.1f%% |\n", cell(n.Cluster), nsName(n.Namespace), n.Tracked, n.Objects, n.Percent)
		}
	}
	return nil
}

func prText(a status.App) string {
	if a.PR == nil {
		if a.Branch == "" {
			return "-"
		}
		return "none"
	}
	return fmt.Sprintf("#%d %s %s", a.PR.Number, a.PR.State, a.PR.URL)
}

func nsName(ns string) string {
	if ns == "" {
		return "(cluster-scoped)"
	}
	return ns
}
