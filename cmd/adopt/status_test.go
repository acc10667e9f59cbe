package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// statusCM is a hand-applied ConfigMap with its own part-of label, so that
// plan --group-by label gives it an Application of its own.
func statusCM(ns, name string, size int) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/part-of": name}},
		"data":     map[string]any{"blob": strings.Repeat("x", size)}}
}

// handApply applies obj the runbook way: client-side, then --server-side
// (so that Argo CD's server-side apply later does not take over the
// annotation from kubectl-client-side-apply), as handThenArgo does.
func handApply(t *testing.T, obj map[string]any) {
	t.Helper()
	b, _ := json.Marshal(obj)
	kc(t, b, "apply", "-f", "-")
	kc(t, b, "apply", "--server-side", "-f", "-")
}

func planFor(t *testing.T, dir, ns string) (string, *plan.Plan) {
	t.Helper()
	file := filepath.Join(dir, ns+".yaml")
	if out, errOut, code := adopt(t, "plan", "-n", ns, "--group-by", "label", "-q", "--out", file); code != 0 {
		t.Fatalf("plan -n %s: exit %d\n%s%s", ns, code, out, errOut)
	}
	p, err := plan.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, p
}

func appOf(t *testing.T, p *plan.Plan, ns, name string) string {
	t.Helper()
	for _, o := range p.Objects {
		if o.Namespace == ns && o.Name == name {
			return o.App
		}
	}
	t.Fatalf("plan %s has no ConfigMap %s/%s", p.ID, ns, name)
	return ""
}

// mergePR merges the pull request from head on Gitea, retrying while Gitea
// still checks whether it can be merged.
func mergePR(ctx context.Context, t *testing.T, g *testenv.Gitea, repo, head string) {
	t.Helper()
	prs, err := g.PullRequests(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	var num int64
	for _, pr := range prs {
		if pr.Head.Ref == head && pr.State == "open" {
			num = pr.Number
		}
	}
	if num == 0 {
		t.Fatalf("no open pull request from %s", head)
	}
	mctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := g.MergePullRequest(mctx, repo, num); err != nil {
		t.Fatal(err)
	}
}

func statusJSON(t *testing.T, args ...string) *status.Report {
	t.Helper()
	out, errOut, code := adopt(t, append([]string{"status", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	return &r
}

// TestStatusSevenStages places one object in each stage on the real
// control plane, with the real Gitea holding the GitOps repo and the pull
// requests, and the real `adopt plan`, `apply --open-pr` and `finalize`
// moving them; the Applications' status is written as Argo CD's
// controller writes it. Then `adopt status` must name each stage, the
// pull requests' states, coverage as plan counts it, and --fail-on; its
// HTML report, loaded in headless Chromium, must hold the same numbers,
// make no network request and not be blank; two --record runs give the
// burndown two points.
func TestStatusSevenStages(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	g := giteaInBackground(ctx, t)()
	repo := giteaName(t, "status")
	repoURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nsA, nsB, nsC := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	handApply(t, statusCM(nsA, "planned", 100))
	handApply(t, statusCM(nsB, "review", 100))
	names := []string{"merged", "present", "synced", "final", "regress"}
	size := func(n string) int {
		if n == "synced" {
			return 210_000 // near the cap: the budget bars' first
		}
		return 1000
	}
	for _, n := range names {
		handApply(t, statusCM(nsC, n, size(n)))
	}
	fileA, _ := planFor(t, dir, nsA)
	fileB, pB := planFor(t, dir, nsB)
	fileC, pC := planFor(t, dir, nsC)
	gitArgs := []string{"--repo", repoURL, "--git-user", g.User, "--git-token", g.Token}
	for _, f := range []string{fileB, fileC} {
		args := append([]string{"apply", "--plan", f, "-q", "--open-pr", "--provider", "gitea", "--author", "adopt <adopt@example.invalid>"}, gitArgs...)
		if out, errOut, code := adopt(t, args...); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s%s", f, code, out, errOut)
		}
	}
	mergePR(ctx, t, g, repo, "adopt/"+apply.AdoptionID(pC))

	app := map[string]string{}
	for _, n := range names {
		app[n] = appOf(t, pC, nsC, n)
	}
	putApplication(t, app["present"], nsC, nil)
	for _, n := range []string{"synced", "final", "regress"} {
		argoApply(t, statusCM(nsC, n, size(n)), app[n]+":/ConfigMap:"+nsC+"/"+n)
		putApplication(t, app[n], nsC, syncedStatus("Healthy"))
	}
	for _, n := range []string{"final", "regress"} {
		if out, errOut, code := adopt(t, "finalize", "--plan", fileC, "--app", app[n], "--poll-interval", "100ms", "-q"); code != 0 {
			t.Fatalf("finalize %s: exit %d\n%s%s", n, code, out, errOut)
		}
	}
	b, _ := json.Marshal(statusCM(nsC, "regress", 1000))
	kc(t, b, "apply", "-f", "-") // the runbook, run again

	record := filepath.Join(dir, "history")
	html := filepath.Join(dir, "status.html")
	args := append([]string{"--plan", fileA, "--plan", fileB, "--plan", fileC, "--provider", "gitea", "--record", record, "--html", html}, gitArgs...)
	first := statusJSON(t, args...)
	r := statusJSON(t, args...)
	want := map[string]status.Stage{
		"ConfigMap " + nsA + "/planned": status.StagePlanned, "ConfigMap " + nsB + "/review": status.StageInReview,
		"ConfigMap " + nsC + "/merged": status.StageMerged, "ConfigMap " + nsC + "/present": status.StageAppPresent,
		"ConfigMap " + nsC + "/synced": status.StageSynced, "ConfigMap " + nsC + "/final": status.StageFinalized,
		"ConfigMap " + nsC + "/regress": status.StageRegressed,
	}
	if len(r.Objects) != len(want) {
		t.Fatalf("%d objects, want %d: %+v", len(r.Objects), len(want), r.Objects)
	}
	for _, o := range r.Objects {
		if o.Stage != want[o.Ref] {
			t.Errorf("%s: stage %s (%s), want %s", o.Ref, o.Stage, o.Reason, want[o.Ref])
		}
		switch o.Stage {
		case status.StageFinalized:
			if o.FinalizedAt.IsZero() {
				t.Errorf("%s: finalized without the journal's time", o.Ref)
			}
		case status.StageRegressed:
			if !o.Stuck || !strings.Contains(o.Reason, budget.LastAppliedKey+" is back") || !strings.Contains(o.Next, "adopt finalize --plan "+fileC) {
				t.Errorf("regressed object: stuck %v, %q, next %q", o.Stuck, o.Reason, o.Next)
			}
		case status.StageSynced:
			if o.Budget.AnnotationBytes < 210_000 || o.Next != "adopt finalize --plan "+fileC+" --app "+app["synced"] {
				t.Errorf("synced object: %d B, next %q", o.Budget.AnnotationBytes, o.Next)
			}
		case status.StagePlanned:
			if !strings.HasPrefix(o.Next, "adopt apply --plan "+fileA) {
				t.Errorf("planned object: next %q", o.Next)
			}
		}
	}
	c := r.Counts
	if c.Planned != 1 || c.InReview != 1 || c.Merged != 1 || c.AppPresent != 1 || c.Synced != 1 || c.Finalized != 1 || c.Regressed != 1 || r.Stuck != 1 {
		t.Errorf("counts %+v, stuck %d", c, r.Stuck)
	}
	prs := map[string]string{}
	for _, a := range r.Applications {
		if a.PR != nil {
			prs[a.Plan] = a.PR.State
			if !strings.HasPrefix(a.PR.URL, strings.TrimSuffix(g.URL, "/")) {
				t.Errorf("Application %s: pull request URL %q is not Gitea's", a.Name, a.PR.URL)
			}
		}
	}
	if prs[pB.ID] != gitops.PROpen || prs[pC.ID] != gitops.PRMerged {
		t.Errorf("pull request states by plan: %v, want %s open and %s merged", prs, pB.ID, pC.ID)
	}

	// Coverage, counted the way plan counts: what plan says of the same
	// namespaces now.
	tracked, total := 0, 0
	for _, ns := range []string{nsA, nsB, nsC} {
		_, p := planFor(t, t.TempDir(), ns)
		tracked += p.Summary.Tracked
		total += p.Summary.Tracked + len(p.Objects)
	}
	if r.Coverage == nil || r.Coverage.Tracked != tracked || r.Coverage.Objects != total || tracked != 3 {
		t.Errorf("coverage %+v, plan counts %d of %d (want 3 tracked)", r.Coverage, tracked, total)
	}
	if len(first.Objects) != len(r.Objects) {
		t.Fatal("the two runs disagree")
	}

	// --fail-on.
	if _, errOut, code := adopt(t, append([]string{"status", "--fail-on", "regressed", "--no-coverage"}, append([]string{"--plan", fileC}, gitArgs...)...)...); code != ExitFindings || !strings.Contains(errOut, "1 regressed") {
		t.Errorf("--fail-on regressed: exit %d, %q", code, errOut)
	}
	if _, _, code := adopt(t, "status", "--plan", fileA, "--fail-on", "stuck", "--no-coverage"); code != 0 {
		t.Errorf("--fail-on stuck with nothing stuck: exit %d", code)
	}

	// Two recorded runs: two snapshots.
	snaps, err := status.History(record)
	if err != nil || len(snaps) != 2 {
		t.Fatalf("history: %d snapshots, %v", len(snaps), err)
	}

	checkReportInBrowser(ctx, t, html, r)
}

// checkReportInBrowser loads the report in headless Chromium: its DOM must
// hold the JSON's numbers, the page must request nothing, and its
// screenshot must not be blank.
func checkReportInBrowser(ctx context.Context, t *testing.T, html string, r *status.Report) {
	t.Helper()
	ch, err := testenv.NewChromium(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := ch.DumpDOM(ctx, html)
	if err != nil {
		t.Fatal(err)
	}
	dom := pg.DOM
	metric := func(name string) string {
		m := regexp.MustCompile(`data-metric="` + name + `">([^<]*)<`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the DOM has no %s", name)
		}
		return m[1]
	}
	if got := metric("coverage-percent"); got != fmt.Sprintf("%.1f", r.Coverage.Percent) {
		t.Errorf("DOM coverage %s%%, JSON %.1f%%", got, r.Coverage.Percent)
	}
	for name, n := range map[string]int{"coverage-tracked": r.Coverage.Tracked, "coverage-objects": r.Coverage.Objects, "stuck": r.Stuck, "stuck-listed": r.Stuck} {
		if got := metric(name); got != strconv.Itoa(n) {
			t.Errorf("DOM %s %s, JSON %d", name, got, n)
		}
	}
	for _, s := range status.Stages {
		m := regexp.MustCompile(`data-stage-count="` + string(s) + `">(\d+)<`).FindStringSubmatch(dom)
		if m == nil || m[1] != strconv.Itoa(r.Counts.Of(s)) {
			t.Errorf("DOM count of %s %v, JSON %d", s, m, r.Counts.Of(s))
		}
	}
	for _, o := range r.Objects {
		if !strings.Contains(dom, fmt.Sprintf(`<tr data-object="%s" data-stage="%s">`, o.Ref, o.Stage)) {
			t.Errorf("DOM has no row for %s at %s", o.Ref, o.Stage)
		}
	}
	top := r.Nearest(1)[0]
	if !strings.Contains(dom, fmt.Sprintf(`data-object="%s" data-bytes="%d" data-percent="%.1f"`, top.Ref, top.Budget.AnnotationBytes, top.Budget.PercentOfCap)) {
		t.Errorf("DOM has no budget bar for %s with %d B", top.Ref, top.Budget.AnnotationBytes)
	}
	if !strings.Contains(dom, `data-chart="burndown" data-points="2"`) || strings.Count(dom, `<g data-series=`) != len(status.Stages) {
		t.Errorf("the burndown does not draw 2 recorded runs for %d stages", len(status.Stages))
	}
	for _, a := range r.Applications {
		if a.PR != nil && !strings.Contains(dom, `href="`+a.PR.URL+`"`) {
			t.Errorf("DOM does not link Application %s to %s", a.Name, a.PR.URL)
		}
	}
	if loads := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|<object|<embed|\ssrc=`).FindAllString(dom, -1); len(loads) > 0 {
		t.Errorf("the DOM loads something: %v", loads)
	}
	reqs, err := testenv.PageRequests(pg.NetLog)
	if err != nil || len(reqs) > 0 {
		t.Errorf("the page made network requests: %v (%v)", reqs, err)
	}

	// The net-log check can fail: a page with one remote image is caught.
	bad := filepath.Join(t.TempDir(), "remote.html")
	if err := os.WriteFile(bad, []byte(`<html><body><img src="http://example.invalid/x.png"></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	pgBad, err := ch.DumpDOM(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := testenv.PageRequests(pgBad.NetLog); err != nil || len(reqs) == 0 {
		t.Errorf("the net-log check missed a remote image: %v, %v", reqs, err)
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	pg, err = ch.Screenshot(ctx, html, shot, 1100, 1600)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := testenv.PageRequests(pg.NetLog); err != nil || len(reqs) > 0 {
		t.Errorf("the screenshot run made network requests: %v (%v)", reqs, err)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	var n, dark int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(bl)) / 257
			sum += l
			sq += l * l
			n++
			if l < 128 {
				dark++
			}
		}
	}
	mean := sum / float64(n)
	sd := math.Sqrt(sq/float64(n) - mean*mean)
	t.Logf("screenshot %dx%d: luminance mean %.1f, sd %.1f, %.2f%% dark pixels", b.Dx(), b.Dy(), mean, sd, 100*float64(dark)/float64(n))
	if sd < 10 || dark*1000 < n {
		t.Errorf("the screenshot looks blank: luminance sd %.1f, %d of %d pixels dark", sd, dark, n)
	}
}

// TestStatusOnAPlainGitServer: a GitOps repo on a plain smart-HTTP server
// (no owner/name, no pull-request host) gives the in-review stage with a
// note that pull requests were not looked up, not a bad-input error.
func TestStatusOnAPlainGitServer(t *testing.T) {
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {a: b}\n"), "apply", "-n", ns, "-f", "-")
	_, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--repo", url, "--out", planFile, "--argocd-version", "v2.14.21"); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	if _, errOut, code := adopt(t, "apply", "--plan", planFile, "--repo", url, "-q", "--author", "T <t@example.invalid>"); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errOut)
	}
	r := statusJSON(t, "--plan", planFile, "--repo", url, "--no-coverage")
	if len(r.Objects) != 1 || r.Objects[0].Stage != status.StageInReview || !strings.Contains(strings.Join(r.Notes, "\n"), "not an owner/name repository of a pull-request host") {
		t.Fatalf("objects %+v, notes %v", r.Objects, r.Notes)
	}
}

// TestStatusReadsByList: a namespace whose 24 ConfigMaps status reads with
// one metadata list (fewer requests than a GET each) and whose one Secret
// it GETs: the list gives what a GET would (a ConfigMap annotated since the
// plan is read with its new annotation bytes, the client-side-apply
// manager seen), and a ConfigMap deleted since the plan is not found and
// stuck, as with a GET.
func TestStatusReadsByList(t *testing.T) {
	ns := cp.Namespace(t)
	var docs []string
	for i := 0; i < 24; i++ {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d}\ndata: {a: \"%d\"}\n", i, i))
	}
	docs = append(docs, "apiVersion: v1\nkind: Secret\nmetadata: {name: only}\nstringData: {k: list-CANARY-value}\n")
	kc(t, []byte(strings.Join(docs, "---\n")), "apply", "-n", ns, "-f", "-")
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", planFile, "--argocd-version", "v3.2.6"); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	p, err := plan.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	kc(t, nil, "delete", "configmap", "cm-07", "-n", ns)
	kc(t, nil, "annotate", "configmap", "cm-03", "-n", ns, "extra=xyz")
	r := statusJSON(t, "--plan", planFile, "--no-coverage")
	seen := 0
	for _, o := range r.Objects {
		switch {
		case strings.HasPrefix(o.Ref, "ConfigMap "+ns+"/cm-"), o.Ref == "Secret "+ns+"/only":
		default:
			continue
		}
		seen++
		planned := p.Object(o.Ref)
		switch o.Ref {
		case "ConfigMap " + ns + "/cm-07":
			if !o.Stuck || !strings.Contains(o.Reason, "not found in the cluster") {
				t.Errorf("the deleted ConfigMap: %+v", o)
			}
		case "ConfigMap " + ns + "/cm-03":
			if want := planned.Budget.AnnotationBytes + len("extra") + len("xyz"); o.Stuck || o.Budget.AnnotationBytes != want {
				t.Errorf("the annotated ConfigMap: %d annotation bytes (stuck %v), want %d", o.Budget.AnnotationBytes, o.Stuck, want)
			}
		default:
			if o.Stuck || o.Budget.AnnotationBytes != planned.Budget.AnnotationBytes || o.Budget.LastAppliedBytes == 0 {
				t.Errorf("%s: %+v, want found with the plan's %d annotation bytes, last-applied among them", o.Ref, o, planned.Budget.AnnotationBytes)
			}
		}
	}
	if seen != 25 {
		t.Errorf("status reported %d of the 25 objects", seen)
	}
}
