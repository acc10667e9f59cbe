package gitops

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// call is one request a contract server expects, in order, and its answer.
type call struct {
	doc    string            // the provider's API doc page the shape comes from
	method string            // HTTP method
	path   string            // escaped path, exactly
	query  map[string]string // query parameters that must be present with these values
	body   string            // JSON the request body must equal (semantically); "" means none
	status int
	reply  string
}

// contract is an httptest server that accepts exactly the calls listed and
// checks the headers every call must carry. It is the only fake allowed:
// it stands for the provider's REST API as its documentation describes it.
type contract struct {
	t       *testing.T
	calls   []call
	headers map[string]string // header -> exact value every call must carry
	mu      sync.Mutex
	n       int
	srv     *httptest.Server
}

func newContract(t *testing.T, headers map[string]string, calls ...call) *contract {
	c := &contract{t: t, calls: calls, headers: headers}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve)) // binds 127.0.0.1
	t.Cleanup(c.srv.Close)
	return c
}

func (c *contract) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	i := c.n
	c.n++
	c.mu.Unlock()
	fail := func(format string, a ...any) {
		c.t.Errorf("call %d %s %s: "+format, append([]any{i + 1, r.Method, r.URL.String()}, a...)...)
		w.WriteHeader(http.StatusTeapot) // not retried, fails the client
	}
	if i >= len(c.calls) {
		fail("unexpected: the contract has only %d calls", len(c.calls))
		return
	}
	want := c.calls[i]
	if r.Method != want.method || r.URL.EscapedPath() != want.path {
		fail("want %s %s (%s)", want.method, want.path, want.doc)
		return
	}
	for k, v := range want.query {
		if got := r.URL.Query().Get(k); got != v {
			fail("query %s=%q, want %q (%s)", k, got, v, want.doc)
			return
		}
	}
	for k, v := range c.headers {
		if got := r.Header.Get(k); got != v {
			fail("header %s=%q, want %q", k, got, v)
			return
		}
	}
	b, _ := io.ReadAll(r.Body)
	if want.body != "" || len(strings.TrimSpace(string(b))) > 0 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			fail("Content-Type %q, want application/json (%s)", ct, want.doc)
			return
		}
		var got, exp any
		if err := json.Unmarshal(b, &got); err != nil {
			fail("body is not JSON: %v", err)
			return
		}
		if err := json.Unmarshal([]byte(want.body), &exp); err != nil {
			c.t.Fatalf("bad contract body %q: %v", want.body, err)
		}
		if !reflect.DeepEqual(got, exp) {
			fail("body\n got %s\nwant %s\n(%s)", b, want.body, want.doc)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(want.status)
	io.WriteString(w, want.reply)
}

// done checks every call in the contract was made.
func (c *contract) done() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n != len(c.calls) {
		c.t.Errorf("made %d calls, the contract has %d", c.n, len(c.calls))
	}
}

// fastRetry keeps 5xx retries quick in tests; it asserts no timing.
func fastRetry(o ProviderOptions) ProviderOptions {
	o.Attempts, o.Backoff = 3, time.Millisecond
	return o
}

// checkOneLine asserts an error is one line, wraps kind, says want, and
// does not hold the token.
func checkOneLine(t *testing.T, err error, kind error, token string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got none")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	if token != "" && strings.Contains(msg, token) {
		t.Errorf("error leaks the token: %q", msg)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q does not wrap %v", msg, kind)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
}

func TestInferProvider(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.example.invalid/acme/gitops.git", "github"},
		{"git@gitlab.example.invalid:group/sub/gitops.git", "gitlab"},
		{"https://gitea.example.invalid/acme/gitops", "gitea"},
		{"https://forgejo.example.invalid/acme/gitops", "gitea"},
		{"https://git.example.invalid/acme/gitops.git", ""},
	} {
		r, err := ParseRepoURL(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got := InferProvider(r.Host); got != tc.want {
			t.Errorf("InferProvider(%s) = %q, want %q", r.Host, got, tc.want)
		}
	}
}

func TestParseRepoURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want RepoRef
	}{
		{"https://user:s3cret@git.example.invalid/acme/gitops.git", RepoRef{"https", "git.example.invalid", "acme", "gitops"}},
		{"http://127.0.0.1:3000/adopt/repo", RepoRef{"http", "127.0.0.1:3000", "adopt", "repo"}},
		{"git@gitlab.example.invalid:group/sub/gitops.git", RepoRef{"https", "gitlab.example.invalid", "group/sub", "gitops"}},
		{"ssh://git@git.example.invalid:2222/acme/gitops.git", RepoRef{"https", "git.example.invalid", "acme", "gitops"}},
	} {
		got, err := ParseRepoURL(tc.url)
		if err != nil || got != tc.want {
			t.Errorf("ParseRepoURL(%s) = %+v, %v; want %+v", tc.url, got, err, tc.want)
		}
	}
	for _, bad := range []string{"/srv/git/gitops", "https://git.example.invalid/", "https://git.example.invalid/onlyname"} {
		if _, err := ParseRepoURL(bad); err == nil {
			t.Errorf("ParseRepoURL(%s): want an error", bad)
		}
	}
	_, err := ParseRepoURL("https://user:s3cret-token@git.example.invalid/")
	if err == nil || strings.Contains(err.Error(), "s3cret-token") {
		t.Errorf("error must exist and not leak the password: %v", err)
	}
}

func TestDefaultAPIURL(t *testing.T) {
	ghe := RepoRef{Scheme: "https", Host: "github.example.invalid", Owner: "a", Name: "b"}
	if got := DefaultAPIURL("github", ghe); got != "https://github.example.invalid/api/v3/" {
		t.Errorf("GitHub Enterprise API = %s", got)
	}
	public := githubPublicAPI()
	pub := RepoRef{Scheme: "https", Host: strings.TrimPrefix(public.Host, "api."), Owner: "a", Name: "b"}
	if got := DefaultAPIURL("github", pub); got != public.String() {
		t.Errorf("public GitHub API = %s, want go-github's default %s", got, public)
	}
	gl := RepoRef{Scheme: "https", Host: "gitlab.example.invalid", Owner: "g/s", Name: "b"}
	if got := DefaultAPIURL("gitlab", gl); got != "https://gitlab.example.invalid/api/v4/" {
		t.Errorf("GitLab API = %s", got)
	}
	gt := RepoRef{Scheme: "http", Host: "127.0.0.1:3000", Owner: "a", Name: "b"}
	if got := DefaultAPIURL("gitea", gt); got != "http://127.0.0.1:3000/" {
		t.Errorf("Gitea API = %s", got)
	}
}

func TestNewProviderUnknown(t *testing.T) {
	_, err := NewProvider("bitbucket", ProviderOptions{APIURL: "http://127.0.0.1/"})
	if !errors.Is(err, ErrPRProvider) || !strings.Contains(err.Error(), "github, gitlab, gitea") && !strings.Contains(err.Error(), "gitea, github, gitlab") {
		t.Errorf("unknown provider error = %v", err)
	}
}
