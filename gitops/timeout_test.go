package gitops

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGitCallsHaveADeadline (issue 43): a git server that accepts and
// never answers ends the call with ErrTimeout and a message naming the
// repository and --git-timeout, instead of hanging the run: a listener
// that never answers (the clone's listing), and the real git http-backend
// behind a proxy that holds every push (the push, after a listing and a
// fetch that went through). Nothing reaches the held push's branch.
func TestGitCallsHaveADeadline(t *testing.T) {
	ctx := context.Background()
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			go func() { <-stop; c.Close() }() // accepted, never answered
		}
	}()
	_, err = Clone(ctx, CloneOptions{URL: "http://" + hang.Addr().String() + "/org/gitops.git", Auth: Auth{Timeout: 300 * time.Millisecond}})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "--git-timeout") || !strings.Contains(err.Error(), hang.Addr().String()) {
		t.Fatalf("clone from a server that never answers: %v; want ErrTimeout naming the repository and --git-timeout", err)
	}

	g := startServer(t, "", "")
	seed(t, g, "held")
	target, _ := url.Parse(g.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			select { // held until the client gives up or the test ends
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer held.Close()
	defer close(release) // before Close, which waits for the held request
	r, err := Clone(ctx, CloneOptions{URL: held.URL + "/held.git", Auth: Auth{Timeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Publish(ctx, Change{Branch: "adopt/held", Base: "main", Author: author, Build: files(map[string]string{"a.yaml": "a\n"}, "a")}, PublishOptions{})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "push adopt/held to") {
		t.Fatalf("a held push: %v; want ErrTimeout for the push", err)
	}
	if out, err := exec.Command("git", "--git-dir", g.BarePath("held"), "branch", "--list", "adopt/held").Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("the held push reached the repository: %q %v", out, err)
	}
}
