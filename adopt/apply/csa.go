package apply

import (
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// CSAMode is --csa-migration: whether Applications get
// ClientSideApplyMigration=false.
type CSAMode string

// The CSA-migration modes.
const (
	// CSAAuto adds the option where Argo CD 3.1.0-3.3.1's client-side-apply
	// migration would pass the annotation cap, and refuses to guess when
	// the version is unknown.
	CSAAuto CSAMode = "auto"
	// CSAKeep never adds it.
	CSAKeep CSAMode = "keep"
	// CSADisable always adds it.
	CSADisable CSAMode = "disable"
)

// CSAModes lists the accepted values.
var CSAModes = []string{string(CSAAuto), string(CSAKeep), string(CSADisable)}

// csaOption appends ClientSideApplyMigration=false to an Application's
// sync options when csaMigration says so, and records why on its summary
// (the reason, or a warning among its notes).
func (a *Applier) csaOption(app plan.Application, s *AppSummary, opts []string) ([]string, error) {
	add, why, err := a.csaMigration(app)
	switch {
	case err != nil:
		return opts, err
	case add:
		opts = append(opts, argoapp.SyncOptionNoCSAMigration)
		s.CSAMigration = why
	case why != "":
		s.Notes = append(s.Notes, why)
	}
	return opts, nil
}

// csaMigration decides whether Application app gets
// ClientSideApplyMigration=false, and says why; when it does not but an
// object is at risk, why is a warning for the summary. With the version
// unknown and an object at risk it refuses: writing the Application either
// way would be a guess, and the wrong guess fails the first sync.
func (a *Applier) csaMigration(app plan.Application) (bool, string, error) {
	var trapped []string
	for _, ref := range app.Objects {
		// Check made sure every ref is the plan's; Export indexed them.
		if ob := a.objs[ref].obj; ob.CSAMigration.Fails {
			trapped = append(trapped, fmt.Sprintf("%s (%d B)", ref, ob.CSAMigration.Bytes))
		}
	}
	v := a.o.Version
	risk := fmt.Sprintf("the client-side-apply migration of Argo CD 3.1.0-3.3.1 writes last-applied again and would pass the %d B annotation cap for %s, failing the first sync", budget.AnnotationCap, strings.Join(trapped, ", "))
	switch {
	case a.o.CSAMigration == CSADisable:
		return true, "set by --csa-migration=disable; adopt finalize migrates field ownership instead", nil
	case len(trapped) == 0:
		return false, "", nil
	case a.o.CSAMigration == CSAKeep && argoapp.CSAMigrationTrap(v.Version):
		return false, fmt.Sprintf("on %s, %s; --csa-migration=keep leaves ClientSideApplyMigration on", v, risk), nil
	case a.o.CSAMigration == CSAKeep:
		return false, "", nil
	case argoapp.CSAMigrationTrap(v.Version):
		return true, fmt.Sprintf("on %s, %s; with the migration off, the first sync succeeds and adopt finalize migrates field ownership instead", v, risk), nil
	case !v.Version.Known():
		return false, "", &ContractError{msg: fmt.Sprintf("Application %s: %s: if it is 3.1.0-3.3.1, %s. Nothing was written. Pass --argocd-version (the version the Applications will run on), or --csa-migration=disable (safe on every version: it only turns that migration off) or --csa-migration=keep", app.Name, v, risk)}
	}
	return false, "", nil
}

// VersionMismatch warns when the plan was made for an Argo CD version that
// differs from apply's in what the predictions depend on: the default
// tracking method (what Argo CD writes into each object) or the
// client-side-apply migration trap.
func VersionMismatch(p *plan.Plan, v argoapp.DetectedVersion) string {
	pv, err := argoapp.ParseVersion(p.Tracking.Version)
	if err != nil || !v.Version.Known() {
		return ""
	}
	if argoapp.DefaultTrackingMethod(pv) == argoapp.DefaultTrackingMethod(v.Version) && argoapp.CSAMigrationTrap(pv) == argoapp.CSAMigrationTrap(v.Version) {
		return ""
	}
	return fmt.Sprintf("plan %s was made for Argo CD %s (tracking %q), but this apply targets %s: its client-side-apply migration predictions may not hold; run adopt plan --argocd-version %s again",
		p.ID, pv, p.Tracking.Method, v, v.Version)
}
