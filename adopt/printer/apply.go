package printer

import (
	"fmt"
	"io"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// ApplyResult is what `adopt apply` did: the engine's summary and the
// commit gitops made of it.
type ApplyResult struct {
	Summary apply.Summary
	// Repo is the repository's display URL, Base the branch built on.
	Repo, Base string
	Result     *gitops.Result
	DryRun     bool
	// CloneDir is the on-disk clone of --no-push ("" otherwise).
	CloneDir string
}

// Apply writes apply's report: the diff for a dry run, else each
// Application with where its objects went, then the commit.
func Apply(w io.Writer, r ApplyResult) {
	_ = buffered(w, func(w io.Writer) error { applyReport(w, r); return nil })
}

func applyReport(w io.Writer, r ApplyResult) {
	s, res := r.Summary, r.Result
	if r.DryRun {
		if res.Changed {
			fmt.Fprint(w, res.Diff)
		}
		fmt.Fprintf(w, "dry run: plan %s on branch %s of %s (from %s): %d file(s) would change; nothing was written\n", s.PlanID, res.Branch, r.Repo, r.Base, len(res.Paths))
		return
	}
	fmt.Fprintf(w, "plan %s: %d Application(s), %d object(s)\n", s.PlanID, len(s.Applications), s.Objects)
	for _, a := range s.Applications {
		if a.File != "" {
			fmt.Fprintf(w, "  Application %s -> %s (manifest %s)\n", a.Name, a.Path, a.File)
		} else {
			fmt.Fprintf(w, "  Application %s -> %s (no manifest)\n", a.Name, a.Path)
		}
		if a.Reach != "" {
			fmt.Fprintf(w, "    reaches the cluster: %s\n", a.Reach)
		}
		for _, ob := range a.Objects {
			fmt.Fprintf(w, "    %s: %s\n", ob.Ref, ob.Where)
		}
		if a.CSAMigration != "" {
			fmt.Fprintf(w, "    %s: %s\n", argoapp.SyncOptionNoCSAMigration, a.CSAMigration)
		}
		for _, n := range a.Notes {
			fmt.Fprintf(w, "    warning: %s\n", n)
		}
	}
	for _, sec := range s.Secrets {
		fmt.Fprintf(w, "  secret %s left out of sync: give it a secret-management source (SealedSecret, ExternalSecret, SOPS)\n", sec.Ref)
	}
	for _, e := range s.ESO {
		if note := e.PushNote(); note != "" {
			fmt.Fprintf(w, "  secret %s: %s\n", e.Ref, note)
		}
		for _, line := range e.Proof() {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	for _, f := range s.Runbooks {
		fix := ""
		if s.FixRunbooks {
			fix = " (rewritten)"
		}
		fmt.Fprintf(w, "  runbook %s%s\n", f, fix)
	}
	if len(s.Runbooks) > 0 && !s.FixRunbooks {
		fmt.Fprintln(w, "  run again with --fix-runbooks to rewrite those lines")
	}
	commit(w, r)
}

// commit says what became of the commit, and what to do next.
func commit(w io.Writer, r ApplyResult) {
	res := r.Result
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "branch %s of %s is up to date at %s: no new commit\n", res.Branch, r.Repo, short(res.Commit))
	case res.Pushed:
		how := "pushed"
		if res.Attempts > 1 {
			how = fmt.Sprintf("pushed after rebuilding on a concurrent push (%d attempts)", res.Attempts)
		}
		fmt.Fprintf(w, "committed %s on branch %s of %s (from %s), %d file(s); %s\n", short(res.Commit), res.Branch, r.Repo, r.Base, len(res.Paths), how)
		for _, f := range res.Paths {
			fmt.Fprintf(w, "  wrote %s\n", f)
		}
	default:
		fmt.Fprintf(w, "committed %s on branch %s in %s, not pushed (--no-push); push it with: git -C %s push origin %s\n", short(res.Commit), res.Branch, r.CloneDir, r.CloneDir, res.Branch)
	}
	fmt.Fprintf(w, "next: review and merge %s, let Argo CD sync, then run adopt finalize\n", res.Branch)
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// FleetApply writes a fleet apply's report: each ApplicationSet with the
// Applications it generates, each cluster's other Applications, then the
// commit (r.Summary is unused).
func FleetApply(w io.Writer, s apply.FleetSummary, r ApplyResult) {
	_ = buffered(w, func(w io.Writer) error { fleetApplyReport(w, s, r); return nil })
}

func fleetApplyReport(w io.Writer, s apply.FleetSummary, r ApplyResult) {
	res := r.Result
	if r.DryRun {
		if res.Changed {
			fmt.Fprint(w, res.Diff)
		}
		fmt.Fprintf(w, "dry run: fleet plan %s on branch %s of %s (from %s): %d file(s) would change; nothing was written\n", s.ID, res.Branch, r.Repo, r.Base, len(res.Paths))
		return
	}
	fmt.Fprintf(w, "fleet plan %s: %d ApplicationSet(s), %d cluster(s)\n", s.ID, len(s.Sets), len(s.Clusters))
	for _, set := range s.Sets {
		where := set.Path
		if where == "" {
			where = "per-cluster paths (" + set.Why + ")"
		}
		fmt.Fprintf(w, "  ApplicationSet %s (%s generator) -> %s (manifest %s)\n", set.Name, set.Generator, where, set.File)
		for _, p := range set.Patches {
			fmt.Fprintf(w, "    overlay %s: %s (%s) %s\n", p.Cluster, p.Object, p.Form, p.File)
		}
		for _, g := range set.Generated {
			fmt.Fprintf(w, "    generates Application %s\n", g)
		}
	}
	for _, c := range s.Clusters {
		for _, a := range c.Summary.Applications {
			fmt.Fprintf(w, "  cluster %s: Application %s -> %s (manifest %s)\n", c.Context, a.Name, a.Path, a.File)
		}
		for _, sec := range c.Summary.Secrets {
			fmt.Fprintf(w, "  cluster %s: secret %s left out of sync\n", c.Context, sec.Ref)
		}
	}
	commit(w, r)
}
