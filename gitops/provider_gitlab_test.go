package gitops

import (
	"context"
	"net/http"
	"testing"
)

// GitLab REST API contract. Pages cited are under the GitLab documentation
// site, by path:
//   - api/merge_requests#list-project-merge-requests  GET  /projects/:id/merge_requests
//     (state=opened, source_branch, target_branch)
//   - api/merge_requests#create-mr                    POST /projects/:id/merge_requests
//     (source_branch, target_branch, title, description, labels as a
//     comma-separated string, reviewer_ids)
//   - api/merge_requests#update-mr                    PUT  /projects/:id/merge_requests/:merge_request_iid
//     (title, description, add_labels, reviewer_ids)
//   - api/users#list-users                            GET  /users?username=
//   - api/rest/_index#namespaced-paths: :id may be the URL-encoded
//     path, group%2Fsub%2Fproject
//   - api/rest/authentication#personalprojectgroup-access-tokens: the
//     PRIVATE-TOKEN header
//   - user/project/merge_requests/drafts: a "Draft: " title prefix marks a draft

const glToken = "glpat-contractTOKEN012345"

var glHeaders = map[string]string{"PRIVATE-TOKEN": glToken}

const glMRPath = "/api/v4/projects/group%2Fsub%2Fgitops/merge_requests"

var glListQuery = map[string]string{"state": "opened", "source_branch": "adopt/plan-1", "target_branch": "main"}

var glRepo = RepoRef{Scheme: "https", Host: "gitlab.example.invalid", Owner: "group/sub", Name: "gitops"}

func glProvider(t *testing.T, c *contract) Provider {
	t.Helper()
	p, err := NewProvider("gitlab", fastRetry(ProviderOptions{APIURL: c.srv.URL + "/api/v4/", Token: glToken}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func glMR(iid, title, reviewers string) string {
	return `{"id":100` + iid + `,"iid":` + iid + `,"web_url":"https://gitlab.example.invalid/group/sub/gitops/-/merge_requests/` + iid +
		`","title":"` + title + `","source_branch":"adopt/plan-1","target_branch":"main","reviewers":[` + reviewers + `]}`
}

func TestGitLabCreatesMergeRequest(t *testing.T) {
	c := newContract(t, glHeaders,
		call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: glListQuery, status: 200, reply: `[]`},
		call{doc: "api/users#list-users", method: "GET", path: "/api/v4/users", query: map[string]string{"username": "alice"}, status: 200, reply: `[{"id":42,"username":"alice"}]`},
		call{doc: "api/merge_requests#create-mr", method: "POST", path: glMRPath,
			body:   `{"title":"Draft: adopt: 1 app","description":"the body","source_branch":"adopt/plan-1","target_branch":"main","labels":"adopt,gitops","reviewer_ids":[42]}`,
			status: 201, reply: glMR("5", "Draft: adopt: 1 app", "")},
	)
	pr, err := glProvider(t, c).EnsurePR(context.Background(), PROptions{
		Repo: glRepo, Head: "adopt/plan-1", Base: "main", Title: "adopt: 1 app", Body: "the body",
		Labels: []string{"adopt", "gitops"}, Reviewers: []string{"alice"}, Draft: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	if !pr.Created || pr.Number != 5 || pr.URL != "https://gitlab.example.invalid/group/sub/gitops/-/merge_requests/5" {
		t.Errorf("merge request = %+v", pr)
	}
}

func TestGitLabUpdatesOpenMergeRequest(t *testing.T) {
	c := newContract(t, glHeaders,
		call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: glListQuery, status: 200,
			reply: `[` + glMR("5", "old", `{"id":7,"username":"bob"}`) + `]`},
		call{doc: "api/merge_requests#update-mr", method: "PUT", path: glMRPath + "/5",
			// Labels and reviewers were set when it was opened: an update
			// leaves them as people left them (bob stays, alice is not
			// asked again).
			body:   `{"title":"new","description":"new body"}`,
			status: 200, reply: glMR("5", "new", "")},
	)
	pr, err := glProvider(t, c).EnsurePR(context.Background(), PROptions{
		Repo: glRepo, Head: "adopt/plan-1", Base: "main", Title: "new", Body: "new body", Labels: []string{"adopt"}, Reviewers: []string{"alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.done()
	if pr.Created || pr.Number != 5 || pr.Title != "new" {
		t.Errorf("merge request = %+v", pr)
	}
}

func TestGitLabUnknownReviewer(t *testing.T) {
	c := newContract(t, glHeaders,
		call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: glListQuery, status: 200, reply: `[]`},
		call{doc: "api/users#list-users", method: "GET", path: "/api/v4/users", query: map[string]string{"username": "nobody"}, status: 200, reply: `[]`},
	)
	_, err := glProvider(t, c).EnsurePR(context.Background(), PROptions{Repo: glRepo, Head: "adopt/plan-1", Base: "main", Title: "t", Reviewers: []string{"nobody"}})
	c.done()
	checkOneLine(t, err, ErrPRInvalid, glToken, `gitlab has no user "nobody"`, "--pr-reviewer")
}

func TestGitLabErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		kind   error
		want   string
	}{
		{401, ErrAuth, "gitlab rejected the token while trying to open a merge request from adopt/plan-1 into main on group/sub/gitops (401)"},
		{403, ErrForbidden, "token lacks pull-request write permission on group/sub/gitops (403"},
		{404, ErrNotFound, "gitlab repository group/sub/gitops not found"},
		{409, ErrPRConflict, "conflicting pull request on group/sub/gitops"},
		{422, ErrPRInvalid, "gitlab refused to open a merge request from adopt/plan-1 into main on group/sub/gitops (422)"},
		{500, ErrPRUnavailable, "gitlab API kept failing while trying to open a merge request from adopt/plan-1 into main on group/sub/gitops (500 after retries)"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			list := call{doc: "api/merge_requests#list-project-merge-requests", method: "GET", path: glMRPath, query: glListQuery, status: 200, reply: `[]`}
			create := call{doc: "api/merge_requests#create-mr", method: "POST", path: glMRPath,
				body:   `{"title":"t","description":"b","source_branch":"adopt/plan-1","target_branch":"main"}`,
				status: tc.status, reply: `{"message":"refused for ` + glToken + `"}`}
			calls := []call{list, create}
			switch {
			case tc.status >= 500:
				calls = append(calls, create, create)
			case tc.status == 409: // "Another open merge request already exists": look again
				calls = append(calls, list)
			}
			c := newContract(t, glHeaders, calls...)
			_, err := glProvider(t, c).EnsurePR(context.Background(), PROptions{Repo: glRepo, Head: "adopt/plan-1", Base: "main", Title: "t", Body: "b"})
			c.done()
			checkOneLine(t, err, tc.kind, glToken, tc.want)
		})
	}
}
