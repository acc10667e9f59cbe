package apply

import (
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// ignoreDifferences adds to ignore the entries the plan records for app
// (none when they are turned off), and to opts RespectIgnoreDifferences=true
// when there is any entry, so the sync keeps those fields' live values
// too. A note on s says what was written or why nothing was.
func ignoreDifferences(app plan.Application, s *AppSummary, ignore []argoapp.IgnoreDifference, opts []string) ([]argoapp.IgnoreDifference, []string) {
	for _, d := range app.WrittenIgnoreDifferences() {
		ignore = append(ignore, argoapp.IgnoreDifference{Group: d.Group, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name,
			JSONPointers: d.JSONPointers, ManagedFieldsManagers: d.ManagedFieldsManagers})
	}
	if line := app.IgnoreSummary(); line != "" {
		s.Notes = append(s.Notes, line)
	}
	if len(ignore) > 0 {
		opts = append(opts, argoapp.SyncOptionRespectIgnoreDifferences)
	}
	return ignore, opts
}
