package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

func TestHelmChartInGitOnRealArgoCDv3(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	helmGitE2E(t, testenv.ArgoCDCurrent)
}

// TestHelmChartInGitOnRealArgoCDv2: the same on Argo CD 2, which tracks by
// label, so the Applications are named after their releases.
func TestHelmChartInGitOnRealArgoCDv2(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	helmGitE2E(t, testenv.ArgoCDOldest)
}

// helmGitE2E: three releases installed by the real helm CLI from a
// checkout of the GitOps repo (`helm upgrade --install NAME
// <checkout>/charts/web`): with no values, with -f values-production.yaml,
// and with --set holding a password. plan --repo <URL> proposes a Helm
// Application at path charts/web for each; apply writes it; each
// Application, created from the adoption branch, is rendered by real Argo
// CD into objects that differ from live by the tracking mark alone (and
// the placeholder in the Secret whose data is kept from live), is Synced
// before any sync, and syncs (finalize --sync) with every object kept.
func helmGitE2E(t *testing.T, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, version)
	h, err := testenv.NewHelm(c, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkout := t.TempDir()
	files := helmGitRepo(t, checkout, nil)
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gitURL, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(checkout, "charts/web")
	ns := map[string]string{"web-default": c.Namespace(t), "web-prod": c.Namespace(t), "web-inline": c.Namespace(t)}
	helmRun(ctx, t, h, "upgrade", "--install", "web-default", web, "-n", ns["web-default"])
	helmRun(ctx, t, h, "upgrade", "--install", "web-prod", web, "-n", ns["web-prod"], "-f", filepath.Join(web, "values-production.yaml"))
	helmRun(ctx, t, h, "upgrade", "--install", "web-inline", web, "-n", ns["web-inline"], "--set", "auth.password="+helmGitPassword, "--set", "greeting=inline")
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	live := func(rel, kind, name string) *unstructured.Unstructured {
		t.Helper()
		res := map[string]string{"ConfigMap": "configmaps", "Secret": "secrets", "Service": "services"}[kind]
		u, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: res}).Namespace(ns[rel]).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	uids := map[string]string{}
	for rel := range ns {
		for kind, name := range map[string]string{"ConfigMap": rel + "-cfg", "Secret": rel + "-auth", "Service": rel} {
			uids[rel+" "+kind] = string(live(rel, kind, name).GetUID())
		}
	}

	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{"web-inline's password": helmGitPassword}}
	run := scannedRun(t, c, nil, scan)
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	// Its own namespaces: the shared Argo CD plane may hold other tests'
	// Helm releases, whatever order they run in.
	out, errOut, code := run("plan", "-n", ns["web-default"]+","+ns["web-prod"]+","+ns["web-inline"], "--repo", gitURL, "--argocd-version", version, "--preview", "--out", planFile, "-o", "markdown")
	if code != 0 && code != ExitFindings {
		t.Fatalf("plan exited %d: %s%s", code, out, errOut)
	}
	p := readPlan(t, planFile)
	apps := map[string]*plan.Application{}
	for i := range p.Applications {
		if hs := p.Applications[i].Helm; hs != nil {
			apps[hs.ReleaseName] = &p.Applications[i]
		}
	}
	for rel := range ns {
		app := apps[rel]
		if app == nil || app.Helm.Path != "charts/web" || !app.Helm.Proof.Equal() {
			t.Fatalf("%s: Application %+v; findings %+v", rel, app, p.Findings)
		}
	}
	out, errOut, code = run("apply", "--plan", planFile, "--repo", gitURL, "--branch", "adopt", "--author", "T <t@example.invalid>", "-q")
	if code != 0 {
		t.Fatalf("apply exited %d: %s%s", code, out, errOut)
	}
	tip := tipOf(t, g.BarePath("gitops"), "adopt")
	scan.add("commit message", tip.Message)
	pb, _ := os.ReadFile(planFile)
	scan.add("plan file", string(pb))
	for rel, want := range map[string]string{"web-default": "", "web-prod": "values-production.yaml", "web-inline": ""} {
		app := apps[rel]
		text := fileText(t, tip, p.Settings.AppsDir+"/"+app.Name+".yaml")
		scan.add("git "+app.Name, text)
		d, err := argoapp.DecodeApplication([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		s := d.Spec.Source
		if s.RepoURL != gitURL || s.Path != "charts/web" || s.Chart != "" || s.TargetRevision != "main" || s.Helm == nil || s.Helm.ReleaseName != rel ||
			strings.Join(s.Helm.ValueFiles, ",") != want || (s.Helm.ValuesObject != nil) != (rel == "web-inline") || d.Spec.Destination.Namespace != ns[rel] {
			t.Errorf("%s: Application\n%s", rel, text)
		}
		if err := a.CreateApplication(ctx, []byte(text)); err != nil {
			t.Fatal(err)
		}
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	var names []string
	for rel := range ns {
		app := apps[rel]
		names = append(names, "--app", app.Name)
		st, err := a.WaitApplication(waitCtx, app.Name, func(s testenv.AppStatus) bool { return s.Failed() || testenv.SyncedHealthy(s) })
		if err != nil {
			t.Fatalf("%s: %v\nrepo-server: %s", app.Name, err, a.LogTail("argocd-repo-server", 3000))
		}
		if !testenv.SyncedHealthy(st) {
			t.Errorf("%s: want Synced/Healthy before any sync (no diff to live), got %s", app.Name, st)
		}
		ms, err := a.Manifests(ctx, app.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 3 {
			t.Errorf("%s: Argo CD renders %d objects, want 3", app.Name, len(ms))
		}
		for _, m := range ms {
			u := &unstructured.Unstructured{Object: m}
			untracked := untrackedCopy(t, u, p.Tracking, app.Name)
			l := live(rel, u.GetKind(), u.GetName())
			if u.GetKind() == "Secret" {
				// Argo CD's manifests API masks Secret data; the keys
				// must be live's, the values are the plan's proof's.
				want, _, _ := unstructured.NestedMap(l.Object, "data")
				got, _, _ := unstructured.NestedMap(untracked, "data")
				if len(got) != len(want) || got["password"] == nil {
					t.Errorf("%s: Argo CD's Secret data keys %v, live %v", app.Name, got, len(want))
				}
				delete(untracked, "data")
			}
			if d := gitindex.Compare(untracked, l.Object); !d.Identical() {
				t.Errorf("%s: Argo CD's %s %s differs from live at %v beyond the tracking mark", app.Name, u.GetKind(), u.GetName(), d.Fields)
			}
		}
	}
	out, errOut, code = run(append([]string{"finalize", "--plan", planFile, "--sync", "--timeout", "3m", "-q"}, names...)...)
	if code != 0 {
		t.Fatalf("finalize exited %d: %s%s\ncontroller: %s", code, out, errOut, a.LogTail("argocd-application-controller", 3000))
	}
	for rel := range ns {
		st, err := a.ApplicationStatus(ctx, apps[rel].Name)
		if err != nil {
			t.Fatal(err)
		}
		if !testenv.SyncedHealthy(st) || st.OperationPhase != "Succeeded" {
			t.Errorf("%s: after the first sync %s, want Synced/Healthy and the sync Succeeded", apps[rel].Name, st)
		}
		for kind, name := range map[string]string{"ConfigMap": rel + "-cfg", "Secret": rel + "-auth", "Service": rel} {
			if uid := string(live(rel, kind, name).GetUID()); uid != uids[rel+" "+kind] {
				t.Errorf("%s %s was recreated", kind, name)
			}
		}
	}
	if pw, _, _ := unstructured.NestedString(live("web-inline", "Secret", "web-inline-auth").Object, "data", "password"); pw != base64.StdEncoding.EncodeToString([]byte(helmGitPassword)) {
		t.Error("the sync changed web-inline's live password")
	}
	if g, _, _ := unstructured.NestedString(live("web-prod", "ConfigMap", "web-prod-cfg").Object, "data", "greeting"); g != "production" {
		t.Errorf("web-prod's greeting is %q after the sync, want values-production.yaml's", g)
	}
	scan.check(t)
}

// untrackedCopy is Argo CD's rendered object without the tracking mark it
// adds: the tracking-id annotation, and under label tracking the instance
// label when it is the Application's name (the chart's release name here,
// which live carries too).
func untrackedCopy(t *testing.T, u *unstructured.Unstructured, tr argoapp.Tracking, app string) map[string]any {
	t.Helper()
	c := u.DeepCopy()
	ann := c.GetAnnotations()
	delete(ann, "argocd.argoproj.io/tracking-id")
	if len(ann) == 0 {
		ann = nil
	}
	c.SetAnnotations(ann)
	if tr.Method == argoapp.TrackingLabel && c.GetLabels()[tr.InstanceLabelKey] != app {
		t.Errorf("%s %s: instance label %q, want the Application's name %s", c.GetKind(), c.GetName(), c.GetLabels()[tr.InstanceLabelKey], app)
	}
	return c.Object
}

// argoCDPlane is a control plane with a real Argo CD version on it that
// the package's tests share, the test's alone until it ends: a free one of
// that version, else a new one while fewer than planesPerVersion run, else
// the first another test gives back (a control plane and an Argo CD take
// 15 s to start; planes are stopped when the package's tests end). Each
// test works in namespaces, repositories and Applications of its own; the
// Applications it created are deleted when it ends, so that Argo CD does
// not keep reconciling them for the next test.
func argoCDPlane(ctx context.Context, t *testing.T, version string) (*testenv.ControlPlane, *testenv.ArgoCD) {
	t.Helper()
	p := takeArgoPlane(t, version)
	t.Cleanup(func() { argoPlanes.free[version] <- p }) // cleanups run last first: after the deletes below
	apps := dynamic.NewForConfigOrDie(p.c.RESTConfig()).Resource(argoapp.ApplicationGVR).Namespace(p.a.Namespace)
	before := map[string]bool{}
	if l, err := apps.List(ctx, metav1.ListOptions{}); err == nil {
		for _, u := range l.Items {
			before[u.GetName()] = true
		}
	}
	t.Cleanup(func() {
		l, err := apps.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, u := range l.Items {
			if !before[u.GetName()] {
				_ = apps.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
			}
		}
	})
	return p.c, p.a
}

// planesPerVersion is how many planes of one Argo CD version may run at
// once. One: a full go test ./... is CPU-bound on 2 cores, and a second
// plane of the current GA (which most of the Argo CD tests use) measured
// no faster (cmd/adopt 448 s against 455 s) for its own start and idle
// cost.
const planesPerVersion = 1

// takeArgoPlane takes a plane of version for t, starting one if none is
// free and fewer than planesPerVersion run, else waiting for one.
func takeArgoPlane(t *testing.T, version string) *argoPlane {
	t.Helper()
	argoPlanes.Lock()
	free := argoPlanes.free[version]
	if free == nil {
		free = make(chan *argoPlane, planesPerVersion)
		argoPlanes.free[version] = free
	}
	select {
	case p := <-free:
		argoPlanes.Unlock()
		return p
	default:
	}
	if argoPlanes.started[version] == planesPerVersion {
		argoPlanes.Unlock()
		return <-free
	}
	argoPlanes.started[version]++
	argoPlanes.Unlock()
	c, err := testenv.Start(context.Background(), testenv.Options{})
	if err == nil {
		var a *testenv.ArgoCD
		if a, err = testenv.StartArgoCD(context.Background(), c, version); err == nil {
			p := &argoPlane{c: c, a: a}
			argoPlanes.Lock()
			argoPlanes.all = append(argoPlanes.all, p)
			argoPlanes.Unlock()
			return p
		}
		c.Stop()
	}
	argoPlanes.Lock()
	argoPlanes.started[version]--
	argoPlanes.Unlock()
	t.Fatalf("a control plane with Argo CD %s did not start: %v", version, err)
	return nil
}

// argoPlanes are the shared Argo CD planes: every one started, the free
// ones and how many were started, by version.
var argoPlanes = struct {
	sync.Mutex
	all     []*argoPlane
	free    map[string]chan *argoPlane
	started map[string]int
}{free: map[string]chan *argoPlane{}, started: map[string]int{}}

type argoPlane struct {
	c *testenv.ControlPlane
	a *testenv.ArgoCD
	// appSets is set once its ApplicationSet controller runs
	// (appSetController).
	appSets bool
}

// stopArgoPlanes stops the shared planes (TestMain, after the tests).
func stopArgoPlanes() {
	argoPlanes.Lock()
	defer argoPlanes.Unlock()
	for _, p := range argoPlanes.all {
		p.a.Stop()
		p.c.Stop()
	}
}

// scannedRun runs adopt against c and adds all it prints to scan.
func scannedRun(t *testing.T, c *testenv.ControlPlane, env map[string]string, scan *leakScan) func(args ...string) (string, string, int) {
	return func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := runAdoptEnv(t, env, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		scan.add(args[0]+" stdout", out.String())
		scan.add(args[0]+" stderr", errb.String())
		return out.String(), errb.String(), code
	}
}
