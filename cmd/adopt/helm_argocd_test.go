package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// helmPassword is the password a real Helm release holds in its values; it
// must never reach a plan, a commit, or anything adopt prints.
const helmPassword = "helmpw-CANARY-5e6f7a8b"

func TestHelmReleaseOnRealArgoCDv3(t *testing.T) { helmE2E(t, testenv.ArgoCDCurrent) }

// helmE2E: three real Helm releases on a real control plane, installed by
// the real helm CLI from a chart repository served on loopback:
//
//   - web1 (chart web 1.2.3) with a password in its values;
//   - web2, upgraded with `helm upgrade --set greeting=upgraded`;
//   - orphan, installed from a chart no repository serves.
//
// plan (with --preview) proposes a Helm-sourced Application for web1 and
// web2, the chart source found in Helm's repositories.yaml and cached
// index, the render proven equal to each release's manifest, the password
// a placeholder; orphan is a blocking finding and no Application, and
// nothing else is blocked. apply writes the chart source and no raw export.
// Real Argo CD (its repo-server running the same helm) syncs both with no
// diff (Synced before any sync); finalize --sync runs the first sync (SSA),
// the live password untouched; every UID is
// unchanged, `helm list` still shows the releases; finalize
// --retire-helm-records then retires web2's records (helm no longer lists
// it, Argo CD keeps it Synced and Healthy) and --undo brings them back; the
// password is in nothing adopt wrote or printed.
func helmE2E(t *testing.T, version string) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, version)
	h, repo := servedChart(ctx, t, c, "web")
	helm := func(args ...string) string {
		t.Helper()
		return helmRun(ctx, t, h, args...)
	}
	helm("repo", "add", "stable", repo.URL)
	ns1, ns2, ns3 := c.Namespace(t), c.Namespace(t), c.Namespace(t)
	helm("install", "web1", "stable/web", "--version", "1.2.3", "-n", ns1, "--set", "auth.password="+helmPassword)
	helm("install", "web2", "stable/web", "--version", "1.2.3", "-n", ns2, "--set", "auth.password=other-"+helmPassword)
	helm("upgrade", "web2", "stable/web", "--version", "1.2.3", "-n", ns2, "--reuse-values", "--set", "greeting=upgraded")
	orphan, err := filepath.Abs("testdata/charts/orphan")
	if err != nil {
		t.Fatal(err)
	}
	helm("install", "orphan", orphan, "-n", ns3)
	uidsOf := func() map[string]types.UID {
		out := map[string]types.UID{}
		for _, ns := range []string{ns1, ns2} {
			rel := map[string]string{ns1: "web1", ns2: "web2"}[ns]
			cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, rel+"-cfg", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, rel+"-auth", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			svc, err := c.Clientset().CoreV1().Services(ns).Get(ctx, rel, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out[ns+"/cm"], out[ns+"/secret"], out[ns+"/svc"] = cm.UID, s.UID, svc.UID
		}
		return out
	}
	uids := uidsOf()

	// Argo CD fetches the chart from the repository, registered as Argo CD
	// expects a non-standard Helm repository to be.
	repoSecret := `apiVersion: v1
kind: Secret
metadata:
  name: repo-stable
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: helm, name: stable, url: "` + repo.URL + `"}
`
	if out, err := c.Kubectl(ctx, []byte(repoSecret), "apply", "-n", a.Namespace, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gitURL, err := g.CreateRepo("gitops", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{"web1's password": helmPassword}}
	run := scannedRun(t, c, env, scan)

	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.yaml")
	// Its own namespaces: the shared Argo CD plane may hold other tests'
	// Helm releases (the real-repo test's), whatever order they run in.
	out, errOut, code := run("plan", "-n", ns1+","+ns2+","+ns3, "--repo", gitURL, "--argocd-version", version, "--preview", "--out", planFile, "-o", "markdown")
	if code != 0 && code != ExitFindings {
		t.Fatalf("plan exited %d: %s%s", code, out, errOut)
	}
	p := readPlan(t, planFile)
	apps := map[string]*plan.Application{}
	for i := range p.Applications {
		if p.Applications[i].Helm != nil {
			apps[p.Applications[i].Namespace] = &p.Applications[i]
		}
	}
	for _, tc := range []struct{ ns, rel, greeting string }{{ns1, "web1", ""}, {ns2, "web2", "upgraded"}} {
		app := apps[tc.ns]
		if app == nil {
			t.Fatalf("no Helm-sourced Application for %s in %s; applications %+v, findings %+v", tc.rel, tc.ns, p.Applications, p.Findings)
		}
		// Argo CD 2 tracks by the app.kubernetes.io/instance label, which
		// the chart sets to the release name: the Application must bear it.
		if label := p.Tracking.Method == argoapp.TrackingLabel; label != (app.Name == tc.rel) {
			t.Errorf("%s: Application %q under tracking %s", tc.rel, app.Name, p.Tracking.Method)
		}
		hs := app.Helm
		if hs.ReleaseName != tc.rel || hs.Chart != "web" || hs.Version != "1.2.3" || hs.RepoURL != repo.URL || !strings.Contains(hs.SourceFrom, `"stable"`) || hs.Storage != "Secret" {
			t.Errorf("%s: chart source %+v", tc.rel, hs)
		}
		auth, _ := hs.Values["auth"].(map[string]any)
		if auth["password"] != "adopt:redacted:auth.password" || strings.Join(hs.Placeholders, ",") != "auth.password" {
			t.Errorf("%s: values %v, placeholders %v", tc.rel, hs.Values, hs.Placeholders)
		}
		if g, _ := hs.Values["greeting"].(string); g != tc.greeting {
			t.Errorf("%s: greeting %q in the values, want %q (the newest revision's)", tc.rel, g, tc.greeting)
		}
		if hs.Proof == nil || !hs.Proof.Equal() || hs.Proof.Objects != 3 || hs.Proof.Identical != 2 {
			t.Errorf("%s: proof %+v", tc.rel, hs.Proof)
		}
		if len(app.Objects) != 3 {
			t.Errorf("%s: objects %v", tc.rel, app.Objects)
		}
		for _, ref := range app.Objects {
			if ob := p.Object(ref); ob == nil || ob.Preview == nil && !strings.HasPrefix(ref, "Secret") {
				t.Errorf("%s: %s has no first-sync preview", tc.rel, ref)
			} else if ob.Preview != nil && ob.Preview.Outcome == "would-fail" {
				t.Errorf("%s: %s: the first sync would fail: %s", tc.rel, ref, ob.Preview.Verdict)
			}
		}
	}
	blocked := false
	for _, f := range p.Findings {
		if f.Code == plan.CodeHelmBlocked && strings.Contains(f.Message, ns3+"/orphan") && strings.Contains(f.Message, "chart source unknown") && strings.Contains(f.Message, "helmRepositories") {
			blocked = true
		}
		if f.Code == plan.CodeHelmBlocked && !strings.Contains(f.Message, "orphan") {
			t.Errorf("another release is blocked: %s", f.Message)
		}
	}
	if !blocked || apps[ns3] != nil {
		t.Errorf("orphan: blocked finding %v, Application %+v; findings %+v", blocked, apps[ns3], p.Findings)
	}
	for _, ob := range p.Objects {
		if ob.Namespace == ns3 && (ob.App != "" || ob.Risk != plan.Critical) {
			t.Errorf("orphan's %s: app %q risk %q", ob.Ref.String(), ob.App, ob.Risk)
		}
		if strings.HasPrefix(ob.Name, "sh.helm.release.v1.") {
			t.Errorf("release record %s is proposed for adoption", ob.Ref.String())
		}
	}
	records := 0
	for _, s := range p.Skipped {
		if s.Class == judge.SkipHelm {
			records++
		}
	}
	if records != 4 { // web1 v1, web2 v1 and v2, orphan v1
		t.Errorf("%d release records skipped, want 4", records)
	}
	if !strings.Contains(out, "helm") {
		t.Errorf("the markdown plan does not mention Helm:\n%s", out)
	}

	out, errOut, code = run("apply", "--plan", planFile, "--repo", gitURL, "--branch", "adopt", "--author", "T <t@example.invalid>", "-q")
	if code != 0 {
		t.Fatalf("apply exited %d: %s%s", code, out, errOut)
	}
	tip := tipOf(t, g.BarePath("gitops"), "adopt")
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	_ = files.ForEach(func(f *gitobject.File) error {
		s, _ := f.Contents()
		scan.add("git "+f.Name, s)
		for _, ns := range []string{ns1, ns2, ns3} {
			if strings.HasPrefix(f.Name, p.Settings.ExportDir+"/"+ns) {
				t.Errorf("a Helm release's object was exported raw: %s", f.Name)
			}
		}
		return nil
	})
	scan.add("commit message", tip.Message)
	pb, _ := os.ReadFile(planFile)
	scan.add("plan file", string(pb))
	for _, ns := range []string{ns1, ns2} {
		app := apps[ns]
		text := fileText(t, tip, p.Settings.AppsDir+"/"+app.Name+".yaml")
		d, err := argoapp.DecodeApplication([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if s := d.Spec.Source; s.Chart != "web" || s.RepoURL != repo.URL || s.TargetRevision != "1.2.3" || s.Path != "" || s.Helm == nil || s.Helm.ReleaseName != app.Helm.ReleaseName {
			t.Errorf("%s: source %+v", app.Name, s)
		}
		if d.Spec.Destination.Namespace != ns {
			t.Errorf("%s: destination %+v", app.Name, d.Spec.Destination)
		}
		if err := a.CreateApplication(ctx, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	for _, ns := range []string{ns1, ns2} {
		app := apps[ns]
		st, err := a.WaitApplication(waitCtx, app.Name, func(s testenv.AppStatus) bool { return s.Failed() || testenv.SyncedHealthy(s) })
		if err != nil {
			t.Fatalf("%s: %v\nrepo-server: %s\ncontroller: %s", app.Name, err, a.LogTail("argocd-repo-server", 3000), a.LogTail("argocd-application-controller", 3000))
		}
		t.Logf("%s: %s", app.Name, st)
		if !testenv.SyncedHealthy(st) {
			t.Errorf("%s: want Synced/Healthy (no diff to live), got %s", app.Name, st)
		}
	}
	// finalize --sync runs the first sync (server-side apply, no prune),
	// waits for it, and cleans up.
	out, errOut, code = run("finalize", "--plan", planFile, "--app", apps[ns1].Name, "--app", apps[ns2].Name, "--sync", "--timeout", "3m", "-q")
	if code != 0 {
		t.Fatalf("finalize exited %d: %s%s\ncontroller: %s", code, out, errOut, a.LogTail("argocd-application-controller", 3000))
	}
	// finalize says Helm still has the releases, and how to retire their
	// records by hand; it deletes nothing.
	for _, want := range []string{"Helm release web1 (namespace " + ns1 + ") still has its records", "helm uninstall web1` would now delete objects Argo CD manages",
		"kubectl -n " + ns1 + " delete secrets -l owner=helm,name=web1", "Helm release web2 (namespace " + ns2 + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("finalize's report lacks %q:\n%s", want, out)
		}
	}
	for _, ns := range []string{ns1, ns2} {
		st, err := a.ApplicationStatus(ctx, apps[ns].Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s after finalize: %s", apps[ns].Name, st)
		if !testenv.SyncedHealthy(st) || st.OperationPhase != "Succeeded" {
			t.Errorf("%s: after the first sync %s, want Synced/Healthy and the sync Succeeded", apps[ns].Name, st)
		}
	}
	s1, err := c.Clientset().CoreV1().Secrets(ns1).Get(ctx, "web1-auth", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s1.Data["password"]) != helmPassword {
		t.Errorf("the sync changed web1's live password to %q", s1.Data["password"])
	}
	cm2, err := c.Clientset().CoreV1().ConfigMaps(ns2).Get(ctx, "web2-cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm2.Data["greeting"] != "upgraded" {
		t.Errorf("web2's greeting is %q after the sync, want the upgraded value", cm2.Data["greeting"])
	}

	if after := uidsOf(); !equalUIDs(uids, after) {
		t.Errorf("objects were recreated: UIDs before %v, after %v", uids, after)
	}
	list := helm("list", "-A", "-q")
	for _, rel := range []string{"web1", "web2", "orphan"} {
		if !strings.Contains(list, rel) {
			t.Errorf("helm list no longer shows %s:\n%s", rel, list)
		}
	}

	// --retire-helm-records retires web2's two records once its
	// Application is Synced and Healthy on the real controller: helm no
	// longer lists it, Argo CD still has it Synced and Healthy with the
	// same objects; --undo brings the release back as it was.
	manifest := helm("get", "manifest", "web2", "-n", ns2)
	out, errOut, code = run("finalize", "--plan", planFile, "--app", apps[ns2].Name, "--retire-helm-records", "--timeout", "3m", "-q")
	if code != 0 || !strings.Contains(out, "2 Helm records retired") {
		t.Fatalf("finalize --retire-helm-records exited %d: %s%s", code, out, errOut)
	}
	if list := helm("list", "-n", ns2, "-q"); strings.TrimSpace(list) != "" {
		t.Errorf("helm list still shows %q after retiring", list)
	}
	if st, err := a.ApplicationStatus(ctx, apps[ns2].Name); err != nil || !testenv.SyncedHealthy(st) {
		t.Errorf("%s after retiring the records: %s %v", apps[ns2].Name, st, err)
	}
	if after := uidsOf(); !equalUIDs(uids, after) {
		t.Errorf("retiring the records recreated objects: UIDs before %v, after %v", uids, after)
	}
	out, errOut, code = run("finalize", "--plan", planFile, "--app", apps[ns2].Name, "--undo", "-q")
	if code != 0 || !strings.Contains(out, "2 records restored") {
		t.Fatalf("finalize --undo exited %d: %s%s", code, out, errOut)
	}
	if got := helm("get", "manifest", "web2", "-n", ns2); got != manifest {
		t.Errorf("helm get manifest web2 after --undo differs from before")
	}
	scan.check(t)
}

func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestHelmReleaseOnRealArgoCDv2: the same on Argo CD 2, which tracks by
// label, so the Applications are named after their releases.
func TestHelmReleaseOnRealArgoCDv2(t *testing.T) { helmE2E(t, testenv.ArgoCDOldest) }
