package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
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

func TestRealRepoOnRealArgoCDv3(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	realRepoOracle(t, testenv.ArgoCDCurrent)
}

// TestRealRepoOnRealArgoCDv2: the same on Argo CD 2, which tracks by
// label.
func TestRealRepoOnRealArgoCDv2(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	realRepoOracle(t, testenv.ArgoCDOldest)
}

// realRepoOracle (issue 34, Oracle): the example-apps fixture (modelled on
// argoproj/argocd-example-apps, see testdata/realrepos) is applied by hand
// twice on one control plane with real Argo CD and its bundled kustomize.
//
// First with no Application: every Application plan --repo <checkout>
// proposes (a directory one per guestbook namespace, a kustomize one, a
// Helm one at the chart in Git), written by apply to the adoption branch
// and created from there, is rendered by Argo CD into objects that differ
// from live by the tracking mark alone, and nothing more.
//
// Then with the repo's own app of apps: the root, synced by Argo CD,
// creates the three child Applications, each syncs and takes the objects
// applied by hand (none recreated), no Application reports a
// SharedResourceWarning, and plan proposes no second Application over
// them: only the guestbook namespace no child deploys to gets one.
func realRepoOracle(t *testing.T, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, version)
	var rr realRepo
	for _, r := range realRepos() {
		if r.name == "example-apps" {
			rr = r
		}
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	gvr := map[string]schema.GroupVersionResource{
		"Service":    {Version: "v1", Resource: "services"},
		"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	}
	live := func(kind, ns, name string) *unstructured.Unstructured {
		t.Helper()
		u, err := dyn.Resource(gvr[kind]).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
		}
		return u
	}
	adoptOn := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	run := func(args ...string) (*plan.Plan, string) {
		t.Helper()
		planFile := filepath.Join(t.TempDir(), "plan.yaml")
		out, errOut, code := adoptOn(append([]string{"plan", "--argocd-version", version, "--out", planFile, "-q"}, args...)...)
		if code != 0 && code != ExitFindings {
			t.Fatalf("plan exited %d: %s%s", code, out, errOut)
		}
		return readPlan(t, planFile), planFile
	}

	t.Run("new Applications", func(t *testing.T) {
		r := setUpRealRepo(t, c, a.Namespace, rr)
		rr.byHand(t, r)
		nsArg := strings.Join(sortedValues(r.ns), ",")
		p, planFile := run("--repo", r.checkout, "-n", nsArg)
		if len(p.Applications) != 4 {
			t.Fatalf("plan proposes %d Applications, want 4 (two guestbook, kustomize, helm): %+v; findings %+v", len(p.Applications), p.Applications, p.Findings)
		}
		out, errOut, code := adoptOn("apply", "--plan", planFile, "--repo", r.url, "--branch", "adopt", "--author", "T <t@example.invalid>", "-q")
		if code != 0 {
			t.Fatalf("apply exited %d: %s%s", code, out, errOut)
		}
		tip := tipOf(t, r.git.BarePath(r.name), "adopt")
		for _, app := range p.Applications {
			text := fileText(t, tip, p.Settings.AppsDir+"/"+app.Name+".yaml")
			if err := a.CreateApplication(ctx, []byte(text)); err != nil {
				t.Fatal(err)
			}
			st, err := a.WaitApplication(ctx, app.Name, func(s testenv.AppStatus) bool { return s.Sync != "" && s.Sync != "Unknown" || len(s.Conditions) > 0 })
			if err != nil || st.Sync == "Unknown" || len(st.Conditions) > 0 {
				t.Fatalf("%s: %v, status %s\nrepo-server: %s", app.Name, err, st, a.LogTail("argocd-repo-server", 3000))
			}
			ms, err := a.Manifests(ctx, app.Name)
			if err != nil {
				t.Fatal(err)
			}
			var rendered []string
			for _, m := range ms {
				u := &unstructured.Unstructured{Object: m}
				ns := u.GetNamespace()
				if ns == "" {
					ns = app.Namespace
				}
				rendered = append(rendered, strings.TrimPrefix(u.GroupVersionKind().Group+"/", "/")+u.GetKind()+" "+ns+"/"+u.GetName())
				l := live(u.GetKind(), ns, u.GetName())
				if d := gitindex.Compare(withoutTracking(t, u, l, p.Tracking, app.Name), l.Object); !d.Identical() {
					t.Errorf("%s: Argo CD %s renders %s %s/%s, which differs from live at %v beyond the tracking mark", app.Name, version, u.GetKind(), ns, u.GetName(), d.Fields)
				}
			}
			slices.Sort(rendered)
			if strings.Join(rendered, ",") != strings.Join(app.Objects, ",") {
				t.Errorf("%s: Argo CD renders %v, the plan adopts %v", app.Name, rendered, app.Objects)
			}
		}
	})

	t.Run("the repo's Applications", func(t *testing.T) {
		r := setUpRealRepo(t, c, a.Namespace, rr)
		rr.byHand(t, r)
		uids := map[string]string{}
		for _, ns := range []string{r.ns["NS_GUESTBOOK"], r.ns["NS_KUSTOMIZE"], r.ns["NS_HELM"]} {
			for kind := range gvr {
				l, err := dyn.Resource(gvr[kind]).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range l.Items {
					uids[kind+" "+ns+"/"+o.GetName()] = string(o.GetUID())
				}
			}
		}
		if len(uids) != 6 {
			t.Fatalf("applied by hand: %v, want 6 objects", uids)
		}
		r.kc(t, []byte(strings.Join(r.ownApplications(rr), "---\n")), "apply", "-f", "-")
		children := []string{"suite-guestbook", "suite-helm-guestbook", "suite-kustomize-guestbook"}
		for _, name := range append([]string{"example-apps"}, children...) {
			st, err := a.WaitApplication(ctx, name, func(s testenv.AppStatus) bool {
				return s.Failed() || s.Sync == "Synced" && s.OperationPhase == "Succeeded"
			})
			if err != nil || st.Failed() {
				t.Fatalf("%s: %v, status %s\ncontroller: %s", name, err, st, a.LogTail("argocd-application-controller", 3000))
			}
			for _, cond := range st.Conditions {
				if strings.HasPrefix(cond, "SharedResourceWarning") {
					t.Errorf("%s: %s", name, cond)
				}
			}
		}
		for key, uid := range uids {
			kind, nsName, _ := strings.Cut(key, " ")
			ns, name, _ := strings.Cut(nsName, "/")
			if got := string(live(kind, ns, name).GetUID()); got != uid {
				t.Errorf("%s was recreated by the sync", key)
			}
		}
		p, _ := run("--repo", r.checkout, "-n", strings.Join(sortedValues(r.ns), ","))
		var got []string
		for _, app := range p.Applications {
			got = append(got, app.Source+" "+app.SourcePath+" "+app.Namespace)
		}
		if want := "git guestbook " + r.ns["NS_GUESTBOOK2"]; strings.Join(got, ",") != want {
			t.Errorf("after the repo's Applications synced, plan proposes %v, want only %q", got, want)
		}
	})
}

// withoutTracking is Argo CD's rendered object u without the tracking
// mark it adds: the tracking-id annotation, and under label tracking the
// instance label (the Application's name) when live does not carry it.
func withoutTracking(t *testing.T, u, live *unstructured.Unstructured, tr argoapp.Tracking, app string) map[string]any {
	t.Helper()
	c := u.DeepCopy()
	if tr.Method == argoapp.TrackingLabel {
		labels := c.GetLabels()
		if labels[tr.InstanceLabelKey] != app {
			t.Errorf("%s %s: instance label %q, want the Application's name %s", c.GetKind(), c.GetName(), labels[tr.InstanceLabelKey], app)
		}
		if _, ok := live.GetLabels()[tr.InstanceLabelKey]; !ok {
			delete(labels, tr.InstanceLabelKey)
			c.SetLabels(labels)
		}
	}
	return untrackedCopy(t, &unstructured.Unstructured{Object: c.Object}, argoapp.Tracking{}, app)
}
