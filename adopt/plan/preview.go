package plan

import (
	"fmt"
	"path"
	"strings"

	"github.com/adopt-dev/adopt/adopt/preview"
)

// Finding codes of the first-sync preview.
const (
	CodeSyncWouldFail     = "first-sync-would-fail"
	CodeSyncWouldNotFit   = "rollout-would-not-fit"
	CodeSyncChanges       = "first-sync-changes"
	CodePendingDeletion   = "pending-deletion-after-finalize"
	CodeEntrypointWarning = "entrypoint-repeated"
)

// AddPreview records the first-sync preview of each object (by Ref) and
// turns what matters into findings: a sync the API server would refuse or a
// rollout that would not fit is critical, fields waiting to be deleted
// after finalize and heuristics are warnings, other changes are info.
func (p *Plan) AddPreview(results map[string]preview.Result) {
	var all []preview.Result
	for i := range p.Objects {
		o := &p.Objects[i]
		r, ok := results[o.Ref.String()]
		if !ok {
			continue
		}
		o.Preview = &r
		all = append(all, r)
		switch {
		case r.Outcome == preview.WouldFail:
			o.Findings = append(o.Findings, Finding{CodeSyncWouldFail, Critical, "the first sync would fail: " + r.Verdict})
		case r.Outcome == preview.Changes:
			var texts []string
			for _, c := range r.Changes {
				texts = append(texts, c.Text)
			}
			o.Findings = append(o.Findings, Finding{CodeSyncChanges, Info, fmt.Sprintf("the first sync changes %d field(s): %s", len(r.Changes), shorten(strings.Join(texts, "; "), 300))})
		}
		if r.WouldNotFit() {
			o.Findings = append(o.Findings, Finding{CodeSyncWouldNotFit, Critical, r.Rollout.Text + ": " + r.Rollout.Capacity.Summary})
		}
		if n := len(r.PendingDeletions); n > 0 {
			var paths []string
			for _, f := range r.PendingDeletions {
				paths = append(paths, f.Path)
			}
			o.Findings = append(o.Findings, Finding{CodePendingDeletion, Warning, fmt.Sprintf("%d field(s) live but not in the manifest stay after the first sync and go at the next sync after finalize: %s", n, shorten(strings.Join(paths, ", "), 300))})
		}
		for _, w := range r.Warnings {
			o.Findings = append(o.Findings, Finding{CodeEntrypointWarning, Warning, w})
		}
		sortFindings(o.Findings)
		o.Risk = maxSeverity(o.Findings)
	}
	for i := range p.Applications {
		a := &p.Applications[i]
		a.IgnoreDifferences = nil
		for _, ref := range a.Objects {
			if r, ok := results[ref]; ok {
				a.IgnoreDifferences = append(a.IgnoreDifferences, r.IgnoreDifferences...)
			}
		}
		if a.Existing != nil && len(a.IgnoreDifferences) > 0 {
			a.IgnoreDifferencesOff = "the Application already exists and apply writes nothing for it: add them to it by hand"
		}
	}
	p.summarize()
	s := preview.Summarize(all)
	p.Summary.Preview = &s
}

// TurnOffIgnoreDifferences records, on each Application whose name matches
// one of the globs (path.Match syntax; "*" for all), that apply must write
// no ignoreDifferences for it, and by which setting.
func (p *Plan) TurnOffIgnoreDifferences(globs []string, by string) error {
	for _, g := range globs {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("%s: bad Application name pattern %q: %w", by, g, err)
		}
	}
	for i := range p.Applications {
		a := &p.Applications[i]
		for _, g := range globs {
			if ok, _ := path.Match(g, a.Name); ok && a.IgnoreDifferencesOff == "" {
				a.IgnoreDifferencesOff = "turned off by " + by
			}
		}
	}
	return nil
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
