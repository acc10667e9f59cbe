package printer

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/adopt-dev/adopt/adopt/plan"
)

const (
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// Table writes the plan grouped by proposed Application, then the summary
// line, the findings and what was not scanned.
func Table(w io.Writer, p *plan.Plan, o Options) error {
	fmt.Fprintf(w, "Plan:     %s\n", p.ID)
	fmt.Fprintf(w, "Cluster:  %s%s\n", p.Cluster.Server, ctxSuffix(p.Cluster.Context))
	fmt.Fprintf(w, "Tracking: %s (%s)\n", p.Tracking.Method, p.Tracking.Reason)
	fmt.Fprintf(w, "Argo CD:  %s\n", p.ArgoCD.Note)
	if p.Repo != nil {
		fmt.Fprintf(w, "Repo:     %s @ %s (%d manifests)\n", p.Repo.Source, revision(p.Repo.Revision), p.Repo.Manifests)
	} else {
		fmt.Fprintln(w, "Repo:     none (give --repo to match objects with Git)")
	}
	byRef := map[string]*plan.Object{}
	for i := range p.Objects {
		byRef[p.Objects[i].Ref()] = &p.Objects[i]
	}
	for _, a := range p.Applications {
		fmt.Fprintf(w, "\nApplication %s (%s)\n", a.Name, source(a))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		previewed := p.Summary.Preview != nil
		header := "  NAMESPACE\tKIND\tNAME\tPROVENANCE\tANNOTATIONS\t% CAP\tGIT\tRISK"
		if previewed {
			header += "\tFIRST SYNC"
		}
		fmt.Fprintln(tw, header)
		for _, ref := range a.Objects {
			ob := byRef[ref]
			if ob == nil {
				continue
			}
			kind := ob.Kind
			if ob.Group != "" {
				kind += "." + ob.Group
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s B\t%.1f%%\t%s\t%s",
				dash(ob.Namespace), kind, ob.Name, ob.Provenance, Bytes(ob.Budget.AnnotationBytes),
				ob.Budget.PercentOfCap, gitColumn(ob), risk(ob, o.Color))
			if previewed {
				fmt.Fprintf(tw, "\t%s", previewColumn(ob))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, ref := range a.Objects {
			ob := byRef[ref]
			if ob == nil {
				continue
			}
			for _, f := range ob.Findings {
				if f.Severity == plan.Info && !o.ShowSkipped {
					continue
				}
				fmt.Fprintf(w, "  ! %s %s: %s\n", sev(f.Severity, o.Color), ob.Ref(), f.Message)
			}
		}
	}
	if p.Summary.Preview != nil {
		previewDetails(w, p)
	}
	fmt.Fprintf(w, "\n%s\n", SummaryLine(p))
	for _, f := range p.Findings {
		fmt.Fprintf(w, "  %s: %s\n", f.Severity, f.Message)
	}
	if len(p.NotScanned) > 0 {
		fmt.Fprintln(w, "\nNot scanned:")
		for _, n := range p.NotScanned {
			fmt.Fprintf(w, "  %s: %s\n", n.Type, n.Reason)
		}
	}
	if o.ShowSkipped && len(p.Skipped) > 0 {
		fmt.Fprintln(w, "\nSkipped:")
		for _, sk := range p.Skipped {
			fmt.Fprintf(w, "  %s [%s]: %s\n", skippedName(sk), sk.Class, sk.Reason)
		}
	}
	return nil
}

// SummaryLine is "N objects, M at risk, K not in Git, S skipped, U not
// scanned", with the tracked count.
func SummaryLine(p *plan.Plan) string {
	s := p.Summary
	return fmt.Sprintf("%d objects, %d at risk (%d critical, %d warning), %d not in Git, %d skipped, %d not scanned; %d tracked by Argo CD, %d with stale tracking",
		s.Objects, s.AtRisk, s.Critical, s.Warning, s.NotInGit, s.Skipped, s.NotScanned, s.Tracked, s.StaleTracking)
}

func ctxSuffix(c string) string {
	if c == "" {
		return ""
	}
	return " (context " + c + ")"
}

func revision(r string) string {
	if r == "" {
		return "working directory"
	}
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

func source(a plan.Application) string {
	switch a.Source {
	case "helm":
		s := "Helm release " + a.Helm.ReleaseName
		if a.Helm.Chart != "" {
			s += ", chart " + a.Helm.Chart + " " + a.Helm.Version
		}
		return s
	case "git":
		s := "Git " + a.SourcePath
		if a.Kustomize {
			s += ", kustomization"
		}
		if len(a.Include) > 0 {
			s += ", include " + strings.Join(a.Include, ",")
		}
		return s
	}
	return "export to " + a.SourcePath
}

func gitColumn(ob *plan.Object) string {
	switch {
	case len(ob.Ambiguous) > 0:
		return fmt.Sprintf("ambiguous (%d)", len(ob.Ambiguous))
	case ob.Git == nil:
		return "not in Git"
	case ob.Drift != nil && !ob.Drift.Identical():
		return fmt.Sprintf("%s:%d, %s B behind", ob.Git.Path, ob.Git.Line, Bytes(ob.Drift.BytesBehind))
	case ob.Drift != nil:
		return fmt.Sprintf("%s:%d, identical", ob.Git.Path, ob.Git.Line)
	}
	return fmt.Sprintf("%s:%d", ob.Git.Path, ob.Git.Line)
}

func risk(ob *plan.Object, color bool) string {
	if ob.Risk == "" || ob.Risk == plan.Info {
		return "-"
	}
	return sev(ob.Risk, color)
}

func sev(s plan.Severity, color bool) string {
	if !color {
		return string(s)
	}
	switch s {
	case plan.Critical:
		return red + string(s) + reset
	case plan.Warning:
		return yellow + string(s) + reset
	}
	return string(s)
}

func skippedName(sk plan.Skipped) string {
	what := sk.Kind
	if sk.Group != "" {
		what += "." + sk.Group
	}
	if sk.Name != "" {
		return what + " " + joinNS(sk.Namespace, sk.Name)
	}
	return what + " (all)"
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
