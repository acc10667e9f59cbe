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
// not in the cluster yet as pending. A Git generator reads the plan's
// repo when its repoURL is that repo (as argoapp.SameRepo compares them),
// at its revision (read through revs). Every generator not evaluated is a
// finding naming it.
func generated(apps *argoapp.Applications, ix *gitindex.Index, repoURL, argoNS string, revs Revisions) []Finding {
	if ix == nil {
		return nil // without a repo there is nothing to evaluate them on
	}
	var fs []Finding
	if apps.AppSetsNote != "" {
		fs = append(fs, Finding{Code: CodeAppSetNotEvaluated, Severity: Info, Message: apps.AppSetsNote})
	}
	if len(apps.AppSets) == 0 {
		return fs
	}
	at := func(url, rev string) (argoapp.Tree, error) {
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
	for _, line := range apps.AddGenerated(at, argoNS) {
		fs = append(fs, Finding{Code: CodeAppSetNotEvaluated, Severity: Info, Message: line +
			"; the Applications it would generate are not known, so objects they would sync may be proposed again"})
	}
	return fs
}
