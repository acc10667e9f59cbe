package gitops

import (
	"context"
	"testing"
)

// ClosePR contract (reconcile's "closed as obsolete"): the comment first,
// then the close, on each provider; a refused call is one redacted line.
//   - GitHub: rest/issues/comments#create-an-issue-comment
//     POST /repos/{owner}/{repo}/issues/{issue_number}/comments {"body"},
//     then rest/pulls/pulls#update-a-pull-request PATCH {"state":"closed"}
//   - GitLab: api/notes#create-new-merge-request-note
//     POST /projects/:id/merge_requests/:iid/notes {"body"}, then
//     api/merge_requests#update-mr PUT {"state_event":"close"}
//   - Gitea: api/swagger issueCreateComment
//     POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments {"body"},
//     then repoEditPullRequest PATCH /api/v1/repos/{owner}/{repo}/pulls/{index}
//     {"state":"closed"}; the token in "Authorization: token …".

const closeComment = "Closed by adopt reconcile: gone."

func TestGitHubClosesPullRequest(t *testing.T) {
	c := newContract(t, ghHeaders,
		call{doc: "rest/issues/comments#create-an-issue-comment", method: "POST", path: "/api/v3/repos/acme/gitops/issues/7/comments",
			body: `{"body":"` + closeComment + `"}`, status: 201, reply: `{"id":1,"body":"` + closeComment + `"}`},
		call{doc: "rest/pulls/pulls#update-a-pull-request", method: "PATCH", path: "/api/v3/repos/acme/gitops/pulls/7",
			body: `{"state":"closed"}`, status: 200, reply: `{"number":7,"state":"closed"}`},
	)
	if err := ghProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: ghRepo, Number: 7, Comment: closeComment}); err != nil {
		t.Fatal(err)
	}
	c.done()
}

func TestGitHubClosePRRefused(t *testing.T) {
	c := newContract(t, ghHeaders,
		call{doc: "rest/issues/comments#create-an-issue-comment", method: "POST", path: "/api/v3/repos/acme/gitops/issues/7/comments",
			body: `{"body":"` + closeComment + `"}`, status: 201, reply: `{"id":1}`},
		call{doc: "rest/pulls/pulls#update-a-pull-request", method: "PATCH", path: "/api/v3/repos/acme/gitops/pulls/7",
			body: `{"state":"closed"}`, status: 403, reply: `{"message":"Resource not accessible by integration ` + ghToken + `"}`},
	)
	err := ghProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: ghRepo, Number: 7, Comment: closeComment})
	c.done()
	checkOneLine(t, err, ErrForbidden, ghToken, "close pull request #7", "acme/gitops")
}

func TestGitLabClosesMergeRequest(t *testing.T) {
	c := newContract(t, glHeaders,
		call{doc: "api/notes#create-new-merge-request-note", method: "POST", path: glMRPath + "/5/notes",
			body: `{"body":"` + closeComment + `"}`, status: 201, reply: `{"id":1,"body":"` + closeComment + `"}`},
		call{doc: "api/merge_requests#update-mr", method: "PUT", path: glMRPath + "/5",
			body: `{"state_event":"close"}`, status: 200, reply: `{"id":1005,"iid":5,"state":"closed"}`},
	)
	if err := glProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: glRepo, Number: 5, Comment: closeComment}); err != nil {
		t.Fatal(err)
	}
	c.done()
}

func TestGitLabCloseMRNotFound(t *testing.T) {
	c := newContract(t, glHeaders,
		call{doc: "api/notes#create-new-merge-request-note", method: "POST", path: glMRPath + "/5/notes",
			body: `{"body":"` + closeComment + `"}`, status: 404, reply: `{"message":"404 Not found"}`},
	)
	err := glProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: glRepo, Number: 5, Comment: closeComment})
	c.done()
	checkOneLine(t, err, ErrNotFound, glToken, "comment on merge request !5")
}

const gtToken = "gitea-contractTOKEN0123456789"

func gtProvider(t *testing.T, c *contract) Provider {
	t.Helper()
	p, err := NewProvider("gitea", fastRetry(ProviderOptions{APIURL: c.srv.URL + "/", Token: gtToken}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gtClose is the SDK's whole EditPullRequestOption with only the state
// set: Gitea's handler leaves an empty title, base, assignee and milestone
// and a null body, labels and due date as they are.
const gtClose = `{"title":"","body":null,"base":"","assignee":"","assignees":null,"milestone":0,"labels":null,"state":"closed","due_date":null,"unset_due_date":null,"allow_maintainer_edit":null}`

var gtRepo = RepoRef{Scheme: "https", Host: "gitea.example.invalid", Owner: "acme", Name: "gitops"}

func TestGiteaClosesPullRequest(t *testing.T) {
	c := newContract(t, map[string]string{"Authorization": "token " + gtToken},
		call{doc: "issueCreateComment", method: "POST", path: "/api/v1/repos/acme/gitops/issues/3/comments",
			body: `{"body":"` + closeComment + `"}`, status: 201, reply: `{"id":1,"body":"` + closeComment + `"}`},
		call{doc: "repoEditPullRequest", method: "PATCH", path: "/api/v1/repos/acme/gitops/pulls/3",
			body: gtClose, status: 201, reply: `{"number":3,"state":"closed"}`},
	)
	if err := gtProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: gtRepo, Number: 3, Comment: closeComment}); err != nil {
		t.Fatal(err)
	}
	c.done()
}

func TestGiteaClosePRRefused(t *testing.T) {
	c := newContract(t, map[string]string{"Authorization": "token " + gtToken},
		call{doc: "issueCreateComment", method: "POST", path: "/api/v1/repos/acme/gitops/issues/3/comments",
			body: `{"body":"` + closeComment + `"}`, status: 401, reply: `{"message":"token is required"}`},
	)
	err := gtProvider(t, c).(PRCloser).ClosePR(context.Background(), ClosePROptions{Repo: gtRepo, Number: 3, Comment: closeComment})
	c.done()
	checkOneLine(t, err, ErrAuth, gtToken, "comment on pull request #3")
}
