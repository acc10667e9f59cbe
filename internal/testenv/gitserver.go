package testenv

import (
	"bytes"
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// GitServer is the real git smart-HTTP server (`git http-backend` behind
// net/http/cgi) on loopback, serving bare repositories under Root with
// receive-pack enabled. With User set, every request needs basic auth.
type GitServer struct {
	Root string
	// URL is the base URL; a repo is URL + "/" + name + ".git".
	URL      string
	User     string
	Password string
	srv      *http.Server

	mu       sync.Mutex
	requests []string
}

// Requests are the requests served so far, each "METHOD path", in order.
func (g *GitServer) Requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.requests...)
}

// StartGitServer serves bare repos under a new temp dir. user and password
// may be empty for anonymous access.
func StartGitServer(user, password string) (*GitServer, error) {
	backend, err := gitHTTPBackend()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "adopt-git-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &GitServer{Root: root, URL: "http://" + l.Addr().String(), User: user, Password: password}
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=adopt-test"},
	}
	g.srv = &http.Server{Handler: g.auth(h), ReadHeaderTimeout: 10 * time.Second}
	go g.srv.Serve(l)
	return g, nil
}

func (g *GitServer) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests = append(g.requests, r.Method+" "+r.URL.Path)
		g.mu.Unlock()
		if g.User != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(g.User)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(g.Password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if r.Body != nil && r.ContentLength != 0 {
			// Read the whole request first: git http-backend copies a
			// Content-Length body in a loop that spins forever on a body cut
			// short, so a request that loses its connection never reaches it.
			body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
			if err != nil || (r.ContentLength > 0 && int64(len(body)) != r.ContentLength) {
				http.Error(w, "request body cut short", http.StatusBadRequest)
				return
			}
			// As a whole body of known length: Go's CGI handler refuses a
			// chunked one (400), which git sends for a push larger than
			// http.postBuffer (1 MiB).
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		}
		next.ServeHTTP(w, r)
	})
}

// gitHTTPBackend finds git's http-backend program.
func gitHTTPBackend() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git is needed for the test git server: %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("git-http-backend not found at %s: %w", p, err)
	}
	return p, nil
}

// CreateRepo makes a bare repo <name>.git with receive-pack on, seeded with
// the files (path -> content) as one commit on branch main, and returns its
// URL. files may be empty for an empty repo.
func (g *GitServer) CreateRepo(name string, files map[string]string) (string, error) {
	bare := filepath.Join(g.Root, name+".git")
	if err := run("", "git", "init", "-q", "--bare", "-b", "main", bare); err != nil {
		return "", err
	}
	if err := run(bare, "git", "config", "http.receivepack", "true"); err != nil {
		return "", err
	}
	if len(files) > 0 {
		work, err := os.MkdirTemp("", "adopt-seed-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(work)
		if err := WriteFiles(work, files); err != nil {
			return "", err
		}
		for _, args := range [][]string{
			{"init", "-q", "-b", "main"},
			{"add", "-A"},
			{"-c", "user.name=seed", "-c", "user.email=seed@example.invalid", "commit", "-q", "-m", "seed"},
			{"push", "-q", bare, "main"},
		} {
			if err := run(work, "git", args...); err != nil {
				return "", err
			}
		}
	}
	return g.URL + "/" + name + ".git", nil
}

// BarePath is the on-disk path of repo name, for direct inspection.
func (g *GitServer) BarePath(name string) string { return filepath.Join(g.Root, name+".git") }

// Close stops the server and removes the repos.
func (g *GitServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
	os.RemoveAll(g.Root)
}

// InitRepo makes dir a git repository (branch main) holding files as one
// commit, the way a user's local GitOps checkout looks.
func InitRepo(dir string, files map[string]string) error {
	if err := WriteFiles(dir, files); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=platform", "-c", "user.email=platform@example.invalid", "commit", "-q", "-m", "GitOps repo"},
	} {
		if err := run(dir, "git", args...); err != nil {
			return err
		}
	}
	return nil
}

// WriteFiles writes path -> content under dir, creating directories.
func WriteFiles(dir string, files map[string]string) error {
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(full, []byte(c), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReadFiles reads every file below dir, by slash-separated path relative
// to it (WriteFiles writes them back).
func ReadFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	return files, err
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Git runs git in dir as a test's user would, with no global or system
// config, no prompts and a fixed author, and returns its output trimmed,
// or an error that quotes it.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
