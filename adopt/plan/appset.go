package plan

import (
	"fmt"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// CodeAppSetNotEvaluated: an ApplicationSet's generator adopt does not
// evaluate (not a Git directory or Git file generator, or one reading
// another repo), or ApplicationSets it may not list: the Applications it
// would generate are not known.
const CodeAppSetNotEvaluated = "applicationset-not-evaluated"

// generated adds to apps the Applications the ApplicationSets' Git
// generators generate from the plan's repo (argoapp.AddGenerated): those
// not in the cluster yet as pending. The ApplicationSets are those in the
// cluster and those defined in the repo's manifests (plain files and
// kustomization renders) that are not in the cluster yet
// (argoapp.AddAppSetsInGit), evaluated alike. A Git generator reads the
// plan's repo when its repoURL is that repo (as argoapp.SameRepo compares
// them), at its revision (read through revs). Every generator not
// evaluated is a finding naming it.
func generated(apps *argoapp.Applications, ix *gitindex.Index, repoURL, argoNS string, revs Revisions) []Finding {
	if ix == nil {
		return nil // without a repo there is nothing to evaluate them on
	}
	var fs []Finding
	if apps.AppSetsNote != "" {
		fs = append(fs, Finding{Code: CodeAppSetNotEvaluated, Severity: Info, Message: apps.AppSetsNote})
	}
	at := treeAt(ix, repoURL, revs)
	skipped := apps.AddGenerated(at, argoNS)
	skipped = append(skipped, apps.AddAppSetsInGit(definedAppSets(ix), at, argoNS)...)
	return append(fs, notEvaluated(skipped)...)
}

// notEvaluated is the finding for each generator an ApplicationSet could
// not be evaluated by (argoapp.AppSet.Generate's lines).
func notEvaluated(skipped []string) []Finding {
	var fs []Finding
	for _, line := range skipped {
		fs = append(fs, Finding{Code: CodeAppSetNotEvaluated, Severity: Info, Message: line +
			"; the Applications it would generate are not known, so objects they would sync may be proposed again"})
	}
	return fs
}

// treeAt is the repo a Git generator reads: the plan's repo (repoURL, as
// argoapp.SameRepo compares) at the generator's revision, through revs;
// any other repo is an error saying so.
func treeAt(ix *gitindex.Index, repoURL string, revs Revisions) argoapp.TreeAt {
	return func(url, rev string) (argoapp.Tree, error) {
		if repoURL == "" {
			return nil, fmt.Errorf("it reads %s and the plan has no repo URL (set repoURL in adopt.yaml)", gitops.Redact(url))
		}
		if !argoapp.SameRepo(url, repoURL) {
			return nil, fmt.Errorf("it reads %s, not the plan's repo %s", gitops.Redact(url), gitops.Redact(repoURL))
		}
		t, err := revs.at(ix, rev)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}

// definedAppSets are the ApplicationSet manifests in the repo (plain
// files and kustomization renders), each with its file and line.
func definedAppSets(ix *gitindex.Index) []argoapp.Defined {
	var out []argoapp.Defined
	for _, m := range ix.Manifests() {
		if m.Group == "argoproj.io" && m.Kind == "ApplicationSet" {
			out = append(out, argoapp.Defined{Object: m.Object, Where: fmt.Sprintf("%s:%d", m.Path, m.Line)})
		}
	}
	return out
}
