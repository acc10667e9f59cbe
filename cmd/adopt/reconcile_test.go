package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/argoproj/argo-cd/v2/pkg/apiclient"
	accountpkg "github.com/argoproj/argo-cd/v2/pkg/apiclient/account"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileOnRealArgoCDv3 (issue 37): adopt reconcile, run again and
// again as a schedule would, on the real kube-apiserver, a real Gitea and
// a real Argo CD v3.2.6.
// A hand-applied object opens one pull request; a run with nothing new
// pushes and edits nothing; a new object in the group is a new commit on
// the same pull request; a branch someone else pushed to is left alone;
// --max-open-prs makes a group wait; a pull request closed without merging
// is a decline until an object of it changes, then it is proposed again; a
// merged one is finalized once its Application is Synced and Healthy,
// never syncing it without --sync; a Lease another run holds stops the
// run. Every answer comes from Gitea's API and the cluster, never from
// local state.
func TestReconcileOnRealArgoCDv3(t *testing.T) { reconcileLoop(t, testenv.ArgoCDCurrent, true) }

// TestReconcileOnRealArgoCDv2: on Argo CD v2.14.21, run as the chart's
// ServiceAccount (impersonated) with the chart's RBAC, scoped to the two
// namespaces, and its adopt.yaml, its state in the release namespace, and
// syncs started through argocd-server as an Argo CD account whose RBAC
// allows only get and sync on Applications: a hand-applied object opens
// one pull request, and once merged and synced it is finalized; without
// any one of the grants (the Lease's, the records', plan's reads,
// finalize's patch, the Argo CD account's sync) the run fails at the step
// that needs it, naming what is missing (sufficient and minimal).
func TestReconcileOnRealArgoCDv2(t *testing.T) { reconcileLoop(t, testenv.ArgoCDOldest, false) }

func reconcileLoop(t *testing.T, version string, full bool) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	cp, a := argoCDPlane(ctx, t, version)
	g := giteaUp()
	repoName := giteaName(t, "reconcile-"+strings.ReplaceAll(version, ".", "-"))
	repoURL, err := g.CreateRepo(ctx, repoName)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ADOPT_GIT_TOKEN": g.Token}
	gc, err := gitea.NewClient(g.URL, gitea.SetToken(g.Token), gitea.SetGiteaVersion(""))
	if err != nil {
		t.Fatal(err)
	}
	ns1, ns2 := cp.Namespace(t), cp.Namespace(t)
	configMap := func(ns, name, value string) { t.Helper(); kubectlApplyConfigMap(ctx, t, cp, ns, name, value) }
	lockNS, as, syncArgs := ns1, []string(nil), []string{"--sync"}
	var grants *chartGrants
	var account *argoCDAccount
	if !full {
		grants = installChartRBAC(ctx, t, cp, a, ns1, ns2)
		lockNS, as = grants.stateNS, []string{"--as", grants.user, "--config", grants.config}
		// The chart's sync: through argocd-server, as an account that may
		// only get and sync Applications (docs/reconcile.md).
		account = newArgoCDSyncAccount(ctx, t, cp, a, "adopt-"+ns1[len(ns1)-6:])
		env["ARGOCD_AUTH_TOKEN"] = account.token
		syncArgs = []string{"--sync", "--argocd-server", a.Address, "--plaintext"}
	}
	metrics := filepath.Join(t.TempDir(), "adopt.prom")
	journals := t.TempDir()
	run := func(extra ...string) (*reconcile.Report, string, int) {
		t.Helper()
		args := append([]string{"--kubeconfig", cp.Kubeconfig, "reconcile", "-n", ns1 + "," + ns2, "--repo", repoURL, "--provider", "gitea",
			"--git-user", g.User, "--argocd-version", version, "--journal-dir", journals, "--poll-interval", "500ms", "--author", "adopt <adopt@example.invalid>", "-o", "json", "-q", "--metrics-file", metrics, "--lock-namespace", lockNS}, append(as, extra...)...)
		var out, errb bytes.Buffer
		code := runAdoptEnv(t, env, "adopt", args, strings.NewReader(""), &out, &errb)
		rep := &reconcile.Report{}
		if out.Len() > 0 {
			if err := json.Unmarshal(out.Bytes(), rep); err != nil {
				t.Fatalf("reconcile -o json: %v\n%s", err, out.String())
			}
		}
		return rep, errb.String(), code
	}
	outcome := func(rep *reconcile.Report, ns string) reconcile.Group {
		for _, gr := range rep.Groups {
			if strings.HasSuffix(gr.App, ns) || gr.Branch == ns {
				return gr
			}
		}
		t.Fatalf("no group for namespace %s in %+v", ns, rep.Groups)
		return reconcile.Group{}
	}
	prsOf := func(branch string) []testenv.GiteaPR {
		t.Helper()
		all, err := g.PullRequests(ctx, repoName)
		if err != nil {
			t.Fatal(err)
		}
		var out []testenv.GiteaPR
		for _, pr := range all {
			if pr.Head.Ref == branch {
				out = append(out, pr)
			}
		}
		return out
	}
	head := func(branch string) string {
		b, _, err := gc.GetRepoBranch(g.User, repoName, branch)
		if err != nil {
			t.Fatalf("branch %s: %v", branch, err)
		}
		return b.Commit.ID
	}
	step := func(ns, want string, extra ...string) reconcile.Group {
		t.Helper()
		rep, errOut, code := run(extra...)
		if code != 0 {
			t.Fatalf("reconcile exited %d: %s", code, errOut)
		}
		gr := outcome(rep, ns)
		if gr.Outcome != want {
			t.Fatalf("group of %s: outcome %q (%s), want %q", ns, gr.Outcome, gr.Why, want)
		}
		return gr
	}

	// 1. A hand-applied object opens one pull request.
	configMap(ns1, "a", "1")
	if !full {
		// Without the lock's grant, the group plan's, or the read-only
		// view plan needs, the run fails, naming what is missing.
		for _, d := range []grantDrop{
			{"Role", grants.state, grants.stateNS, "leases", authorizationv1.ResourceAttributes{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Name: "adopt-reconcile", Namespace: grants.stateNS}},
			{"Role", grants.state, grants.stateNS, "configmaps", authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps", Namespace: grants.stateNS}},
			{"ClusterRole", grants.read, "", "configmaps", authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps", Namespace: ns1}},
		} {
			restore := grants.drop(ctx, t, cp, d)
			rep, errOut, code := run()
			said := errOut
			for _, gr := range rep.Groups {
				said += " " + gr.Why
			}
			if code == 0 || !strings.Contains(said, "forbidden") && !strings.Contains(said, "Forbidden") {
				t.Errorf("without %s on %s: exit %d, %s; want a failure that says forbidden", d.kind, d.resource, code, said)
			}
			restore()
		}
	}
	gr1 := step(ns1, reconcile.Opened)
	if prs := prsOf(gr1.Branch); len(prs) != 1 {
		t.Fatalf("%d pull requests from %s, want 1", len(prs), gr1.Branch)
	}
	if !strings.HasPrefix(gr1.Branch, "adopt/") || strings.Count(gr1.Branch, "/") != 2 {
		t.Errorf("branch %q is not adopt/<cluster>/<app>", gr1.Branch)
	}
	if !full {
		finalizeMerged(ctx, t, g, repoName, a, cp, gr1, ns1, run, step, syncArgs, func() {
			// finalize's patch of the adopted type stops finalize before
			// any change, naming it; without the Argo CD account's sync,
			// argocd-server refuses the sync, and the group fails naming
			// the policy line to grant.
			restore := grants.drop(ctx, t, cp, grantDrop{"ClusterRole", grants.finalize, "", "configmaps",
				authorizationv1.ResourceAttributes{Verb: "patch", Resource: "configmaps", Namespace: ns1}})
			rep, errOut, code := run(append(syncArgs, "--finalize-wait", "3m", "--settle", "2s")...)
			if g := outcome(rep, gr1.Branch); code != ExitPartial || g.Outcome != reconcile.Failed || !strings.Contains(g.Why, "patch configmaps in "+ns1) {
				t.Errorf("without patch on configmaps: exit %d, %s %q; want the group failed naming it (%s)", code, g.Outcome, g.Why, errOut)
			}
			restore()
			restore = account.drop(ctx, t, "sync", gr1.App)
			rep, errOut, code = run(append(syncArgs, "--finalize-wait", "3m", "--settle", "2s")...)
			if g := outcome(rep, gr1.Branch); code != ExitPartial || g.Outcome != reconcile.Failed || !strings.Contains(g.Why, "Grant applications, sync") {
				t.Errorf("without the Argo CD account's sync: exit %d, %s %q; want the group failed naming applications, sync (%s)", code, g.Outcome, g.Why, errOut)
			}
			restore()
		})
		// The sync was started through argocd-server by the account, not
		// by a patch of the Application.
		u, err := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(argoapp.ApplicationGVR).Namespace(a.Namespace).Get(ctx, gr1.App, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if by, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "operation", "initiatedBy", "username"); by != account.name {
			t.Errorf("the first sync of %s was initiated by %q, want the Argo CD account %s", gr1.App, by, account.name)
		}
		return
	}
	tip := head(gr1.Branch)
	body := prsOf(gr1.Branch)[0].Body

	// 2. Nothing new: nothing pushed, nothing edited, and no write to the
	// cluster (the Lease is not even taken).
	lease := func() string {
		l, err := cp.Clientset().CoordinationV1().Leases(ns1).Get(ctx, "adopt-reconcile", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Lease: %v", err)
		}
		return l.ResourceVersion
	}
	leaseBefore := lease()
	step(ns1, reconcile.Unchanged)
	if rv := lease(); rv != leaseBefore {
		t.Errorf("a run with nothing new wrote the Lease (resourceVersion %s, was %s)", rv, leaseBefore)
	}
	if h := head(gr1.Branch); h != tip {
		t.Errorf("a run with nothing new moved %s from %s to %s", gr1.Branch, tip, h)
	}
	if prs := prsOf(gr1.Branch); len(prs) != 1 || prs[0].Body != body {
		t.Errorf("a run with nothing new edited the pull request (%d of them)", len(prs))
	}

	// 3. A new object in the group: a new commit on the same pull request.
	configMap(ns1, "b", "2")
	step(ns1, reconcile.Updated)
	if prs := prsOf(gr1.Branch); len(prs) != 1 {
		t.Errorf("a new object opened a second pull request: %d from %s", len(prs), gr1.Branch)
	}
	if head(gr1.Branch) == tip {
		t.Errorf("a new object left %s at %s", gr1.Branch, tip)
	}

	// 4. A person pushes a review edit to the branch: it is left alone,
	// even when the group changes again.
	if _, _, err := gc.CreateFile(g.User, repoName, "REVIEW.md", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{BranchName: gr1.Branch, Message: "review notes"},
		Content:     base64.StdEncoding.EncodeToString([]byte("looks good once b is renamed\n")),
	}); err != nil {
		t.Fatal(err)
	}
	edited := head(gr1.Branch)
	configMap(ns1, "c", "3")
	held := step(ns1, reconcile.HeldByUser)
	if !strings.Contains(held.Why, gr1.Branch) {
		t.Errorf("the report does not name the branch someone pushed to: %s", held.Why)
	}
	if h := head(gr1.Branch); h != edited {
		t.Errorf("reconcile pushed over a person's commit on %s: %s, want %s", gr1.Branch, h, edited)
	}
	// They hand the branch back by ticking the rebuild box, and edit the
	// title: the next run builds on their commit (REVIEW.md stays), adds
	// c, unticks the box and keeps their title.
	pr1 := prsOf(gr1.Branch)[0]
	ticked := strings.Replace(pr1.Body, "- [ ] <!-- adopt-rebuild -->", "- [x] <!-- adopt-rebuild -->", 1)
	if ticked == pr1.Body {
		t.Fatalf("the pull request's description has no rebuild box:\n%s", pr1.Body)
	}
	theirTitle := "search: adopt a, b and c (reviewed)"
	if _, _, err := gc.EditPullRequest(g.User, repoName, pr1.Number, gitea.EditPullRequestOption{Title: theirTitle, Body: &ticked}); err != nil {
		t.Fatal(err)
	}
	back := step(ns1, reconcile.Updated)
	if !strings.Contains(back.Why, "handed back") {
		t.Errorf("the run after the box was ticked: %s; want it to say the branch was handed back", back.Why)
	}
	tip = head(gr1.Branch)
	rebuilt := tipOf(t, giteaRepoDir(g, repoName), gr1.Branch)
	if len(rebuilt.ParentHashes) != 1 || rebuilt.ParentHashes[0].String() != edited || !strings.Contains(fileText(t, rebuilt, "REVIEW.md"), "looks good") {
		t.Errorf("the handed-back branch was not built on the person's commit %.12s (parents %v)", edited, rebuilt.ParentHashes)
	}
	pr1 = prsOf(gr1.Branch)[0]
	if pr1.Title != theirTitle || strings.Contains(pr1.Body, "- [x] <!-- adopt-rebuild -->") {
		t.Errorf("after the hand-back: title %q (want theirs, %q), box still ticked: %t", pr1.Title, theirTitle, strings.Contains(pr1.Body, "- [x]"))
	}
	step(ns1, reconcile.Unchanged)

	// 5. A second group waits while --max-open-prs is reached, then opens.
	configMap(ns2, "x", "1")
	step(ns2, reconcile.Waiting, "--max-open-prs", "1")
	// Two runs at once: the first, holding the Lease, is held at its
	// first write to Gitea's API, opening the pull request (a held
	// request, not a sleep); the second, which reads before it writes,
	// refuses the Lease, naming its holder. Released, the first opens the
	// group's one pull request.
	var once sync.Once
	reached, release := make(chan struct{}), make(chan struct{})
	target, _ := url.Parse(g.URL)
	toGitea := httputil.NewSingleHostReverseProxy(target)
	holding := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/pulls") {
			once.Do(func() { close(reached); <-release })
		}
		toGitea.ServeHTTP(w, r)
	}))
	defer holding.Close()
	type result struct {
		rep  *reconcile.Report
		err  string
		code int
	}
	first := make(chan result, 1)
	go func() {
		rep, errOut, code := run("--api-url", holding.URL+"/")
		first <- result{rep, errOut, code}
	}()
	select {
	case <-reached:
	case r := <-first:
		t.Fatalf("the first run ended before calling Gitea: exit %d: %s", r.code, r.err)
	}
	// A held Lease is not a failed Job: exit 0, saying nothing was done.
	if _, errOut, code := run(); code != 0 || !strings.Contains(errOut, "nothing done") || !strings.Contains(errOut, "Lease") || !strings.Contains(errOut, "held by") {
		t.Errorf("a second run while the first holds the Lease: exit %d: %s", code, errOut)
	}
	close(release)
	r := <-first
	if r.code != 0 {
		t.Fatalf("the first run: exit %d: %s", r.code, r.err)
	}
	gr2 := outcome(r.rep, ns2)
	if gr2.Outcome != reconcile.Opened {
		t.Fatalf("group of %s: %s (%s), want opened", ns2, gr2.Outcome, gr2.Why)
	}
	if n := len(prsOf(gr2.Branch)); n != 1 {
		t.Errorf("%d pull requests from %s after two runs at once, want 1", n, gr2.Branch)
	}

	// 6. Closed without merging: a decline, until an object changes.
	pr2 := prsOf(gr2.Branch)[0]
	closed := gitea.StateClosed
	if _, _, err := gc.EditPullRequest(g.User, repoName, pr2.Number, gitea.EditPullRequestOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	step(ns2, reconcile.Declined)
	// status --reconcile follows every group reconcile keeps, and shows the
	// decline.
	var sout, serr bytes.Buffer
	if code := runAdoptEnv(t, env, "adopt", []string{"--kubeconfig", cp.Kubeconfig, "status", "--reconcile", lockNS, "--journal-dir", journals, "--repo", repoURL,
		"--provider", "gitea", "--git-user", g.User, "-o", "json", "--no-coverage"}, strings.NewReader(""), &sout, &serr); code != 0 {
		t.Fatalf("status --reconcile: exit %d: %s", code, serr.String())
	}
	if !strings.Contains(sout.String(), fmt.Sprintf("pull request #%d was closed without merging", pr2.Number)) {
		t.Errorf("status --reconcile does not show the decline of #%d:\n%.2000s", pr2.Number, sout.String())
	}
	if n := len(prsOf(gr2.Branch)); n != 1 {
		t.Errorf("a declined group got %d pull requests, want still 1", n)
	}
	configMap(ns2, "x", "2")
	step(ns2, reconcile.Reproposed)
	if prs := prsOf(gr2.Branch); len(prs) != 2 || prs[0].State != "open" && prs[1].State != "open" {
		t.Errorf("a changed declined group was not proposed again in a new pull request: %+v", prs)
	}

	// 7. Merged: finalized once synced.
	next := finalizeMerged(ctx, t, g, repoName, a, cp, gr1, ns1, run, step, syncArgs, nil)

	// 7b. A new object, d, next to the finalized group: a new pull request
	// on the group's branch, which extends the merged Application. Merged
	// and synced (Argo CD prunes), a, b, c and d are all tracked by it.
	if next.Outcome != reconcile.Done {
		t.Errorf("the group of %s after it was finalized: %s (%s), want done", ns1, next.Outcome, next.Why)
	}
	configMap(ns1, "d", "4")
	cRef := "ConfigMap " + ns1 + "/d"
	next = step(ns1, reconcile.Opened)
	if !strings.Contains(next.Why, cRef) || !strings.Contains(next.Why, "merged") {
		t.Fatalf("the group of %s with a new object after it was finalized: %s (%s), want opened, adding %s next to what merged", ns1, next.Outcome, next.Why, cRef)
	}
	if prs := prsOf(gr1.Branch); len(prs) != 2 || prs[0].State != "open" && prs[1].State != "open" {
		t.Fatalf("pull requests from %s after the group was finalized: %+v, want the merged one and a new open one", gr1.Branch, prs)
	}
	step(gr1.Branch, reconcile.Unchanged)
	mergePR(ctx, t, g, repoName, gr1.Branch)
	appFile := fileText(t, tipOf(t, giteaRepoDir(g, repoName), "main"), "argocd/apps/"+gr1.App+".yaml")
	if !strings.Contains(appFile, cRef) {
		t.Errorf("the merged Application does not adopt c:\n%s", appFile)
	}
	if err := a.CreateApplication(ctx, []byte(appFile)); err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "--overwrite", "applications.argoproj.io", gr1.App, "argocd.argoproj.io/refresh=normal"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	step(gr1.Branch, reconcile.Finalized, append(syncArgs, "--finalize-wait", "3m", "--settle", "2s")...)
	for _, name := range []string{"a", "b", "c", "d"} {
		cm, err := cp.Clientset().CoreV1().ConfigMaps(ns1).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ConfigMap %s/%s after the extension merged and synced: %v (pruned?)", ns1, name, err)
		}
		if id := cm.Annotations[argoapp.AnnotationTrackingID]; !strings.HasPrefix(id, gr1.App+":") {
			t.Errorf("ConfigMap %s/%s: tracking id %q, want one of %s", ns1, name, id, gr1.App)
		}
	}
	prom, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adopt_untracked_objects{", "adopt_open_pull_requests{", "adopt_declined_groups{", "adopt_reconcile_duration_seconds{"} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("metrics file lacks %s:\n%s", want, prom)
		}
	}

	// 8. A Lease another run holds stops a run that has something to
	// write (a new object in ns2's open group), naming the holder.
	leases := cp.Clientset().CoordinationV1().Leases(ns1)
	cur, err := leases.Get(ctx, "adopt-reconcile", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the runs left no Lease in %s: %v", ns1, err)
	}
	if h := cur.Spec.HolderIdentity; h == nil || *h != "" {
		t.Errorf("a finished run did not release the Lease: holder %v", h)
	}
	holder, now := "other-runner", metav1.NewMicroTime(time.Now())
	cur.Spec.HolderIdentity, cur.Spec.RenewTime = &holder, &now
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	configMap(ns2, "y", "1")
	if _, errOut, code := run(); code != 0 || !strings.Contains(errOut, "nothing done") || !strings.Contains(errOut, "other-runner") {
		t.Errorf("a run with the Lease held by another: exit %d, %s", code, errOut)
	}
	// Its metrics say the run did not succeed, and keep the last success.
	if b, err := os.ReadFile(metrics); err != nil || !strings.Contains(string(b), `adopt_last_run_success{cluster="`) ||
		!regexp.MustCompile(`adopt_last_run_success\{cluster="[^"]*"\} 0\n`).Match(b) || !strings.Contains(string(b), "adopt_last_success_timestamp_seconds{") {
		t.Errorf("metrics after a run that found the Lease held (%v):\n%s", err, b)
	}
}

// finalizeMerged merges gr's pull request, then: reconcile does not sync
// its Application (no --sync) and reports it waiting; with syncArgs
// (--sync, and how to reach argocd-server) it starts the first sync and
// finalizes (the hand-apply annotation gone from the objects, a journal
// written); the next run says it is done, or, when a new object is next
// to it, opens a new pull request: that group is returned.
func finalizeMerged(ctx context.Context, t *testing.T, g *testenv.Gitea, repo string, a *testenv.ArgoCD, c *testenv.ControlPlane, gr reconcile.Group, ns string,
	run func(extra ...string) (*reconcile.Report, string, int), step func(ns, want string, extra ...string) reconcile.Group, syncArgs []string, beforeSync func()) reconcile.Group {
	t.Helper()
	mergePR(ctx, t, g, repo, gr.Branch)
	step(gr.Branch, reconcile.Merged, "--finalize-wait", "1s")
	tip := tipOf(t, giteaRepoDir(g, repo), "main")
	if err := a.CreateApplication(ctx, []byte(fileText(t, tip, "argocd/apps/"+gr.App+".yaml"))); err != nil {
		t.Fatal(err)
	}
	waiting := step(gr.Branch, reconcile.Merged, "--finalize-wait", "2s")
	if st, err := a.ApplicationStatus(ctx, gr.App); err != nil || st.OperationPhase != "" {
		t.Fatalf("reconcile without --sync started a sync of %s (%v): %s", gr.App, err, st)
	}
	t.Logf("without --sync: %s", waiting.Why)
	if beforeSync != nil {
		beforeSync()
	}
	done := step(gr.Branch, reconcile.Finalized, append(syncArgs, "--finalize-wait", "3m", "--settle", "2s")...)
	t.Logf("with --sync: %s", done.Why)
	cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Errorf("ConfigMap %s/a still carries last-applied-configuration after reconcile finalized it", ns)
	}
	// The next run: the group is done; with nothing else in scope, there
	// is nothing to do and no untracked object.
	rep, errOut, code := run()
	if code != 0 {
		t.Fatalf("the run after finalize: exit %d: %s", code, errOut)
	}
	if rep.NothingToDo {
		if rep.Untracked != 0 {
			t.Errorf("nothing to do, yet %d untracked objects", rep.Untracked)
		}
		return reconcile.Group{Branch: gr.Branch, Outcome: reconcile.Done}
	}
	for _, g := range rep.Groups {
		if g.Branch != gr.Branch {
			continue
		}
		if g.Outcome != reconcile.Done && g.Outcome != reconcile.Opened {
			t.Errorf("the run after finalize: %s is %s (%s), want done, or opened for a new object", gr.Branch, g.Outcome, g.Why)
		}
		return g
	}
	t.Fatalf("the run after finalize does not report %s: %+v", gr.Branch, rep.Groups)
	return reconcile.Group{}
}

// chartGrants are the chart's RBAC objects installed for a test, the
// ServiceAccount's user name to impersonate, the state namespace and the
// chart's adopt.yaml (a file) that reconcile runs with.
type chartGrants struct {
	user, read, finalize, state string
	stateNS, config             string
	rendered                    string
}

// installChartRBAC applies the ServiceAccount, RBAC and adopt.yaml of the
// chart's render as a release of its own (named after its namespace),
// scoped to namespaces, with Argo CD a, sync on through a's argocd-server,
// and ConfigMaps as the adopted type.
func installChartRBAC(ctx context.Context, t *testing.T, c *testenv.ControlPlane, a *testenv.ArgoCD, namespaces ...string) *chartGrants {
	t.Helper()
	return installChartRBACWith(ctx, t, c, a, nil, namespaces...)
}

// installChartRBACWith is installChartRBAC with more values (helm
// template's --set flags), such as secrets.read.
func installChartRBACWith(ctx context.Context, t *testing.T, c *testenv.ControlPlane, a *testenv.ArgoCD, set []string, namespaces ...string) *chartGrants {
	t.Helper()
	h, err := testenv.NewHelm(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t)
	release := "adopt-" + ns[len(ns)-6:]
	scope, _ := json.Marshal(namespaces)
	values := append([]string{"--set", "argocdNamespace=" + a.Namespace, "--set-json", "namespaces=" + string(scope),
		"--set", "sync=true", "--set", "argocd.server=" + a.Address, "--set", "argocd.plaintext=true", "--set", "argocd.tokenSecret.name=adopt-argocd",
		"--set-json", `finalize.types=[{"apiGroup":"","resources":["configmaps"]}]`}, set...)
	rendered := renderDeploy(ctx, t, h, release, ns, values...)
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---") {
		if !strings.Contains(doc, "kind: CronJob") {
			keep = append(keep, doc)
		}
	}
	config := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(config, []byte(chartConfigText(t, rendered)), 0o600); err != nil {
		t.Fatal(err)
	}
	name := release + "-reconcile"
	gr := &chartGrants{user: "system:serviceaccount:" + ns + ":" + name, read: name + "-read", finalize: name + "-finalize",
		state: name + "-state", stateNS: ns, config: config, rendered: strings.Join(keep, "\n---")}
	t.Cleanup(func() {
		_, _ = c.Kubectl(context.Background(), nil, "delete", "clusterrole,clusterrolebinding", "-l", "app.kubernetes.io/instance="+release, "--ignore-not-found")
	})
	gr.apply(ctx, t, c)
	return gr
}

func (gr *chartGrants) apply(ctx context.Context, t *testing.T, c *testenv.ControlPlane) {
	t.Helper()
	if out, err := c.Kubectl(ctx, []byte(gr.rendered), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the chart's RBAC: %v: %s", err, out)
	}
}

// grantDrop names the rules of a (Cluster)Role to remove, those naming
// resource, and what the authorizer then denies.
type grantDrop struct {
	kind, name, ns, resource string
	denies                   authorizationv1.ResourceAttributes
}

// drop removes d's rules, waits until the API server's authorizer denies
// d.denies, and returns what puts the grants back (and waits until it is
// allowed again).
func (gr *chartGrants) drop(ctx context.Context, t *testing.T, c *testenv.ControlPlane, d grantDrop) func() {
	t.Helper()
	rbac := c.Clientset().RbacV1()
	found := false
	keep := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, r := range rules {
			if slices.Contains(r.Resources, d.resource) {
				found = true
				continue
			}
			out = append(out, r)
		}
		return out
	}
	var err error
	if d.kind == "Role" {
		var r *rbacv1.Role
		if r, err = rbac.Roles(d.ns).Get(ctx, d.name, metav1.GetOptions{}); err == nil {
			r.Rules = keep(r.Rules)
			_, err = rbac.Roles(d.ns).Update(ctx, r, metav1.UpdateOptions{})
		}
	} else {
		var r *rbacv1.ClusterRole
		if r, err = rbac.ClusterRoles().Get(ctx, d.name, metav1.GetOptions{}); err == nil {
			r.Rules = keep(r.Rules)
			_, err = rbac.ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
		}
	}
	if err != nil || !found {
		t.Fatalf("drop %s from %s %s: %v (rule found: %v)", d.resource, d.kind, d.name, err, found)
	}
	gr.waitCan(ctx, t, c, d.denies, false)
	return func() {
		gr.apply(ctx, t, c)
		gr.waitCan(ctx, t, c, d.denies, true)
	}
}

// waitCan waits until the authorizer answers want for the user: a barrier
// on the RBAC cache, read through SubjectAccessReviews.
func (gr *chartGrants) waitCan(ctx context.Context, t *testing.T, c *testenv.ControlPlane, ra authorizationv1.ResourceAttributes, want bool) {
	t.Helper()
	for ctx.Err() == nil {
		r, err := c.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: gr.user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &ra}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the authorizer never answered %v for %s %s %s: %v", want, ra.Verb, ra.Resource, ra.Namespace, ctx.Err())
}

// argoCDAccount is an Argo CD local account (apiKey) whose RBAC is what
// docs/reconcile.md tells for the chart's sync: get and sync on
// Applications, nothing else.
type argoCDAccount struct {
	name, token string
	a           *testenv.ArgoCD
	c           *testenv.ControlPlane
}

// argoCDSyncPolicy is the account's policy, without the actions left out.
func argoCDSyncPolicy(name string, without ...string) string {
	var b strings.Builder
	for _, action := range []string{"get", "sync"} {
		if !slices.Contains(without, action) {
			fmt.Fprintf(&b, "p, role:%s, applications, %s, */*, allow\n", name, action)
		}
	}
	fmt.Fprintf(&b, "g, %s, role:%s\n", name, name)
	return b.String()
}

// newArgoCDSyncAccount declares account name in argocd-cm, its policy in
// argocd-rbac-cm (a policy.<name>.csv key of its own, which Argo CD adds
// to policy.csv), and has argocd-server, as admin, generate its token.
func newArgoCDSyncAccount(ctx context.Context, t *testing.T, c *testenv.ControlPlane, a *testenv.ArgoCD, name string) *argoCDAccount {
	t.Helper()
	acc := &argoCDAccount{name: name, a: a, c: c}
	if err := a.SetConfig(ctx, map[string]string{"accounts." + name: "apiKey"}); err != nil {
		t.Fatal(err)
	}
	acc.setPolicy(ctx, t, argoCDSyncPolicy(name))
	t.Cleanup(func() {
		ctx := context.Background()
		for cm, key := range map[string]string{"argocd-cm": "accounts." + name, "argocd-rbac-cm": "policy." + name + ".csv"} {
			_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				m, err := c.Clientset().CoreV1().ConfigMaps(a.Namespace).Get(ctx, cm, metav1.GetOptions{})
				if err != nil {
					return err
				}
				delete(m.Data, key)
				_, err = c.Clientset().CoreV1().ConfigMaps(a.Namespace).Update(ctx, m, metav1.UpdateOptions{})
				return err
			})
		}
	})
	admin, err := a.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closer, accounts := accountClient(t, a.Address, admin)
	defer closer.Close()
	// argocd-server learns of the account from argocd-cm's informer.
	for {
		r, err := accounts.CreateToken(ctx, &accountpkg.CreateTokenRequest{Name: name})
		if err == nil {
			acc.token = r.Token
			return acc
		}
		select {
		case <-ctx.Done():
			t.Fatalf("argocd-server never generated a token for account %s: %v", name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (acc *argoCDAccount) setPolicy(ctx context.Context, t *testing.T, csv string) {
	t.Helper()
	cms := acc.c.Clientset().CoreV1().ConfigMaps(acc.a.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, "argocd-rbac-cm", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["policy."+acc.name+".csv"] = csv
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// accountClient is argocd-server's account service at addr, as token.
func accountClient(t *testing.T, addr, token string) (io.Closer, accountpkg.AccountServiceClient) {
	t.Helper()
	client, err := apiclient.NewClient(&apiclient.ClientOptions{ServerAddr: addr, PlainText: true, AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	closer, accounts, err := client.NewAccountClient()
	if err != nil {
		t.Fatal(err)
	}
	return closer, accounts
}

// canI asks argocd-server, with the account's own token, whether it may
// action Application app of project default.
func (acc *argoCDAccount) canI(ctx context.Context, t *testing.T, action, app string) bool {
	t.Helper()
	closer, accounts := accountClient(t, acc.a.Address, acc.token)
	defer closer.Close()
	r, err := accounts.CanI(ctx, &accountpkg.CanIRequest{Resource: "applications", Action: action, Subresource: "default/" + app})
	if err != nil {
		t.Fatalf("argocd-server: can-i %s applications default/%s: %v", action, app, err)
	}
	return r.Value == "yes"
}

// drop removes action from the account's policy, waits until
// argocd-server denies it, and returns what puts it back.
func (acc *argoCDAccount) drop(ctx context.Context, t *testing.T, action, app string) func() {
	t.Helper()
	wait := func(want bool) {
		for acc.canI(ctx, t, action, app) != want {
			select {
			case <-ctx.Done():
				t.Fatalf("argocd-server never answered %v to can-i %s for account %s", want, action, acc.name)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	wait(true)
	acc.setPolicy(ctx, t, argoCDSyncPolicy(acc.name, action))
	wait(false)
	return func() {
		acc.setPolicy(ctx, t, argoCDSyncPolicy(acc.name))
		wait(true)
	}
}

// kubectlApplyConfigMap applies, as a runbook would with kubectl apply, a
// ConfigMap ns/name holding k: value.
func kubectlApplyConfigMap(ctx context.Context, t *testing.T, c *testenv.ControlPlane, ns, name, value string) {
	t.Helper()
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"data":{"k":"` + value + `"}}`
	if out, err := c.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
}
