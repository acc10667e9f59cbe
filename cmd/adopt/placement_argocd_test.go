package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestNewAppGeneratedByTheReposApplicationSetOnRealArgoCD (issue 46,
// Oracle): a repo laid out as many-appsets is (apps/<app>/base,
// apps/<app>/envs/<env> overlays, an ApplicationSet whose Git directory
// generator reads apps/*/envs/<env> into <app>-<env>), with its
// ApplicationSet in the cluster and Argo CD v3's real ApplicationSet
// controller running. A new app, coupons, applied by hand into
// coupons-<env>, is planned (with the first-sync preview) and applied:
// the commit writes apps/coupons/envs/<env>/ (the manifests and a
// kustomization, as the siblings have) and no Application. Once merged,
// the repo's own ApplicationSet generates coupons-<env> (the name the
// plan showed), Argo CD renders exactly the live objects but for the
// tracking mark, syncs, and the live objects differ from before only by
// the tracking id the preview was made with; none is recreated, and no
// Application adopt wrote exists. finalize then cleans them up.
func TestNewAppGeneratedByTheReposApplicationSetOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	appSetController(ctx, t, a)
	own := c.Namespace(t) // its random tail names the env, so cluster-wide names are the test's
	env := "e" + own[len(own)-6:]
	coupons, ledger, set := "coupons-"+env, "ledger-"+env, "fleet-"+env
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	sets := dyn.Resource(argoapp.ApplicationSetGVR).Namespace(a.Namespace)
	for _, ns := range []string{coupons, ledger} {
		if out, err := c.Kubectl(ctx, nil, "create", "namespace", ns); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), nil, "delete", "namespace", ns, "--wait=false") })
	}

	appSet := func(url string) string {
		return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: %[2]s
  namespace: %[3]s
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - git:
      repoURL: %[1]s
      revision: HEAD
      directories:
      - path: apps/*/envs/%[4]s
  template:
    metadata:
      name: '{{index .path.segments 1}}-{{index .path.segments 3}}'
    spec:
      project: default
      source:
        repoURL: %[1]s
        targetRevision: HEAD
        path: '{{.path.path}}'
      destination:
        server: https://kubernetes.default.svc
        namespace: '{{index .path.segments 1}}-{{index .path.segments 3}}'
      syncPolicy:
        automated: {}
        syncOptions: [ServerSideApply=true]
`, url, set, a.Namespace, env)
	}
	files := map[string]string{
		"README.md":                                       "fleet\n",
		"apps/ledger/base/kustomization.yaml":             "resources: [settings.yaml]\n",
		"apps/ledger/base/settings.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ledger-settings}\ndata: {currency: EUR}\n",
		"apps/ledger/envs/" + env + "/kustomization.yaml": "resources: [../../base]\n",
	}
	g, url := gitRepo(t, "fleet", files)
	bare := g.BarePath("fleet")
	git := func(args ...string) {
		t.Helper()
		if b, err := exec.Command("git", append([]string{"-C", bare}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	// The ApplicationSet is applied (as the repo's root would) before the
	// plan; it is deleted first when the test ends, so that its
	// Applications do not come back.
	if err := a.CreateApplication(ctx, []byte(appSet(url))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), set, metav1.DeleteOptions{}) })
	if _, err := a.WaitApplication(ctx, ledger, testenv.SyncedHealthy); err != nil {
		t.Fatalf("the ApplicationSet's existing app: %v\n%s", err, a.LogTail("argocd-applicationset-controller", 2000))
	}

	byHand := `apiVersion: v1
kind: ConfigMap
metadata: {name: coupons-settings, labels: {app: coupons}}
data: {discount: "10", currency: EUR}
---
apiVersion: v1
kind: Service
metadata: {name: coupons-api, labels: {app: coupons}}
spec:
  selector: {app: coupons}
  ports: [{name: http, port: 80, targetPort: 8080}]
`
	if out, err := c.Kubectl(ctx, []byte(byHand), "apply", "-n", coupons, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	gvr := map[string]schema.GroupVersionResource{"ConfigMap": {Version: "v1", Resource: "configmaps"}, "Service": {Version: "v1", Resource: "services"}}
	live := func(kind, name string) *unstructured.Unstructured {
		t.Helper()
		u, err := dyn.Resource(gvr[kind]).Namespace(coupons).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	before := map[string]*unstructured.Unstructured{"ConfigMap": live("ConfigMap", "coupons-settings"), "Service": live("Service", "coupons-api")}

	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("adopt %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}
	planFile := t.TempDir() + "/plan.yaml"
	run("plan", "-n", coupons, "--repo", url, "--argocd-namespace", a.Namespace, "--preview", "--out", planFile, "-q")
	p := readPlan(t, planFile)
	if len(p.Applications) != 1 || p.Applications[0].Generator == nil {
		t.Fatalf("the plan proposes %+v; want one Application the ApplicationSet generates", p.Applications)
	}
	app := p.Applications[0]
	dir := "apps/coupons/envs/" + env
	if app.Name != coupons || app.SourcePath != dir || app.Generator.ApplicationSet != a.Namespace+"/"+set || !app.Generator.Kustomization {
		t.Fatalf("Application %s from %s, generator %+v; want %s from %s generated by %s with a kustomization", app.Name, app.SourcePath, app.Generator, coupons, dir, set)
	}
	for _, ob := range p.Objects {
		if ob.App != coupons || ob.Preview == nil || ob.Preview.Outcome != "no-op" {
			t.Errorf("%s: Application %q, preview %+v; want %s's first sync previewed as a no-op", ob.Ref, ob.App, ob.Preview, coupons)
		}
	}

	prOut := run("apply", "--plan", planFile, "--repo", url, "--branch", "adopt-coupons", "--author", "T <t@example.invalid>")
	if !strings.Contains(prOut, "ApplicationSet "+a.Namespace+"/"+set+" generates it from "+dir) {
		t.Errorf("apply does not say how the Application reaches the cluster:\n%s", prOut)
	}
	tip := tipOf(t, bare, "adopt-coupons")
	written := treeFiles(t, tip)
	if !slices.Contains(written, dir+"/kustomization.yaml") || !slices.Contains(written, dir+"/configmap-coupons-settings.yaml") || !slices.Contains(written, dir+"/service-coupons-api.yaml") || slices.ContainsFunc(written, func(f string) bool { return strings.HasPrefix(f, p.Settings.AppsDir+"/") }) {
		t.Fatalf("the commit holds %v; want the exports and a kustomization.yaml in %s, and nothing in %s", written, dir, p.Settings.AppsDir)
	}

	// Merge (a fast-forward of main) and have the ApplicationSet read Git
	// now, as its webhook would, instead of at its next poll.
	git("update-ref", "refs/heads/main", "refs/heads/adopt-coupons")
	head := tipOf(t, bare, "main").Hash.String()
	if out, err := c.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "--overwrite", "applicationsets.argoproj.io", set, "argocd.argoproj.io/application-set-refresh=true"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 4*time.Minute)
	defer waitCancel()
	if _, err := a.WaitApplication(waitCtx, coupons, func(s testenv.AppStatus) bool { return testenv.SyncedHealthy(s) && s.Revision == head }); err != nil {
		t.Fatalf("%s: %v\nappset controller: %s\ncontroller: %s", coupons, err, a.LogTail("argocd-applicationset-controller", 2000), a.LogTail("argocd-application-controller", 2000))
	}

	// The Application is the ApplicationSet's, and adopt wrote none.
	apps := dyn.Resource(argoapp.ApplicationGVR).Namespace(a.Namespace)
	got, err := apps.Get(ctx, coupons, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owners := got.GetOwnerReferences(); len(owners) != 1 || owners[0].Kind != "ApplicationSet" || owners[0].Name != set {
		t.Errorf("Application %s is owned by %+v; want the ApplicationSet %s", coupons, owners, set)
	}
	list, err := apps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		dest, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace")
		if _, ok := u.GetLabels()[argoapp.PlanIDLabel]; ok && (dest == coupons || strings.Contains(u.GetAnnotations()["adopt.dev/objects"], coupons)) {
			t.Errorf("Application %s was written by adopt (%s)", u.GetName(), u.GetLabels()[argoapp.PlanIDLabel])
		}
	}
	if slices.ContainsFunc(treeFiles(t, tipOf(t, bare, "main")), func(f string) bool { return strings.HasPrefix(f, p.Settings.AppsDir+"/") }) {
		t.Errorf("main holds an Application file in %s", p.Settings.AppsDir)
	}

	// Argo CD renders the live objects but for the tracking mark; the sync
	// kept them (same uid) and added only the tracking id the preview
	// was made with.
	ms, err := a.Manifests(ctx, coupons)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(p.Objects) {
		t.Errorf("Argo CD renders %d objects, the plan adopts %d", len(ms), len(p.Objects))
	}
	for _, m := range ms {
		u := &unstructured.Unstructured{Object: m}
		after := live(u.GetKind(), u.GetName())
		if d := gitindex.Compare(withoutTracking(t, u, after, p.Tracking, coupons), after.Object); !d.Identical() {
			t.Errorf("Argo CD renders %s %s, which differs from live at %v beyond the tracking mark", u.GetKind(), u.GetName(), d.Fields)
		}
		b := before[u.GetKind()]
		if after.GetUID() != b.GetUID() {
			t.Errorf("%s %s was recreated", u.GetKind(), u.GetName())
		}
		ref := p.Object(strings.TrimPrefix(u.GroupVersionKind().Group+"/", "/") + u.GetKind() + " " + coupons + "/" + u.GetName())
		if ref == nil {
			t.Errorf("Argo CD renders %s %s, which the plan does not adopt", u.GetKind(), u.GetName())
			continue
		}
		if id, want := after.GetAnnotations()[argoapp.AnnotationTrackingID], (argoapp.TrackingID{AppName: ref.App, Ref: ref.Ref}).String(); id != want {
			t.Errorf("%s %s: tracking id %q, want %q (the plan's and its preview's)", u.GetKind(), u.GetName(), id, want)
		}
		synced := after.DeepCopy()
		unstructured.RemoveNestedField(synced.Object, "metadata", "annotations", argoapp.AnnotationTrackingID)
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(synced.Object, "metadata", f)
		}
		if d := gitindex.Compare(synced.Object, b.Object); !d.Identical() {
			t.Errorf("%s %s: the sync changed %v beyond the tracking id", u.GetKind(), u.GetName(), d.Fields)
		}
	}

	run("finalize", "--plan", planFile, "--timeout", "2m", "--poll-interval", "500ms")
	for kind, name := range map[string]string{"ConfigMap": "coupons-settings", "Service": "coupons-api"} {
		if _, ok := live(kind, name).GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			t.Errorf("%s %s still carries last-applied-configuration after finalize", kind, name)
		}
	}
}

// appSetController starts Argo CD's ApplicationSet controller on a shared
// plane once.
func appSetController(ctx context.Context, t *testing.T, a *testenv.ArgoCD) {
	t.Helper()
	argoPlanes.Lock()
	defer argoPlanes.Unlock()
	for _, p := range argoPlanes.all {
		if p.a == a && !p.appSets {
			if err := a.StartApplicationSetController(ctx); err != nil {
				t.Fatal(err)
			}
			p.appSets = true
		}
	}
}

// treeFiles are the files of a commit, by path.
func treeFiles(t *testing.T, c *gitobject.Commit) []string {
	t.Helper()
	fs, err := c.Files()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	_ = fs.ForEach(func(f *gitobject.File) error {
		out = append(out, f.Name)
		return nil
	})
	return out
}
