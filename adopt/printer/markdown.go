package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// Markdown writes the plan as a Markdown report, for a pull request or an
// issue: one table per proposed Application, then the findings.
func Markdown(w io.Writer, p *plan.Plan) error {
	fmt.Fprintf(w, "# Adoption plan %s\n\n", p.ID)
	fmt.Fprintf(w, "- Cluster: `%s`%s\n", p.Cluster.Server, ctxSuffix(p.Cluster.Context))
	fmt.Fprintf(w, "- Tracking: `%s` (%s)\n", p.Tracking.Method, md(p.Tracking.Reason))
	fmt.Fprintf(w, "- Argo CD: %s\n", md(p.ArgoCD.Note))
	if p.Repo != nil {
		fmt.Fprintf(w, "- Repo: `%s` at `%s`\n", p.Repo.Source, revision(p.Repo.Revision))
		if s := p.Settings; s.RepoURL != "" {
			fmt.Fprintf(w, "- Repo URL: `%s` (from %s)\n", s.RepoURL, md(s.RepoURLFrom))
		}
	}
	fmt.Fprintf(w, "\n**%s**\n", SummaryLine(p))
	byRef := map[string]*plan.Object{}
	for i := range p.Objects {
		byRef[p.Objects[i].Ref.String()] = &p.Objects[i]
	}
	for _, a := range p.Applications {
		fmt.Fprintf(w, "\n## Application `%s`\n\n%s\n\n", a.Name, md(source(a)))
		fmt.Fprintln(w, "| Object | Provenance | Annotations | % cap | Git | Risk |")
		fmt.Fprintln(w, "|---|---|---:|---:|---|---|")
		var notes []string
		for _, ref := range a.Objects {
			ob := byRef[ref]
			if ob == nil {
				continue
			}
			fmt.Fprintf(w, "| `%s` | %s | %s B | %.1f%% | %s | %s |\n", ob.Ref.String(), md(ob.Provenance), Bytes(ob.Budget.AnnotationBytes), ob.Budget.PercentOfCap, md(gitColumn(ob)), risk(ob, false))
			for _, f := range ob.Findings {
				notes = append(notes, fmt.Sprintf("- **%s** `%s`: %s", f.Severity, ob.Ref.String(), md(f.Message)))
			}
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
		}
		if line := a.IgnoreSummary(); line != "" {
			fmt.Fprintf(w, "\n%s:\n\n", md(line))
			for _, d := range a.IgnoreDifferences {
				fmt.Fprintf(w, "- `%s`: %s (source: %s)\n", d, md(d.Reason), md(d.Source))
			}
		}
	}
	if len(p.Findings) > 0 {
		fmt.Fprintln(w, "\n## Findings")
		for _, f := range p.Findings {
			fmt.Fprintf(w, "- **%s**: %s\n", f.Severity, md(f.Message))
		}
	}
	if len(p.NotScanned) > 0 {
		fmt.Fprintln(w, "\n## Not scanned")
		for _, n := range p.NotScanned {
			fmt.Fprintf(w, "- `%s`: %s\n", n.Type, md(n.Reason))
		}
	}
	if len(p.Skipped) > 0 {
		fmt.Fprintf(w, "\n<details><summary>%d skipped</summary>\n\n", len(p.Skipped))
		for _, sk := range p.Skipped {
			fmt.Fprintf(w, "- `%s` (%s): %s\n", skippedName(sk), sk.Class, md(sk.Reason))
		}
		fmt.Fprintln(w, "\n</details>")
	}
	return nil
}

// md escapes the characters that would break a table cell.
func md(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
