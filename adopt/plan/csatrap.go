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
	v, _ := argoapp.ParseVersion(t.Version) // unknown stays the zero Version
	source := t.VersionSource
	if source == "" {
		source = "not detected"
	}
	unknown := source
	if !strings.Contains(unknown, "--argocd-version") {
		unknown += "; pass --argocd-version"
	}
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
		if !o.CSAMigration.Fails {
			continue
		}
		switch {
		case argoapp.CSAMigrationTrap(v):
			o.Findings = append(o.Findings, Finding{CodeCSAMigrationFails, Critical, fmt.Sprintf(
				"first sync would fail on Argo CD %s (client-side-apply migration writes last-applied): it would write %d B of annotations, over the %d B cap (version from %s); adopt apply adds ClientSideApplyMigration=false to Application %s",
				v, o.CSAMigration.Bytes, budget.AnnotationCap, source, o.App)})
		case !v.Known():
			o.Findings = append(o.Findings, Finding{CodeCSAMigrationFails, Warning, fmt.Sprintf(
				"first sync would fail on Argo CD 3.1.0-3.3.1 (client-side-apply migration writes last-applied, %d B of annotations, over the %d B cap); the Argo CD version is unknown: %s",
				o.CSAMigration.Bytes, budget.AnnotationCap, unknown)})
		default:
			continue
		}
		sortFindings(o.Findings)
		o.Risk = maxSeverity(o.Findings)
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
