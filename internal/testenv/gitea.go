package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// GiteaVersion is the Gitea release the tests and the demo run.
const GiteaVersion = "v1.26.0"

// Gitea is a real Gitea server on loopback with sqlite, no SSH and one
// admin user, for the pull-request tests and the demo.
type Gitea struct {
	// URL is the web and API root, "http://127.0.0.1:PORT/".
	URL string
	// User and Password are the admin's; Token is an all-scopes token.
	User     string
	Password string
	Token    string
	// Dir holds app.ini, the database, repositories and logs.
	Dir string

	procs *ControlPlane // process holder: spawning, Stop and LogTail
	hc    *http.Client
}

// GiteaBinary builds Gitea once (cached outside the repo) and returns the
// binary path and the module directory its static files live in.
func GiteaBinary() (bin, modDir string, err error) {
	cache, err := buildTool("Gitea", "build-gitea.sh", 5, GiteaVersion)
	if err != nil {
		return "", "", err
	}
	md, err := os.ReadFile(filepath.Join(cache, "moddir"))
	if err != nil {
		return "", "", err
	}
	return filepath.Join(cache, "gitea"), strings.TrimSpace(string(md)), nil
}

// StartGitea builds Gitea if needed, writes app.ini, migrates the database,
// creates the admin user with a token, and serves on a random loopback
// port. The server dies with this process. Call Stop when done.
func StartGitea(ctx context.Context) (*Gitea, error) {
	bin, modDir, err := GiteaBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "adopt-gitea-")
	if err != nil {
		return nil, err
	}
	g := &Gitea{Dir: dir, User: "adopt-admin", Password: "pw-" + randomToken(), procs: &ControlPlane{Dir: dir}, hc: &http.Client{Timeout: 30 * time.Second}}
	if err := g.start(ctx, bin, modDir); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

func (g *Gitea) start(ctx context.Context, bin, modDir string) error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	g.URL = fmt.Sprintf("http://127.0.0.1:%d/", ports[0])
	u, err := user.Current()
	if err != nil {
		return err
	}
	ini := filepath.Join(g.Dir, "app.ini")
	if err := atomicfile.WriteFile(ini, []byte(giteaINI(g.Dir, modDir, u.Username, ports[0])), 0o600); err != nil {
		return err
	}
	env := append(os.Environ(), "GITEA_WORK_DIR="+g.Dir, "HOME="+filepath.Join(g.Dir, "home"), "GIT_CONFIG_NOSYSTEM=1")
	if os.Geteuid() == 0 {
		env = append(env, "GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT=true")
	}
	runGitea := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"-c", ini, "--work-path", g.Dir}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("gitea %s: %v: %s", args[0], err, lastLines(string(out), 5))
		}
		return string(out), nil
	}
	if _, err := runGitea("migrate"); err != nil {
		return err
	}
	out, err := runGitea("admin", "user", "create", "--admin", "--username", g.User, "--password", g.Password,
		"--email", g.User+"@example.invalid", "--must-change-password=false", "--access-token")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Access token was successfully created") {
			f := strings.Fields(line)
			g.Token = f[len(f)-1]
		}
	}
	if len(g.Token) < 20 {
		return fmt.Errorf("gitea admin user create printed no access token: %s", lastLines(out, 3))
	}
	web, err := g.procs.spawnEnv(Options{}, env[len(os.Environ()):], "gitea", bin, "-c", ini, "--work-path", g.Dir, "web")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, web, func() error {
		return g.api(ctx, http.MethodGet, "version", g.Token, nil, nil)
	}); err != nil {
		return fmt.Errorf("gitea did not start: %w; log: %s", err, g.LogTail(2000))
	}
	return nil
}

func giteaINI(dir, modDir, runUser string, port int) string {
	return fmt.Sprintf(`APP_NAME = adopt-test
RUN_MODE = prod
RUN_USER = %[3]s
WORK_PATH = %[1]s

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db

[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[4]d
ROOT_URL = http://127.0.0.1:%[4]d/
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true
APP_DATA_PATH = %[1]s/data
STATIC_ROOT_PATH = %[2]s

[security]
INSTALL_LOCK = true
SECRET_KEY = %[5]s
INTERNAL_TOKEN = %[6]s

[service]
DISABLE_REGISTRATION = true

[mailer]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[1]s/log
`, dir, modDir, runUser, port, randomToken(), "adopt"+randomToken()+randomToken())
}

// api calls the Gitea API as admin (token) and decodes the JSON answer
// into out when it is not nil. A non-2xx answer is an error with its body.
func (g *Gitea) api(ctx context.Context, method, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.URL+"api/v1/"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	} else {
		req.SetBasicAuth(g.User, g.Password)
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gitea %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// CreateRepo creates a public repository owned by the admin with an
// initial commit on main (auto_init), and returns its clone URL.
func (g *Gitea) CreateRepo(ctx context.Context, name string) (string, error) {
	var r struct {
		CloneURL string `json:"clone_url"`
	}
	err := g.api(ctx, http.MethodPost, "user/repos", g.Token, map[string]any{
		"name": name, "auto_init": true, "default_branch": "main", "readme": "Default",
	}, &r)
	return r.CloneURL, err
}

// CreateToken creates an admin token limited to scopes (for example
// "read:repository") and returns it.
func (g *Gitea) CreateToken(ctx context.Context, name string, scopes ...string) (string, error) {
	var r struct {
		SHA1 string `json:"sha1"`
	}
	err := g.api(ctx, http.MethodPost, "users/"+g.User+"/tokens", "", map[string]any{"name": name, "scopes": scopes}, &r)
	return r.SHA1, err
}

// PushBranch clones repoURL, commits files on a new branch from main and
// pushes it, with the git CLI. The token travels in a header, not the URL.
func (g *Gitea) PushBranch(ctx context.Context, repoURL, branch string, files map[string]string) error {
	work, err := os.MkdirTemp("", "adopt-gitea-push-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	auth := "http.extraHeader=Authorization: token " + g.Token
	steps := [][]string{
		{"-c", auth, "clone", "-q", repoURL, "."},
		{"checkout", "-q", "-b", branch},
	}
	for _, s := range steps {
		if err := run(work, "git", s...); err != nil {
			return redactToken(err, g.Token)
		}
	}
	if err := WriteFiles(work, files); err != nil {
		return err
	}
	for _, s := range [][]string{
		{"add", "-A"},
		{"-c", "user.name=adopt-test", "-c", "user.email=adopt-test@example.invalid", "commit", "-q", "-m", "adopt: test change"},
		{"-c", auth, "push", "-q", "origin", branch},
	} {
		if err := run(work, "git", s...); err != nil {
			return redactToken(err, g.Token)
		}
	}
	return nil
}

func redactToken(err error, token string) error {
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), token, "***"))
}

// GiteaPR is a pull request as the Gitea API reports it.
type GiteaPR struct {
	Number  int64  `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	State   string `json:"state"`
	HTMLURL string `json:"html_url"`
	Draft   bool   `json:"draft"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	RequestedReviewers []struct {
		Login string `json:"login"`
	} `json:"requested_reviewers"`
}

// LabelNames lists the pull request's label names.
func (p GiteaPR) LabelNames() []string {
	var n []string
	for _, l := range p.Labels {
		n = append(n, l.Name)
	}
	return n
}

// PullRequests reads every pull request of the admin's repo, any state.
func (g *Gitea) PullRequests(ctx context.Context, repo string) ([]GiteaPR, error) {
	var prs []GiteaPR
	err := g.api(ctx, http.MethodGet, "repos/"+g.User+"/"+repo+"/pulls?state=all&limit=50", g.Token, nil, &prs)
	return prs, err
}

// Comments reads the bodies of the comments on issue or pull request
// number of the admin's repo, oldest first.
func (g *Gitea) Comments(ctx context.Context, repo string, number int64) ([]string, error) {
	var cs []struct {
		Body string `json:"body"`
	}
	if err := g.api(ctx, http.MethodGet, fmt.Sprintf("repos/%s/%s/issues/%d/comments", g.User, repo, number), g.Token, nil, &cs); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Body)
	}
	return out, nil
}

// ClosePullRequest closes pull request number of the admin's repo
// without merging it, as a reviewer who declines it would.
func (g *Gitea) ClosePullRequest(ctx context.Context, repo string, number int64) error {
	return g.api(ctx, http.MethodPatch, fmt.Sprintf("repos/%s/%s/pulls/%d", g.User, repo, number), g.Token, map[string]any{"state": "closed"}, nil)
}

// MergePullRequest merges pull request number of the admin's repo with a
// merge commit, as a reviewer would. Gitea checks mergeability in the
// background after each push and refuses the merge until it has: the
// merge is asked again every half second until Gitea takes it or ctx ends.
func (g *Gitea) MergePullRequest(ctx context.Context, repo string, number int64) error {
	for {
		err := g.api(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/merge", g.User, repo, number), g.Token, map[string]any{"Do": "merge"}, nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("merge pull request #%d of %s: %w (last answer: %v)", number, repo, ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// CreateUser creates a plain user (for reviewers) with a random password.
func (g *Gitea) CreateUser(ctx context.Context, name string) error {
	return g.api(ctx, http.MethodPost, "admin/users", g.Token, map[string]any{
		"username": name, "email": name + "@example.invalid", "password": "pw-" + randomToken(), "must_change_password": false,
	}, nil)
}

// AddCollaborator gives user write access to the admin's repo.
func (g *Gitea) AddCollaborator(ctx context.Context, repo, name string) error {
	return g.api(ctx, http.MethodPut, "repos/"+g.User+"/"+repo+"/collaborators/"+name, g.Token, map[string]any{"permission": "write"}, nil)
}

// LogTail returns the end of Gitea's log, for failure reports.
func (g *Gitea) LogTail(n int) string { return g.procs.LogTail("gitea", n) }

// Stop kills Gitea and removes Dir. It is safe to call twice.
func (g *Gitea) Stop() { g.procs.Stop() }

// PushRepo force-pushes branch of the local repository dir to repoURL, so
// a Gitea repository starts as a copy of a local one (the demo's).
func (g *Gitea) PushRepo(ctx context.Context, dir, repoURL, branch string) error {
	auth := "http.extraHeader=Authorization: token " + g.Token
	if err := run(dir, "git", "-c", auth, "push", "-q", "--force", repoURL, branch+":"+branch); err != nil {
		return redactToken(err, g.Token)
	}
	return nil
}
