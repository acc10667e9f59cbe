package printer

import (
	"fmt"
	"io"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/gitops"
)

// PullRequest writes apply's pull-request lines: which provider, API and
// token source were used (the token itself never), then the pull request
// opened or updated, when the provider answered.
func PullRequest(w io.Writer, r *apply.OpenedPR) {
	if r == nil {
		return
	}
	ch := r.Provider
	fmt.Fprintf(w, "Pull request: provider %s (%s), API %s, token from %s\n", ch.Name, ch.Why, gitops.Redact(ch.APIURL, ch.Token), ch.TokenFrom)
	if r.PR == nil {
		return
	}
	verb := "Updated"
	if r.PR.Created {
		verb = "Opened"
	}
	fmt.Fprintf(w, "%s pull request #%d: %s\n", verb, r.PR.Number, r.PR.URL)
}
