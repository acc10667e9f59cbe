package printer

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
)

const (
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// Table writes the plan as aligned columns, then a summary line.
func Table(w io.Writer, p *plan.Plan, o Options) error {
	fmt.Fprintf(w, "Cluster:  %s\n", p.Cluster.Server)
	fmt.Fprintf(w, "Tracking: %s (%s)\n\n", p.Tracking.Method, p.Tracking.Reason)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tPROVENANCE\tDATA\tANNOTATIONS\t% CAP\tHEADROOM\tLAST-APPLIED\tRISK")
	for _, ob := range p.Objects {
		kind := ob.Kind
		if ob.Group != "" {
			kind += "." + ob.Group
		}
		la := "-"
		if ob.Budget.HasLastApplied {
			la = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s B\t%s B\t%.1f%%\t%s B\t%s\t%s\n",
			dash(ob.Namespace), kind, ob.Name, ob.Provenance, Bytes(ob.DataBytes),
			Bytes(ob.Budget.AnnotationBytes), ob.Budget.PercentOfCap, Bytes(ob.Budget.Headroom), la, level(ob.Level, o.Color))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := p.Summary
	fmt.Fprintf(w, "\n%d objects untracked, %d at risk (%d critical, %d warning), %d tracked by Argo CD, %d skipped, %d types not scanned\n",
		s.Objects, s.AtRisk, s.Critical, s.Warning, s.Tracked, s.Skipped, s.NotScanned)
	if len(p.NotScanned) > 0 {
		fmt.Fprintln(w, "\nNot scanned:")
		for _, n := range p.NotScanned {
			fmt.Fprintf(w, "  %s: %s\n", n.Type, n.Reason)
		}
	}
	if o.ShowSkipped && len(p.Skipped) > 0 {
		fmt.Fprintln(w, "\nSkipped:")
		for _, sk := range p.Skipped {
			what := sk.Kind
			if sk.Group != "" {
				what += "." + sk.Group
			}
			if sk.Name != "" {
				what += " " + joinNS(sk.Namespace, sk.Name)
			} else {
				what += " (all)"
			}
			fmt.Fprintf(w, "  %s: %s\n", what, sk.Reason)
		}
	}
	return nil
}

func level(l budget.Level, color bool) string {
	if !color {
		return string(l)
	}
	switch l {
	case budget.LevelCritical:
		return red + string(l) + reset
	case budget.LevelWarning:
		return yellow + string(l) + reset
	}
	return string(l)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinNS(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
