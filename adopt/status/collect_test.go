package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// prHost is a fake of the pull-request host (the collector's PRs seam):
// the newest pull request of each branch, as scripted, and what it was
// asked.
type prHost struct {
	prs   map[string]*gitops.PRStatus
	err   error
	asked []gitops.FindPROptions
}

func (h *prHost) PRState(_ context.Context, o gitops.FindPROptions) (*gitops.PRStatus, error) {
	h.asked = append(h.asked, o)
	return h.prs[o.Head], h.err
}

func (h *prHost) ListOpenPRs(context.Context, gitops.RepoRef, string, string) ([]gitops.PRStatus, error) {
	return nil, errors.New("not asked by status")
}

// TestCollectTellsTheStagesApart: the collector reads each planned
// object's metadata from a real kube-apiserver, the branches from a real
// Git repository, and the pull requests from the host (a fake of the seam):
// a plan with no branch is planned, a pushed branch with an open pull
// request in review, a branch merged into the base merged (the
// Application not in the cluster yet), and an object deleted since the
// plan stuck; each object's annotation bytes are read live. Without a
// repo, nothing before the Application is told apart, and the report says
// so; the host's error stops the collector.
func TestCollectTellsTheStagesApart(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	for _, n := range []string{"planned", "review", "merged"} {
		if out, err := cp.Kubectl(ctx, []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: v}\n", n, ns)), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v: %s", err, out)
		}
	}
	mk := func(names ...string) *plan.Plan {
		app := plan.Application{Name: "adopt-" + names[0], Namespace: ns, SourcePath: "adopted/" + names[0]}
		p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Cluster: plan.Cluster{Server: cp.Server, Namespace: ns},
			Settings: plan.Settings{AppsDir: "apps"}, Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, Namespace: "argocd"}}
		for _, n := range names {
			ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: n}, App: app.Name}
			p.Objects = append(p.Objects, ob)
			app.Objects = append(app.Objects, ob.Ref.String())
		}
		p.Applications = []plan.Application{app}
		if err := p.Seal(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	planned, review, merged := mk("planned"), mk("review"), mk("merged", "deleted")
	branch := func(p *plan.Plan) string { return "adopt/" + apply.AdoptionID(p) }

	// The GitOps repo: review's branch pushed, merged's merged into main.
	dir := t.TempDir()
	if err := testenv.InitRepo(dir, map[string]string{"README.md": "gitops\n"}); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		if _, err := testenv.Git(dir, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*plan.Plan{review, merged} {
		git("checkout", "-q", "-b", branch(p), "main")
		git("commit", "-q", "--allow-empty", "-m", "adopt "+p.Applications[0].Name)
	}
	git("checkout", "-q", "main")
	git("merge", "-q", "--no-ff", "-m", "merge", branch(merged))
	repo, err := gitops.Clone(ctx, gitops.CloneOptions{URL: dir, History: true})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()

	c, err := kubeconn.New(cp.RESTConfig(), "test", "")
	if err != nil {
		t.Fatal(err)
	}
	host := &prHost{prs: map[string]*gitops.PRStatus{
		branch(review): {Number: 3, State: gitops.PROpen, URL: "https://git.example/pulls/3"},
		branch(merged): {Number: 4, State: gitops.PRMerged, URL: "https://git.example/pulls/4"},
	}}
	src := Sources{Metadata: c.Clients.Metadata, Dynamic: c.Clients.Dynamic, Kube: c.Kube, Tracking: planned.Tracking,
		Repo: repo, RepoName: dir, PRs: host, PRRepo: gitops.RepoRef{Owner: "o", Name: "r"}}
	in := []Input{{Plan: planned, File: "planned.yaml"}, {Plan: review, File: "review.yaml"}, {Plan: merged, File: "merged.yaml"}}
	refs, facts, notes, err := Collect(ctx, src, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3 || refs[1].Branch != branch(review) || refs[1].Base != "main" || len(notes) != 0 {
		t.Errorf("plans %+v, notes %v; want three, review's on its branch into main, no note", refs, notes)
	}
	for _, h := range host.asked {
		if h.Repo.Name != "r" || h.Base != "main" {
			t.Errorf("the host was asked %+v; want repository o/r, base main", h)
		}
	}
	want := map[string]struct {
		stage  Stage
		stuck  bool
		reason string
	}{
		"planned": {StagePlanned, false, "not in any branch yet"},
		"review":  {StageInReview, false, "pull request #3 open"},
		"merged":  {StageMerged, false, "Application argocd/adopt-merged is not in the cluster yet"},
		"deleted": {StageMerged, true, "not found in the cluster"},
	}
	if len(facts) != len(want) {
		t.Fatalf("%d facts, want %d", len(facts), len(want))
	}
	for _, f := range facts {
		o, w := Place(f), want[f.Object.Name]
		if o.Stage != w.stage || o.Stuck != w.stuck || !strings.Contains(o.Reason, w.reason) {
			t.Errorf("%s: %s stuck %v (%s); want %s stuck %v saying %q", o.Ref, o.Stage, o.Stuck, o.Reason, w.stage, w.stuck, w.reason)
		}
		if f.Found && (f.Budget.AnnotationBytes == 0 || !f.Budget.HasLastApplied || f.Budget.LastAppliedBytes <= len(budget.LastAppliedKey)) {
			t.Errorf("%s: budget %+v; want the live last-applied annotation measured", o.Ref, f.Budget)
		}
	}

	// Without a repo: nothing before the Application is told apart.
	src.Repo, src.PRs = nil, nil
	_, facts, notes, err = Collect(ctx, src, in)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "no --repo") {
		t.Fatalf("without a repo: %v, notes %v", err, notes)
	}
	for _, f := range facts {
		if o := Place(f); o.Stage != StagePlanned || f.GitRead {
			t.Errorf("without a repo, %s: %s (git read %v); want planned", o.Ref, o.Stage, f.GitRead)
		}
	}

	// The host failing stops the collector.
	src.Repo, src.PRs = repo, &prHost{err: errors.New("the host answered 502")}
	if _, _, _, err := Collect(ctx, src, in); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("a host that fails: %v", err)
	}
}
