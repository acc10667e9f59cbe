package gitops

// Git and hosting-provider faults (issue 8), each on the real parts: the real
// git http-backend, and the real Gitea. What a real server cannot do on
// demand (drop the connection mid-push, answer 5xx) is injected by a small
// proxy on loopback, bounded in count.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// hasBranch reports whether a bare repo on disk has the branch.
func hasBranch(t *testing.T, bare, branch string) bool {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Reference(plumbing.NewBranchReferenceName(branch), true)
	return err == nil
}

// refs lists every ref of a bare repo with the git CLI, to compare the
// remote before and after a failed push.
func refs(t *testing.T, bare string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", bare, "for-each-ref", "--format=%(refname) %(objectname)").CombinedOutput()
	if err != nil {
		t.Fatalf("git for-each-ref: %v: %s", err, out)
	}
	return string(out)
}

// randomFile is incompressible data, so a push carries a pack large enough
// to be cut in the middle.
func randomFile(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return []byte(hex.EncodeToString(b))
}

func checkGitError(t *testing.T, err error, kind error, secrets []string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want an error, got none")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("error leaks a credential: %q", msg)
		}
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

// TestPushRejectedNonFastForwardThenRecovered: another writer pushes the
// branch while each commit is being built. Publish rebuilds on top of the
// other writer's commit and retries; it recovers when the race stops, and
// when the race never stops it gives up after the bound with the other
// writer's commit intact, never forcing.
func TestPushRejectedNonFastForwardThenRecovered(t *testing.T) {
	g := startServer(t, "", "")
	for _, tc := range []struct {
		name  string
		races int // how many builds another writer races
		ok    bool
	}{
		{"recovered", 2, true},
		{"gives up", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := "nff-" + strings.ReplaceAll(tc.name, " ", "-")
			url := seed(t, g, repo)
			bare := g.BarePath(repo)
			ctx := context.Background()
			ours, err := Clone(ctx, CloneOptions{URL: url})
			if err != nil {
				t.Fatal(err)
			}
			defer ours.Close()
			var theirs []string
			builds := 0
			res, err := ours.Publish(ctx, Change{Branch: "adopt/p", Base: "main", Author: author,
				Build: func(r *Repo) (Content, error) {
					builds++
					if builds <= tc.races {
						// The other writer lands a commit between our clone/fetch and our push.
						other := publish(t, url, Auth{}, Change{Branch: "adopt/p", Base: "main", Author: author,
							Build: files(map[string]string{"theirs.yaml": "n: " + string(rune('0'+builds%10)) + "\n"}, "theirs")}, PublishOptions{})
						theirs = append(theirs, other.Commit)
					}
					return Content{Files: map[string][]byte{"ours.yaml": []byte("ours\n")}, Message: "ours"}, nil
				}}, PublishOptions{Attempts: 4})
			tip := branchTip(t, bare, "adopt/p")
			if !tc.ok {
				checkGitError(t, err, ErrNonFastForward, nil, "adopt/p", url, "gave up after 4 attempts", "Run again")
				if builds != 4 {
					t.Errorf("built %d times, want the bound 4", builds)
				}
				if tip.Hash.String() != theirs[len(theirs)-1] || tip.Message != "theirs" {
					t.Fatalf("the other writer's commit was overwritten: tip %s %q", tip.Hash, tip.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("publish did not recover: %v", err)
			}
			if !res.Pushed || res.Attempts != tc.races+1 {
				t.Fatalf("result %+v, want pushed after %d attempts", res, tc.races+1)
			}
			if tip.Message != "ours" || tip.NumParents() != 1 || tip.ParentHashes[0].String() != theirs[len(theirs)-1] {
				t.Fatalf("tip %q with parents %v, want ours on top of %s", tip.Message, tip.ParentHashes, theirs[len(theirs)-1])
			}
			if fileAt(t, tip, "theirs.yaml") == "" || fileAt(t, tip, "ours.yaml") != "ours\n" {
				t.Fatal("a writer's file is missing")
			}
			// Exactly one commit of ours on the branch: no duplicate from the retries.
			n := 0
			for c := tip; ; {
				if c.Message == "ours" {
					n++
				}
				if c.NumParents() == 0 {
					break
				}
				if c, err = c.Parent(0); err != nil {
					t.Fatal(err)
				}
			}
			if n != 1 {
				t.Fatalf("%d commits of ours on the branch, want 1", n)
			}
		})
	}
}

// TestPreReceiveHookRefusesPush: the server's pre-receive hook refuses the
// push. The error is one line that carries the hook's own message and
// wraps ErrPushRejected; the remote is exactly as before (no branch, no
// ref moved); a second run without the hook pushes one commit.
func TestPreReceiveHookRefusesPush(t *testing.T) {
	g := startServer(t, "alice", "hook-pass-CANARY-31")
	url := seed(t, g, "hooked")
	bare := g.BarePath("hooked")
	hook := filepath.Join(bare, "hooks", "pre-receive")
	script := "#!/bin/sh\necho 'policy: branches adopt/* need a ticket reference (POL-7)' >&2\nexit 1\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	before := refs(t, bare)
	auth := Auth{Username: "alice", Password: "hook-pass-CANARY-31"}
	c := Change{Branch: "adopt/hook", Base: "main", Author: author, Build: files(map[string]string{"a.yaml": "a\n"}, "adopt: a")}
	r, err := Clone(context.Background(), CloneOptions{URL: url, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Publish(context.Background(), c, PublishOptions{})
	checkGitError(t, err, ErrPushRejected, []string{"hook-pass-CANARY-31"}, "adopt/hook", url, "pre-receive hook declined", "POL-7")
	if after := refs(t, bare); after != before {
		t.Fatalf("a refused push changed the remote:\nbefore %s\nafter  %s", before, after)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	res := publish(t, url, auth, c, PublishOptions{})
	tip := branchTip(t, bare, "adopt/hook")
	if !res.Pushed || tip.Message != "adopt: a" || tip.ParentHashes[0] != branchTip(t, bare, "main").Hash {
		t.Fatalf("push after the hook was lifted: %+v, tip %q", res, tip.Message)
	}
}

// cutProxy is a TCP proxy on loopback in front of a git server that drops
// the connection once, in the middle of the first git-receive-pack request
// body it sees. Other traffic passes through.
type cutProxy struct {
	l      net.Listener
	target string
	after  int // body bytes forwarded before the cut

	mu  sync.Mutex
	cut int
}

func startCutProxy(t *testing.T, target string, after int) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, after: after}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return p
}

func (p *cutProxy) Addr() string { return p.l.Addr().String() }

// Cuts is how many connections were dropped.
func (p *cutProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { io.Copy(c, s); c.Close() }()
	var seen []byte
	buf := make([]byte, 32*1024)
	armed := -1 // offset in seen where the receive-pack body starts
	for {
		n, err := c.Read(buf)
		if n > 0 {
			seen = append(seen, buf[:n]...)
			if armed < 0 {
				p.mu.Lock()
				spent := p.cut > 0
				p.mu.Unlock()
				if i := bytes.Index(seen, []byte("POST ")); !spent && i >= 0 && bytes.Contains(seen[i:], []byte("git-receive-pack ")) {
					if j := bytes.Index(seen[i:], []byte("\r\n\r\n")); j >= 0 {
						armed = i + j + 4
					}
				}
			}
			if armed >= 0 && len(seen)-armed >= p.after {
				// Forward up to the cut point, then drop both sides.
				s.Write(seen[len(seen)-n : armed+p.after])
				p.mu.Lock()
				p.cut++
				p.mu.Unlock()
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0)
				}
				return
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
			if armed < 0 && len(seen) > 1<<20 {
				seen = seen[len(seen)-4096:] // keep scanning bounded
			}
		}
		if err != nil {
			return
		}
	}
}

// TestNetworkDropsMidPush: the connection is cut while the pack is being
// sent. The error is one redacted line saying the push failed and to run
// again; the remote is unchanged; running again (same input) pushes exactly
// one commit.
func TestNetworkDropsMidPush(t *testing.T) {
	g := startServer(t, "alice", "drop-pass-CANARY-77")
	seed(t, g, "dropped")
	bare := g.BarePath("dropped")
	u, _ := url.Parse(g.URL)
	p := startCutProxy(t, u.Host, 16*1024)
	viaProxy := "http://alice:drop-pass-CANARY-77@" + p.Addr() + "/dropped.git"
	big := randomFile(t, 256*1024)
	c := Change{Branch: "adopt/drop", Base: "main", Author: author,
		Build: func(*Repo) (Content, error) {
			return Content{Files: map[string][]byte{"big.yaml": big, "a.yaml": []byte("a\n")}, Message: "adopt: big"}, nil
		}}
	before := refs(t, bare)
	r, err := Clone(context.Background(), CloneOptions{URL: viaProxy})
	if err != nil {
		t.Fatalf("clone through the proxy: %v", err)
	}
	defer r.Close()
	_, err = r.Publish(context.Background(), c, PublishOptions{})
	if p.Cuts() != 1 {
		t.Fatalf("the proxy cut %d connections, want 1 (err %v)", p.Cuts(), err)
	}
	checkGitError(t, err, ErrGit, []string{"drop-pass-CANARY-77"}, "push adopt/drop to http://"+p.Addr()+"/dropped.git", "run again")
	if after := refs(t, bare); after != before {
		t.Fatalf("a cut push changed the remote:\nbefore %s\nafter  %s", before, after)
	}
	// Run again through the same proxy (its one cut is spent).
	res := publish(t, viaProxy, Auth{}, c, PublishOptions{})
	tip := branchTip(t, bare, "adopt/drop")
	if !res.Pushed || tip.Message != "adopt: big" || tip.ParentHashes[0] != branchTip(t, bare, "main").Hash {
		t.Fatalf("re-run after the drop: %+v, tip %q", res, tip.Message)
	}
	if fileAt(t, tip, "big.yaml") != string(big) {
		t.Fatal("the pushed file differs")
	}
	again := publish(t, viaProxy, Auth{}, c, PublishOptions{})
	if again.Changed || branchTip(t, bare, "adopt/drop").Hash != tip.Hash {
		t.Fatalf("a third run added a commit: %+v", again)
	}
}

// giteaFaults is a reverse proxy in front of the real Gitea's API. Each
// rule answers a request matching method and path suffix, a bounded number
// of times, with 503 without forwarding (or, with forward set, forwards it
// and then answers 502, as a gateway that lost the reply would).
type giteaFaults struct {
	mu    sync.Mutex
	rules []*faultRule
	seen  map[string]int // method+path -> requests seen
}

type faultRule struct {
	method, suffix string
	times          int // <0: every time
	forward        bool
	hit            int
}

func startGiteaFaults(t *testing.T, target string, rules ...*faultRule) (*giteaFaults, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	f := &giteaFaults{rules: rules, seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen[r.Method+" "+r.URL.Path]++
		var hit *faultRule
		for _, rule := range f.rules {
			if r.Method == rule.method && strings.HasSuffix(r.URL.Path, rule.suffix) && (rule.times < 0 || rule.hit < rule.times) {
				rule.hit++
				hit = rule
				break
			}
		}
		f.mu.Unlock()
		switch {
		case hit == nil:
			rp.ServeHTTP(w, r)
		case hit.forward:
			rp.ServeHTTP(httptest.NewRecorder(), r)
			http.Error(w, "bad gateway (injected after forwarding)", http.StatusBadGateway)
		default:
			http.Error(w, "service unavailable (injected)", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL + "/"
}

func (f *giteaFaults) count(method, suffix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, v := range f.seen {
		if strings.HasPrefix(k, method+" ") && strings.HasSuffix(k, suffix) {
			n += v
		}
	}
	return n
}

// TestProviderAnswers5xx drives the real Gitea through the provider's
// public API with 5xx injected in front of it: transient 503s are retried
// and the pull request is opened once; a create whose reply was lost (502
// after Gitea made the pull request) is retried without opening a second
// one; a provider that keeps failing gives one clear line after the bounded
// attempts and nothing is opened.
func TestProviderAnswers5xx(t *testing.T) {
	g := startGitea(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		rule  *faultRule
		ok    bool
		calls int // requests the rule's method and path must have seen
	}{
		{"transient 503 then recovered", &faultRule{method: http.MethodGet, suffix: "/pulls", times: 2}, true, 3},
		{"reply to create lost", &faultRule{method: http.MethodPost, suffix: "/pulls", times: 1, forward: true}, true, 2},
		{"persistent 503", &faultRule{method: http.MethodGet, suffix: "/pulls", times: -1}, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "faults-" + strings.ReplaceAll(tc.name, " ", "-")
			cloneURL, err := g.CreateRepo(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.PushBranch(ctx, cloneURL, "adopt/p", map[string]string{"apps/a.yaml": "kind: Application\n"}); err != nil {
				t.Fatal(err)
			}
			ref, err := ParseRepoURL(cloneURL)
			if err != nil {
				t.Fatal(err)
			}
			f, api := startGiteaFaults(t, g.URL, tc.rule)
			p, err := NewProvider("gitea", fastRetry(ProviderOptions{APIURL: api, Token: g.Token}))
			if err != nil {
				t.Fatal(err)
			}
			pr, err := p.EnsurePR(ctx, PROptions{Repo: ref, Head: "adopt/p", Base: "main", Title: "adopt: faults", Body: "body"})
			prs, lerr := g.PullRequests(ctx, name)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if !tc.ok {
				checkOneLine(t, err, ErrPRUnavailable, g.Token, "gitea", ref.FullName(), "503", "try again later")
				if got := f.count(tc.rule.method, tc.rule.suffix); got != tc.calls {
					t.Errorf("%d requests reached the proxy, want the bound %d", got, tc.calls)
				}
				if len(prs) != 0 {
					t.Fatalf("a pull request was opened although the provider kept failing: %+v", prs)
				}
				return
			}
			if err != nil {
				t.Fatalf("EnsurePR under %s: %v", tc.name, err)
			}
			if tc.rule.hit == 0 {
				t.Fatal("the fault was never injected")
			}
			if got := f.count(tc.rule.method, tc.rule.suffix); got < tc.calls {
				t.Errorf("%d %s requests, want at least %d (retried)", got, tc.rule.method, tc.calls)
			}
			if len(prs) != 1 || prs[0].Number != pr.Number || prs[0].Head.Ref != "adopt/p" {
				t.Fatalf("want exactly the one pull request #%d, Gitea has %+v", pr.Number, prs)
			}
		})
	}
}

// TestPushServerFailure: a Git server (or a proxy before it) that answers
// 502 to the push, on the real git http-backend behind a proxy, is an
// error that says what the server answered and what to do, not go-git's
// bare "unexpected requesting … status code".
func TestPushServerFailure(t *testing.T) {
	g := startServer(t, "", "")
	url0 := seed(t, g, "push-502")
	u, err := url.Parse(g.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			http.Error(w, "bad gateway (injected)", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	r, err := Clone(context.Background(), CloneOptions{URL: strings.Replace(url0, g.URL, srv.URL, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Publish(context.Background(), Change{Branch: "adopt/c/app", Base: "main", Author: author, Build: files(map[string]string{"a.yaml": "a\n"}, "a")}, PublishOptions{})
	checkGitError(t, err, ErrGit, nil, "answered 502", "a failure on its side; run again later")
}
