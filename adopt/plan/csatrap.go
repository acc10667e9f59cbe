package plan

import (
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/argoapp"
)

// CodeCSAMigrationFails is the finding for Argo CD 3.1.0-3.3.1's
// client-side-apply migration trap.
const CodeCSAMigrationFails = "first-sync-fails-csa-migration"

// csaMigration predicts, for every candidate that now has its Application,
// the client-side apply Argo CD 3.1.0-3.3.1 performs before the first
// server-side sync, and adds a finding when it would pass the cap on the
// plan's Argo CD version (or might, when the version is unknown).
func csaMigration(cands []*candidate, t argoapp.Tracking) {
	for _, c := range cands {
		o := c.obj
		if !judge.CSAMigrationRuns(c.src) {
			continue // the zero prediction: no mark or configuration to size
		}
		target := judge.SyncTarget{AppliedBytes: c.src.AppliedBytes, Annotations: c.src.Annotations, Labels: c.src.Labels}
		if c.manifest != nil {
			b, err := budget.AppliedConfig(c.manifest.Object, c.src.Namespace)
			if err != nil {
				continue
			}
			meta, _ := c.manifest.Object["metadata"].(map[string]any)
			target = judge.SyncTarget{AppliedBytes: len(b), Annotations: stringMap(meta["annotations"]), Labels: stringMap(meta["labels"])}
		}
		target.Mark = judge.TrackingMark(t, o.App, o.Ref)
		o.CSAMigration = judge.PredictCSAMigration(c.src, target)
		csaFinding(o, t, o.App)
	}
}

// RenameApplication predicts the client-side-apply migration of app's
// objects again for the Application Argo CD will run them under, named
// generated (an ApplicationSet's <cluster>-<app>): the tracking mark holds
// the name, so the bytes change (judge.CSAMigration.Renamed), and with them
// the finding and the summary. The Application keeps its name in the plan.
func (p *Plan) RenameApplication(app, generated string) {
	for i := range p.Objects {
		o := &p.Objects[i]
		if o.App != app {
			continue
		}
		o.CSAMigration = o.CSAMigration.Renamed(p.Tracking, o.Ref, app, generated)
		csaFinding(o, p.Tracking, generated)
	}
	p.summarize()
}

// csaFinding sets o's first-sync-fails-csa-migration finding from its
// prediction on tracking t's Argo CD version (or might, when the version is
// unknown), app naming the Application that gets the sync option.
func csaFinding(o *Object, t argoapp.Tracking, app string) {
	kept := o.Findings[:0]
	for _, f := range o.Findings {
		if f.Code != CodeCSAMigrationFails {
			kept = append(kept, f)
		}
	}
	o.Findings = kept
	defer func() {
		sortFindings(o.Findings)
		o.Risk = maxSeverity(o.Findings)
	}()
	if !o.CSAMigration.Fails {
		return
	}
	v, _ := argoapp.ParseVersion(t.Version) // unknown stays the zero Version
	source := t.VersionSource
	if source == "" {
		source = "not detected"
	}
	switch {
	case argoapp.CSAMigrationTrap(v):
		o.Findings = append(o.Findings, Finding{CodeCSAMigrationFails, Critical, fmt.Sprintf(
			"first sync would fail on Argo CD %s (client-side-apply migration writes last-applied): it would write %d B of annotations, over the %d B cap (version from %s); adopt apply adds ClientSideApplyMigration=false to Application %s",
			v, o.CSAMigration.Bytes, budget.AnnotationCap, source, app)})
	case !v.Known():
		if !strings.Contains(source, "--argocd-version") {
			source += "; pass --argocd-version"
		}
		o.Findings = append(o.Findings, Finding{CodeCSAMigrationFails, Warning, fmt.Sprintf(
			"first sync would fail on Argo CD 3.1.0-3.3.1 (client-side-apply migration writes last-applied, %d B of annotations, over the %d B cap); the Argo CD version is unknown: %s",
			o.CSAMigration.Bytes, budget.AnnotationCap, source)})
	}
}

// stringMap reads a manifest's labels or annotations; values that are not
// strings are left out.
func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}
