package status

import (
	"context"
	"fmt"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/reconcile"
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

// ReconcileInputs are adopt reconcile's groups kept in namespace (its
// lock namespace) as inputs: each group's plan on its branch, with its
// journal in journalDir, read from c. None is an InputError; the caller
// sets each input's clients.
func ReconcileInputs(ctx context.Context, c *kubeconn.Cluster, namespace, journalDir string) ([]Input, error) {
	groups, err := reconcile.Store{Kube: c.Kube, Namespace: namespace}.List(ctx)
	if err != nil {
		return nil, c.Explain(err)
	}
	if len(groups) == 0 {
		return nil, &InputError{fmt.Errorf("--reconcile %s: adopt reconcile keeps no group there; give its --lock-namespace", namespace)}
	}
	out := make([]Input, 0, len(groups))
	for _, g := range groups {
		out = append(out, Input{Plan: g.Plan, File: g.Branch, Journal: reconcile.JournalFile(journalDir, g.Branch), Branch: g.Branch})
	}
	return out, nil
}
