package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/runbook"
)

// runbooks scans the repo's Markdown and shell files for hand applies of
// adopted manifests that are in Git, and rewrites them with FixRunbooks.
func (a *Applier) runbooks(t Tree, files map[string][]byte) ([]runbook.Finding, error) {
	var targets []runbook.Target
	for _, e := range a.objs {
		if e.obj.Git != nil {
			targets = append(targets, runbook.Target{Path: e.obj.Git.Path, App: e.obj.App})
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Path < targets[j].Path })
	all, err := t.Files()
	if err != nil {
		return nil, err
	}
	var findings []runbook.Finding
	for _, f := range all {
		if !runbook.IsRunbook(f) {
			continue
		}
		data, err := t.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		fs := runbook.Scan(f, data, targets)
		findings = append(findings, fs...)
		if a.o.FixRunbooks && len(fs) > 0 {
			files[f] = runbook.Fix(data, fs, a.id)
		}
	}
	return findings, nil
}

// commitMessage renders the commit message template.
func (a *Applier) commitMessage(s Summary) (string, error) {
	var secrets, rb []string
	for _, sec := range s.Secrets {
		secrets = append(secrets, sec.String())
	}
	for _, f := range s.Runbooks {
		rb = append(rb, f.String())
	}
	var pushed []string
	for _, e := range s.ESO {
		for _, line := range e.Proof() {
			pushed = append(pushed, e.Ref+", "+line)
		}
	}
	data := map[string]any{
		"PlanID": a.id, "Cluster": a.o.Plan.Cluster.Server, "Applications": s.Applications, "Objects": s.Objects,
		"Secrets": secrets, "Runbooks": rb, "AutoSync": a.o.AutoSync, "Pushed": pushed,
	}
	var b bytes.Buffer
	if err := a.msgTpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render commit message: %w", err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// AdoptionID is a short content hash naming the adoption: the cluster, and
// which objects each proposed Application adopts from which path.
// Measurements (budgets, provenance) are left out, so the same adoption keeps
// its id, and its branch, while the live objects change.
func AdoptionID(p *plan.Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "cluster %s\n", p.Cluster.Server)
	for _, a := range p.Applications {
		fmt.Fprintf(h, "app %s %s %s\n", a.Name, a.Namespace, a.SourcePath)
		for _, o := range a.Objects {
			fmt.Fprintf(h, "  %s\n", o)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
