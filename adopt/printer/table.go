package printer

import (
	"fmt"
	"io"
	"strconv"
	"strings"

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
		if s := p.Settings; s.RepoURL != "" {
			fmt.Fprintf(w, "Repo URL: %s (from %s)\n", s.RepoURL, s.RepoURLFrom)
		}
	} else {
		fmt.Fprintln(w, "Repo:     none (give --repo to match objects with Git)")
	}
	apps := appObjects(p)
	previewed := p.Summary.Preview != nil
	var c columns
	for i, a := range p.Applications {
		fmt.Fprintf(w, "\nApplication %s (%s)\n", a.Name, source(a))
		if err := objectRows(w, &c, apps[i], previewed, o); err != nil {
			return err
		}
		if line := a.IgnoreSummary(); line != "" {
			fmt.Fprintf(w, "  %s:\n", line)
			for _, d := range a.IgnoreDifferences {
				fmt.Fprintf(w, "    %s: %s [%s]\n", d, d.Reason, d.Source)
			}
		}
	}
	if loose := unassigned(p); len(loose) > 0 {
		fmt.Fprintf(w, "\nNo Application (%d: left out until its findings are fixed)\n", len(loose))
		if err := objectRows(w, &c, loose, previewed, o); err != nil {
			return err
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
		if a.Helm.Path != "" {
			s += " from Git " + a.Helm.Path
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
	case "existing":
		s := "existing Application"
		if a.Existing != nil && a.Existing.Namespace != "" {
			s += " in " + a.Existing.Namespace
		}
		if a.SourcePath != "" {
			s += ", Git " + a.SourcePath
		}
		return s + ": apply writes nothing"
	}
	return "export to " + a.SourcePath
}

// objectRows writes the objects' table and their findings.
func objectRows(w io.Writer, c *columns, obs []*plan.Object, previewed bool, o Options) error {
	header := []string{"  NAMESPACE", "KIND", "NAME", "PROVENANCE", "ANNOTATIONS", "% CAP", "GIT", "RISK", "FIRST SYNC"}
	if !previewed {
		header = header[:len(header)-1]
	}
	c.reset(len(header))
	for _, h := range header {
		c.cell(h)
	}
	for _, ob := range obs {
		c.cell("  ", dash(ob.Namespace))
		if ob.Group != "" {
			c.cell(ob.Kind, ".", ob.Group)
		} else {
			c.cell(ob.Kind)
		}
		c.cell(ob.Name)
		c.cell(ob.Provenance)
		start := c.open()
		c.text = append(appendBytes(c.text, ob.Budget.AnnotationBytes), " B"...)
		c.close(start)
		start = c.open()
		c.text = append(strconv.AppendFloat(c.text, ob.Budget.PercentOfCap, 'f', 1, 64), '%')
		c.close(start)
		c.cell(gitColumn(ob))
		c.cell(risk(ob, o.Color))
		if previewed {
			c.cell(previewColumn(ob))
		}
	}
	if err := c.write(w); err != nil {
		return err
	}
	for _, ob := range obs {
		for _, f := range ob.Findings {
			if f.Severity == plan.Info && !o.ShowSkipped {
				continue
			}
			fmt.Fprintf(w, "  ! %s %s: %s\n", sev(f.Severity, o.Color), ob.Ref.String(), f.Message)
		}
	}
	return nil
}

// unassigned are the objects no Application adopts (shared by two
// existing Applications, or ambiguous in Git).
func unassigned(p *plan.Plan) []*plan.Object {
	var out []*plan.Object
	for i := range p.Objects {
		if p.Objects[i].App == "" {
			out = append(out, &p.Objects[i])
		}
	}
	return out
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

// appObjects is each Application's objects, in the order it lists them.
// An object names its Application, so the objects are gathered by that
// name; only an Application whose list is not what was gathered (a plan
// edited by hand) is looked up by reference, and an object it names that
// the plan does not hold is left out.
func appObjects(p *plan.Plan) [][]*plan.Object {
	index := make(map[string]int, len(p.Applications))
	for i, a := range p.Applications {
		index[a.Name] = i
	}
	apps := make([][]*plan.Object, len(p.Applications))
	for i := range p.Objects {
		if a, ok := index[p.Objects[i].App]; ok {
			apps[a] = append(apps[a], &p.Objects[i])
		}
	}
	var byRef map[string]*plan.Object
	var ref []byte
	for i, a := range p.Applications {
		same := len(apps[i]) == len(a.Objects)
		for j := 0; same && j < len(a.Objects); j++ {
			ob := apps[i][j]
			ref = ob.Ref.Append(ref[:0])
			same = string(ref) == a.Objects[j]
		}
		if same {
			continue
		}
		if byRef == nil {
			byRef = make(map[string]*plan.Object, len(p.Objects))
			for k := range p.Objects {
				byRef[p.Objects[k].Ref.String()] = &p.Objects[k]
			}
		}
		apps[i] = apps[i][:0]
		for _, r := range a.Objects {
			if ob := byRef[r]; ob != nil {
				apps[i] = append(apps[i], ob)
			}
		}
	}
	return apps
}
