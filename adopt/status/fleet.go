package status

import (
	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
)

// FleetInputs are a fleet plan's inputs, one per planned cluster in
// context order, each followed as Argo CD runs it: its plan with every
// Application an ApplicationSet covers under the generated name
// (fleet.Fleet.Generated), found in Git as the set's file, on the fleet's
// branch adopt/<fleet id>, with the cluster's own finalize journal. The
// caller sets each input's clients.
func FleetInputs(f *fleet.Fleet) []Input {
	branch := "adopt/" + f.Index.ID()
	var out []Input
	for _, c := range f.Contexts() {
		p := f.Plans[c]
		dest := f.Index.Entry(c).Destination
		files := map[string]string{}
		for name := range f.Index.Covered(c) {
			files[fleet.GeneratedName(dest, name)] = apply.SetFile(p, name)
		}
		out = append(out, Input{Plan: f.Generated(c), File: f.Dir, Journal: finalize.JournalPath(f.Files[c]),
			Cluster: c, Branch: branch, AppFiles: files})
	}
	return out
}
