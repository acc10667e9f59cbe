package gitindex

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
)

var repoFiles = map[string]string{
	"k8s/system/hook.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  namespace: litellm-test\ndata:\n  a: b\n",
	"k8s/system/README.md":        "kubectl apply -f hook.yaml\n",
	"apps/web/kustomization.yaml": "resources: [deploy.yaml]\n",
	"apps/web/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
}

// TestLoadURL clones over real smart HTTP into memory, with basic auth, and
// checks a wrong password fails without echoing it.
func TestLoadURL(t *testing.T) {
	g, err := testenv.StartGitServer("alice", "s3cret-canary")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("gitops", repoFiles)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ix, err := Load(ctx, Source{Location: url, Auth: gitops.Auth{Username: "alice", Password: "s3cret-canary"}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "--git-dir", g.BarePath("gitops"), "rev-parse", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	if ix.Revision != strings.TrimSpace(string(head)) || ix.Source != url {
		t.Fatalf("revision %q source %q, want %q %q", ix.Revision, ix.Source, head, url)
	}
	if m := ix.Lookup("", "ConfigMap", "litellm-test", "hook"); len(m) != 1 || m[0].Path != "k8s/system/hook.yaml" || m[0].Line != 1 {
		t.Fatalf("hook: %+v", m)
	}
	if strings.Join(ix.Kustomizations, ",") != "apps/web" {
		t.Fatalf("kustomizations: %v", ix.Kustomizations)
	}
	// Credentials in the URL work too.
	withUser := strings.Replace(url, "http://", "http://alice:s3cret-canary@", 1)
	if _, err := Load(ctx, Source{Location: withUser}); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(url, "http://", "http://alice:wrong-canary@", 1)
	_, err = Load(ctx, Source{Location: bad})
	if err == nil || strings.Contains(err.Error(), "wrong-canary") || !strings.Contains(err.Error(), "ADOPT_GIT_TOKEN") {
		t.Fatalf("wrong password: %v", err)
	}
	_, err = Load(ctx, Source{Location: url, Auth: gitops.Auth{Username: "alice", Password: "s3cret-canary"}, Revision: "no-such-branch"})
	if err == nil || !strings.Contains(err.Error(), "no-such-branch") || strings.Contains(err.Error(), "s3cret-canary") {
		t.Fatalf("missing branch: %v", err)
	}
}

// TestLoadPath reads a local clone's committed tree, a subdirectory of it
// and a plain directory.
func TestLoadPath(t *testing.T) {
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("gitops", repoFiles)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "clone", "-q", url, filepath.Join(dir, "w")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ctx := context.Background()
	ix, err := Load(ctx, Source{Location: filepath.Join(dir, "w")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Revision) != 40 || len(ix.Manifests()) != 2 {
		t.Fatalf("revision %q, %d manifests", ix.Revision, len(ix.Manifests()))
	}
	// The bare repository, as a path and as a file:// URL, and the
	// checkout as a file:// URL read the same commit.
	for _, loc := range []string{g.BarePath("gitops"), "file://" + filepath.ToSlash(g.BarePath("gitops")), "file://" + filepath.ToSlash(filepath.Join(dir, "w"))} {
		bx, err := Load(ctx, Source{Location: loc})
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if bx.Revision != ix.Revision || len(bx.Manifests()) != 2 || bx.Source != loc {
			t.Fatalf("%s: revision %q source %q, %d manifests; want %q", loc, bx.Revision, bx.Source, len(bx.Manifests()), ix.Revision)
		}
	}
	sub, err := Load(ctx, Source{Location: filepath.Join(dir, "w", "k8s")})
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Manifests()) != 1 || sub.Manifests()[0].Path != "k8s/system/hook.yaml" {
		t.Fatalf("subtree: %+v", sub.Manifests())
	}
	plain := t.TempDir()
	if err := testenv.WriteFiles(plain, repoFiles); err != nil {
		t.Fatal(err)
	}
	px, err := Load(ctx, Source{Location: plain})
	if err != nil {
		t.Fatal(err)
	}
	if px.Revision != "" || len(px.Manifests()) != 2 {
		t.Fatalf("plain dir: %q %d", px.Revision, len(px.Manifests()))
	}
	if _, err := Load(ctx, Source{Location: filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "Give a local Git checkout or a URL") {
		t.Fatalf("missing path: %v", err)
	}
}

// TestInvalidURLHidesUserinfo checks that a token given as the URL's user
// (no password) does not reach the error about an invalid URL.
func TestInvalidURLHidesUserinfo(t *testing.T) {
	_, err := Load(context.Background(), Source{Location: "https://tok3nSECRET@git.example.invalid/%zz.git"})
	if err == nil || !strings.Contains(err.Error(), "is not valid") || strings.Contains(err.Error(), "tok3nSECRET") {
		t.Fatalf("error %v", err)
	}
}
