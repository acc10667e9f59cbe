package plan

import (
	"fmt"

	"github.com/adopt-dev/adopt/argoapp"
)

// CodeExtends: a proposed Application meets one that already exists (in
// the cluster, or defined in Git and not created yet) by its name, or by
// the path it syncs to the same namespace: apply extends that one.
const CodeExtends = "extends-existing"

// extendExisting marks each proposed Application that meets an existing
// one (specs: the cluster's and Git's) by name, or by syncing the same
// path of the same repository to the same namespace: apply writes the
// proposal into that Application (its file, its name), growing its
// include, objects and plan id, and never replaces it. A finding says so.
func extendExisting(p *Plan, specs []argoapp.Spec) {
	for i := range p.Applications {
		a := &p.Applications[i]
		if a.Source == "existing" || a.Existing != nil || a.SourcePath == "" {
			continue
		}
		repo := a.RepoURL
		if repo == "" {
			repo = p.Settings.RepoURL
		}
		for _, s := range specs {
			if s.Namespace != "" && s.Namespace != p.Tracking.Namespace && s.Name == a.Name {
				continue // another namespace's Application of the same name
			}
			if s.Name != a.Name && !syncsPath(s, repo, a.SourcePath, a.Namespace) {
				continue
			}
			a.Extends = s.Name
			where := "in the cluster"
			if s.Pending != "" {
				where = "in Git at " + s.Pending
			}
			p.Findings = append(p.Findings, Finding{Code: CodeExtends, Severity: Info, Message: fmt.Sprintf(
				"Application %s meets Application %s, which exists %s: apply adds %d object(s) to it (its include, objects and plan id grow, its file stays where it is read) and never replaces it",
				a.Name, s.Name, where, len(a.Objects))})
			break
		}
	}
}

// syncsPath says whether s syncs path of repository repo (any when "") to
// namespace ns.
func syncsPath(s argoapp.Spec, repo, path, ns string) bool {
	if s.Destination != ns {
		return false
	}
	for _, src := range s.Sources {
		if src.Chart == "" && argoapp.SameSource(src.RepoURL, src.Path, repo, path) {
			return true
		}
	}
	return false
}
