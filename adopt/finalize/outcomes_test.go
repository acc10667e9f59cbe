package finalize_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// argo is a fake of Argo CD's seam (the Runner's Reader and Syncer): each
// Application's state as scripted, and a sync that does what Argo CD's
// first sync does to the objects (apply runs it: a server-side apply by
// argocd-controller with the tracking id) and then reads Synced and
// Healthy. Which state Argo CD is in is the decision the Runner makes
// from; the objects it patches are real.
type argo struct {
	mu     sync.Mutex
	states map[string]argoapp.AppState
	apply  func(app string)
	syncs  []string
}

func (a *argo) Application(_ context.Context, name string) (argoapp.AppState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.states[name]
	if !ok {
		return argoapp.AppState{Name: name}, nil
	}
	s.Name = name
	return s, nil
}

func (a *argo) Sync(_ context.Context, name, _ string, _ argoapp.Version) error {
	a.mu.Lock()
	a.syncs = append(a.syncs, name)
	a.mu.Unlock()
	if a.apply != nil {
		a.apply(name)
	}
	a.mu.Lock()
	a.states[name] = healthy
	a.mu.Unlock()
	return nil
}

var (
	healthy = argoapp.AppState{Found: true, Phase: argoapp.PhaseSucceeded, Sync: argoapp.SyncSynced, Health: argoapp.HealthHealthy,
		Revision: "0123456789abcdef", History: []string{"0123456789abcdef"}}
	neverSynced = argoapp.AppState{Found: true, Sync: "OutOfSync", Health: "Missing"}
)

// argoApplyAs applies the ConfigMap of ns as Argo CD's sync of
// Application appName does: server-side, by argocd-controller, with the
// tracking id naming appName.
func argoApplyAs(t *testing.T, ns, appName string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(cmManifest(ns, map[string]string{"k": "v"}, map[string]string{argoapp.AnnotationTrackingID: appName + ":/ConfigMap:" + ns + "/" + name}), &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn(t).Resource(cmGVR).Namespace(ns).Apply(context.Background(), name, u, metav1.ApplyOptions{FieldManager: finalize.ArgoCDManager, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerOutcomes: what the Runner decides for one Application from
// what Argo CD says of it (a fake of the Reader and Syncer seams), with
// the adopted ConfigMap real on the kube-apiserver: a ready Application's
// object is finalized (and already finalized on the next run, would be in
// a dry run); the first sync is started once with --sync (and only said in
// a dry run, never while a sync runs), and again for an Application that
// synced before while an object lacks its tracking, or whose sync failed
// (re-run with --sync, as the failure says); one never synced without
// --sync, still running, or whose sync failed is explained and its object
// left untouched (the annotation cap's failure named with its remedy); an Application renamed in review is found by its source and
// finalized under its new name; a Secret apply left out is reported left
// out.
func TestRunnerOutcomes(t *testing.T) {
	const capFailure = `ConfigMap "x" is invalid: metadata.annotations: Too long: must have at most 262144 bytes`
	failed := argoapp.AppState{Found: true, Phase: argoapp.PhaseFailed, Message: capFailure, Sync: "OutOfSync", Health: "Missing"}
	running := argoapp.AppState{Found: true, Operation: true, Sync: "OutOfSync", Health: "Missing"}
	cases := []struct {
		name string
		// state is the Application's state before the run; tracked, whether
		// the object already carries its tracking (Argo CD synced it).
		state          argoapp.AppState
		tracked        bool
		sync, dryRun   bool
		renamed, twice bool
		leftOut        bool
		// want: the object's status, the reason's words, whether the
		// annotation is gone after, the syncs started, and words of the
		// Application's report (Waiting, Problems, Notes).
		status   finalize.Status
		reason   string
		removed  bool
		syncs    int
		appSays  string
		notReady bool
	}{
		{name: "ready", state: healthy, tracked: true, status: finalize.StatusFinalized, removed: true},
		{name: "ready, run again", state: healthy, tracked: true, twice: true, status: finalize.StatusAlready, removed: true},
		{name: "ready, dry run", state: healthy, tracked: true, dryRun: true, status: finalize.StatusWould},
		{name: "never synced, --sync", state: neverSynced, sync: true, status: finalize.StatusFinalized, removed: true, syncs: 1},
		{name: "never synced, --sync, dry run", state: neverSynced, sync: true, dryRun: true, status: finalize.StatusSkipped, reason: "is not ready after", appSays: "dry run: would start the first sync", notReady: true},
		{name: "never synced, no --sync", state: neverSynced, status: finalize.StatusSkipped, reason: "is not ready after", appSays: "no sync yet", notReady: true},
		{name: "a sync running, --sync", state: running, sync: true, status: finalize.StatusSkipped, reason: "is not ready after", appSays: "a sync operation is running", notReady: true},
		{name: "sync failed at the annotation cap", state: failed, status: finalize.StatusSkipped, reason: "its last sync Failed", appSays: "the first sync failed at the 262144-byte annotation cap", notReady: true},
		{name: "sync failed, re-run with --sync", state: failed, sync: true, status: finalize.StatusFinalized, removed: true, syncs: 1},
		{name: "synced before, the object untracked, --sync", state: healthy, sync: true, status: finalize.StatusFinalized, removed: true, syncs: 1},
		{name: "synced before, all tracked, --sync", state: healthy, tracked: true, sync: true, status: finalize.StatusFinalized, removed: true},
		{name: "renamed in review", state: healthy, tracked: true, renamed: true, status: finalize.StatusFinalized, removed: true, appSays: "was renamed"},
		{name: "a Secret left out", state: healthy, tracked: true, leftOut: true, status: finalize.StatusFinalized, removed: true},
	}
	seen := map[finalize.Status]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := cp.Namespace(t)
			kubectl(t, cmManifest(ns, map[string]string{"k": "v"}, nil), "-n", ns, "apply", "-f", "-")
			appName := app(ns)
			argoName := appName
			if tc.renamed {
				argoName = "renamed-" + ns[len(ns)-6:]
			}
			if tc.tracked {
				argoApplyAs(t, ns, argoName)
			}
			fake := &argo{states: map[string]argoapp.AppState{argoName: tc.state}, apply: func(a string) { argoApplyAs(t, ns, a) }}
			sel := finalize.Selection{Apps: []plan.Application{{Name: appName, Namespace: ns, SourcePath: "adopted/" + ns}},
				Targets: map[string][]finalize.Target{appName: {target(ns)}}, LeftOut: map[string][]finalize.Target{}}
			secret := finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: appName}
			if tc.leftOut {
				sel.LeftOut[appName] = []finalize.Target{secret}
			}
			p := &plan.Plan{Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey}}
			r := &finalize.Runner{Plan: p, Selection: sel, Finalizer: finalizer(t), Reader: fake, Syncer: fake, Sync: tc.sync, DryRun: tc.dryRun,
				// Not ready is decided at the first read after the deadline:
				// a wait of a nanosecond, and no poll before it.
				Timeout: time.Nanosecond, PollInterval: time.Hour}
			r.Finalizer.DryRun = tc.dryRun
			if tc.renamed {
				r.Find = func(_ context.Context, a plan.Application) (string, error) {
					if a.SourcePath != "adopted/"+ns || a.Namespace != ns {
						t.Errorf("Find asked for %s at %s", a.Namespace, a.SourcePath)
					}
					return argoName, nil
				}
			}
			rep := &finalize.Report{}
			if err := r.Run(ctx, rep); err != nil {
				t.Fatal(err)
			}
			if tc.twice {
				r.Selection = sel
				rep = &finalize.Report{}
				if err := r.Run(ctx, rep); err != nil {
					t.Fatal(err)
				}
			}
			var res *finalize.Result
			for i := range rep.Objects {
				seen[rep.Objects[i].Status] = true
				if rep.Objects[i].Object == target(ns).Ref.String() {
					res = &rep.Objects[i]
				}
			}
			if res == nil || res.Status != tc.status || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("the ConfigMap's result %+v; want %s saying %q (all %+v)", res, tc.status, tc.reason, rep.Objects)
			}
			if tc.renamed && res.App != argoName {
				t.Errorf("finalized under %q, want the name found, %s", res.App, argoName)
			}
			_, kept := get(t, ns).GetAnnotations()[budget.LastAppliedKey]
			if kept == tc.removed {
				t.Errorf("the annotation is there: %v; want removed %v", kept, tc.removed)
			}
			if len(fake.syncs) != tc.syncs {
				t.Errorf("%d syncs started (%v), want %d", len(fake.syncs), fake.syncs, tc.syncs)
			}
			if len(rep.Apps) != 1 {
				t.Fatalf("Application reports %+v, want one", rep.Apps)
			}
			ar := rep.Apps[0]
			says := ar.Waiting + " | " + strings.Join(ar.Problems, " | ") + " | " + strings.Join(ar.Notes, " | ")
			if ar.Ready == tc.notReady || !strings.Contains(says, tc.appSays) || ar.SyncStarted != (tc.syncs > 0) {
				t.Errorf("Application report %+v; want ready %v, sync started %v, saying %q", ar, !tc.notReady, tc.syncs > 0, tc.appSays)
			}
			if tc.leftOut {
				var left *finalize.Result
				for i := range rep.Objects {
					if rep.Objects[i].Object == secret.Ref.String() {
						left = &rep.Objects[i]
					}
				}
				if left == nil || left.Status != finalize.StatusLeftOut || !strings.Contains(left.Reason, "left it out of Git") {
					t.Errorf("the Secret left out: %+v", left)
				}
			}
		})
	}
	for _, s := range []finalize.Status{finalize.StatusFinalized, finalize.StatusAlready, finalize.StatusWould, finalize.StatusSkipped, finalize.StatusLeftOut} {
		if !seen[s] {
			t.Errorf("no case ends with status %s", s)
		}
	}
}
