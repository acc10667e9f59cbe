package plan

import (
	"fmt"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
)

// Revisions reads the plan's repo at the revisions Applications name
// (targetRevision), for Render. The planner's read the repo
// (gitindex.Index.AtRevision and SameRevision, with its context); the
// zero value knows only the revision the index was read at, and reads
// nothing.
type Revisions struct {
	// At is the repo at a revision.
	At func(rev string) (*gitindex.Index, error)
	// Same says whether a revision is the one the index was read at.
	Same func(rev string) bool
}

// at is the repo at rev: r.At's, or without it ix for the default
// revision.
func (r Revisions) at(ix *gitindex.Index, rev string) (*gitindex.Index, error) {
	switch {
	case r.At != nil:
		return r.At(rev)
	case gitindex.IsHead(rev):
		return ix, nil
	}
	return nil, fmt.Errorf("targetRevision %s was not read: the plan was built from the repo at its own revision only", rev)
}

func (r Revisions) same(rev string) bool {
	if r.Same != nil {
		return r.Same(rev)
	}
	return gitindex.IsHead(rev)
}

// Renders is what the plan's repo renders for the Applications already
// there, those Git defines and those ApplicationSets would generate, each
// source read at its own targetRevision. Render reads it; Build only
// takes it (Inputs.Renders), so building a plan reads nothing.
type Renders struct {
	// apps are the Applications with those ApplicationSets generate;
	// appSets the findings of generators not evaluated.
	apps    argoapp.Applications
	appSets []Finding
	// owned is what existing Applications render; findings the sources
	// not rendered and those of other repos.
	owned    appRenders
	findings []Finding
	// same is, for each targetRevision of a source that may read the apps
	// directory and each revision of a Git directory generator of the
	// plan's repo, whether it is the plan's revision (appsRoot,
	// placeGenerated).
	same map[string]bool
}

// Render reads, for Build's in, what in.Apps and the Applications their
// ApplicationSets generate render from in.Index, each source at its
// targetRevision through revs. The planner calls it, with its reads,
// before Build; it renders Helm charts in Git with in.Charts.
func Render(in Inputs, revs Revisions) *Renders {
	cfg := in.Config
	if cfg == nil {
		cfg = config.Default()
	}
	var p Plan // for the repo URL Build will choose
	repoURL(&p, cfg, in.Index, in.Apps.Specs)
	url, from := p.Settings.RepoURL, p.Settings.RepoURLFrom
	r := &Renders{apps: in.Apps}
	r.appSets = generated(&r.apps, in.Index, url, in.Tracking.Namespace, revs)
	// What a root's chart renders is pending for the renders only.
	rendered := r.apps
	r.owned, r.findings = existingRenders(&rendered, in.Index, url, from, in.Tracking, in.Charts, revs)
	if in.Index != nil && url != "" && cfg.AppsDir != "" && in.Apps.Installed {
		r.same = map[string]bool{}
		var rev []string
		for _, s := range r.apps.Specs {
			for _, src := range rootSources(s, url) {
				rev = append(rev, src.TargetRevision)
			}
		}
		for _, s := range r.apps.AppSets {
			for _, g := range s.Spec.Generators {
				if g.Git != nil && len(g.Git.Directories) > 0 && argoapp.SameRepo(g.Git.RepoURL, url) {
					rev = append(rev, g.Git.Revision)
				}
			}
		}
		for _, v := range rev {
			if _, ok := r.same[v]; !ok {
				r.same[v] = revs.same(v)
			}
		}
	}
	return r
}
