package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileConvergesAfterEachFaultOnGitea (issue 43): on the real
// kube-apiserver and a real Gitea, each write of a run fails in turn,
// when a group is opened and when it is updated: the store's record (the
// API server answers 500 to its create or update, through the fault
// proxy), the push (Gitea's git-receive-pack answers 502) and the pull
// request's create or edit (Gitea's API answers 502). The failed run
// reports the group failed. The next run is opened, updated or unchanged,
// never held about adopt's own commit, and the branch, the pull request's
// head, its description's record and the store's record then all name
// the same commit; the run after that pushes and edits nothing.
func TestReconcileConvergesAfterEachFaultOnGitea(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	g := giteaUp()
	for _, stage := range []string{"open", "update"} {
		for _, fail := range []string{"save", "push", "open"} {
			t.Run(stage+"/"+fail, func(t *testing.T) {
				ns, lockNS := cp.Namespace(t), cp.Namespace(t)
				repoName := giteaName(t, "faults")
				repoURL, err := g.CreateRepo(ctx, repoName)
				if err != nil {
					t.Fatal(err)
				}
				// Gitea behind a proxy that fails, while armed, the one
				// kind of write under test.
				var armed atomic.Bool
				target, _ := url.Parse(g.URL)
				toGitea := httputil.NewSingleHostReverseProxy(target)
				gp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					push := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack")
					pr := (r.Method == http.MethodPost || r.Method == http.MethodPatch) && strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.URL.Path, "/pulls")
					if armed.Load() && (fail == "push" && push || fail == "open" && pr) {
						http.Error(w, "injected: bad gateway", http.StatusBadGateway)
						return
					}
					toGitea.ServeHTTP(w, r)
				}))
				defer gp.Close()
				viaProxy := strings.Replace(repoURL, strings.TrimSuffix(g.URL, "/"), gp.URL, 1)
				branch := "adopt/faults/adopt-" + ns
				kubeconfig := cp.Kubeconfig
				run := func() (reconcile.Group, int, string) {
					t.Helper()
					args := []string{"--kubeconfig", kubeconfig, "reconcile", "-n", ns, "--repo", viaProxy, "--provider", "gitea", "--api-url", gp.URL + "/",
						"--git-user", g.User, "--git-token", g.Token, "--argocd-version", testenv.ArgoCDCurrent, "--author", "adopt <adopt@example.invalid>",
						"-o", "json", "-q", "--lock-namespace", lockNS, "--cluster-name", "faults", "--journal-dir", t.TempDir()}
					var out, errb bytes.Buffer
					code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
					var rep reconcile.Report
					if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
						t.Fatalf("reconcile: exit %d: %v: %s%s", code, err, out.String(), errb.String())
					}
					for _, gr := range rep.Groups {
						if gr.Branch == branch {
							return gr, code, errb.String()
						}
					}
					t.Fatalf("no group on %s: %+v (%s)", branch, rep.Groups, errb.String())
					return reconcile.Group{}, code, ""
				}
				want := func(gr reconcile.Group, outcomes ...string) {
					t.Helper()
					for _, o := range outcomes {
						if gr.Outcome == o {
							return
						}
					}
					t.Fatalf("outcome %q (%s), want one of %v", gr.Outcome, gr.Why, outcomes)
				}
				kubectlApplyConfigMap(ctx, t, cp, ns, "a", "1")
				after := []string{reconcile.Opened}
				if stage == "update" {
					gr, _, _ := run()
					want(gr, reconcile.Opened)
					kubectlApplyConfigMap(ctx, t, cp, ns, "b", "2")
					after = []string{reconcile.Updated, reconcile.Unchanged}
				}

				// The run with the fault.
				if fail == "save" {
					method, path := http.MethodPost, "/namespaces/"+lockNS+"/configmaps"
					if stage == "update" {
						h := sha256.Sum256([]byte(branch))
						method, path = http.MethodPut, path+"/adopt-reconcile-"+hex.EncodeToString(h[:8])
					}
					fp, err := testenv.StartFaultProxy(cp, t.TempDir(), testenv.Fault{Kind: testenv.InternalError, Method: method, Path: path, Times: 1})
					if err != nil {
						t.Fatal(err)
					}
					defer fp.Close()
					kubeconfig = fp.Kubeconfig
					defer func() {
						if fp.Injected(testenv.InternalError) != 1 {
							t.Errorf("the store's %s was never refused", method)
						}
					}()
				}
				armed.Store(true)
				gr, code, errOut := run()
				armed.Store(false)
				kubeconfig = cp.Kubeconfig
				if gr.Outcome != reconcile.Failed || code != ExitPartial {
					t.Fatalf("the run with the %s failing: exit %d, %s (%s), want the group failed (%s)", fail, code, gr.Outcome, gr.Why, errOut)
				}
				t.Logf("failed: %s", gr.Why)

				// The next run converges.
				gr, code, errOut = run()
				if code != 0 {
					t.Fatalf("the run after the fault: exit %d: %s (%s)", code, gr.Why, errOut)
				}
				want(gr, after...)
				prs, err := g.PullRequests(ctx, repoName)
				if err != nil {
					t.Fatal(err)
				}
				var open []testenv.GiteaPR
				for _, pr := range prs {
					if pr.State == "open" {
						open = append(open, pr)
					}
				}
				if len(open) != 1 {
					t.Fatalf("%d open pull requests after the fault, want 1", len(open))
				}
				tip := tipOf(t, giteaRepoDir(g, repoName), branch).Hash.String()
				m := regexp.MustCompile(`<!-- adopt-reconcile digest=\S+ head=([0-9a-f]+)`).FindStringSubmatch(open[0].Body)
				cm, err := cp.Clientset().CoreV1().ConfigMaps(lockNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=adopt"})
				if err != nil || len(cm.Items) != 1 {
					t.Fatalf("the store: %v, %d records", err, len(cm.Items))
				}
				stored := cm.Items[0].Annotations["adopt.dev/head"]
				if m == nil || m[1] != tip || stored != tip {
					t.Errorf("records disagree: branch %.12s, description %v, store %.12s", tip, m, stored)
				}
				objs := cm.Items[0].Data["plan.yaml"]
				for _, name := range map[string][]string{"open": {"a"}, "update": {"a", "b"}}[stage] {
					if !strings.Contains(objs, fmt.Sprintf("name: %s\n", name)) {
						t.Errorf("the stored plan lacks ConfigMap %s", name)
					}
				}

				// The run after that writes nothing.
				body := open[0].Body
				gr, _, _ = run()
				want(gr, reconcile.Unchanged)
				if now := tipOf(t, giteaRepoDir(g, repoName), branch).Hash.String(); now != tip {
					t.Errorf("the run after convergence moved %s to %.12s", branch, now)
				}
				prs, err = g.PullRequests(ctx, repoName)
				if err != nil {
					t.Fatal(err)
				}
				for _, pr := range prs {
					if pr.Number == open[0].Number && pr.Body != body {
						t.Errorf("the run after convergence edited the pull request's description")
					}
				}
			})
		}
	}
}
