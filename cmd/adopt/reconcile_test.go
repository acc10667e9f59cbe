package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileLoopOnGitea (issue 37): adopt reconcile, run again and
// again as a schedule would, on the real kube-apiserver and a real Gitea.
// A hand-applied object opens one pull request; a run with nothing new
// pushes and edits nothing; a new object in the group is a new commit on
// the same pull request; a branch someone else pushed to is left alone;
// --max-open-prs makes a group wait; a pull request closed without merging
// is a decline until an object of it changes, then it is proposed again; a
// merged one is reported; a Lease another run holds stops the run. Every
// answer comes from Gitea's API, never from local state.
func TestReconcileLoopOnGitea(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g := giteaInBackground(ctx, t)()
	repoURL, err := g.CreateRepo(ctx, "reconcile")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ADOPT_GIT_TOKEN", g.Token)
	gc, err := gitea.NewClient(g.URL, gitea.SetToken(g.Token), gitea.SetGiteaVersion(""))
	if err != nil {
		t.Fatal(err)
	}
	ns1, ns2 := cp.Namespace(t), cp.Namespace(t)
	configMap := func(ns, name, value string) {
		t.Helper()
		cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns + `"},"data":{"k":"` + value + `"}}`
		if out, err := cp.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v: %s", err, out)
		}
	}
	metrics := filepath.Join(t.TempDir(), "adopt.prom")
	run := func(extra ...string) (*reconcile.Report, string, int) {
		t.Helper()
		args := append([]string{"--kubeconfig", cp.Kubeconfig, "reconcile", "-n", ns1 + "," + ns2, "--repo", repoURL, "--provider", "gitea",
			"--git-user", g.User, "--argocd-version", "v3.2.6", "--author", "adopt <adopt@example.invalid>", "-o", "json", "-q", "--metrics-file", metrics, "--lock-namespace", ns1}, extra...)
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
		rep := &reconcile.Report{}
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), rep); err != nil {
				t.Fatalf("reconcile -o json: %v\n%s", err, out.String())
			}
		}
		return rep, errb.String(), code
	}
	outcome := func(rep *reconcile.Report, ns string) reconcile.Group {
		for _, gr := range rep.Groups {
			if strings.HasSuffix(gr.App, ns) {
				return gr
			}
		}
		t.Fatalf("no group for namespace %s in %+v", ns, rep.Groups)
		return reconcile.Group{}
	}
	prsOf := func(branch string) []testenv.GiteaPR {
		t.Helper()
		all, err := g.PullRequests(ctx, "reconcile")
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
		b, _, err := gc.GetRepoBranch(g.User, "reconcile", branch)
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
	gr1 := step(ns1, reconcile.Opened)
	if prs := prsOf(gr1.Branch); len(prs) != 1 {
		t.Fatalf("%d pull requests from %s, want 1", len(prs), gr1.Branch)
	}
	if !strings.HasPrefix(gr1.Branch, "adopt/") || strings.Count(gr1.Branch, "/") != 2 {
		t.Errorf("branch %q is not adopt/<cluster>/<app>", gr1.Branch)
	}
	tip := head(gr1.Branch)
	body := prsOf(gr1.Branch)[0].Body

	// 2. Nothing new: nothing pushed, nothing edited.
	step(ns1, reconcile.Unchanged)
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
	if _, _, err := gc.CreateFile(g.User, "reconcile", "REVIEW.md", gitea.CreateFileOptions{
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

	// 5. A second group waits while --max-open-prs is reached, then opens.
	configMap(ns2, "x", "1")
	step(ns2, reconcile.Waiting, "--max-open-prs", "1")
	gr2 := step(ns2, reconcile.Opened)

	// 6. Closed without merging: a decline, until an object changes.
	pr2 := prsOf(gr2.Branch)[0]
	closed := gitea.StateClosed
	if _, _, err := gc.EditPullRequest(g.User, "reconcile", pr2.Number, gitea.EditPullRequestOption{State: &closed}); err != nil {
		t.Fatal(err)
	}
	step(ns2, reconcile.Declined)
	if n := len(prsOf(gr2.Branch)); n != 1 {
		t.Errorf("a declined group got %d pull requests, want still 1", n)
	}
	configMap(ns2, "x", "2")
	step(ns2, reconcile.Reproposed)
	if prs := prsOf(gr2.Branch); len(prs) != 2 || prs[0].State != "open" && prs[1].State != "open" {
		t.Errorf("a changed declined group was not proposed again in a new pull request: %+v", prs)
	}

	// 7. Merged: reported.
	mergePR(ctx, t, g, "reconcile", gr1.Branch)
	step(ns1, reconcile.Merged)
	prom, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adopt_untracked_objects{", "adopt_open_pull_requests{", "adopt_declined_groups{", "adopt_reconcile_duration_seconds{"} {
		if !strings.Contains(string(prom), want) {
			t.Errorf("metrics file lacks %s:\n%s", want, prom)
		}
	}

	// 8. A Lease another run holds stops the run, naming the holder.
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
	if _, errOut, code := run(); code == 0 || !strings.Contains(errOut, "other-runner") {
		t.Errorf("a run with the Lease held by another: exit %d, %s", code, errOut)
	}
}
