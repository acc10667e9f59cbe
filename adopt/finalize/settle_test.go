package finalize_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/argoapp"
)

// flipping stands in for Argo CD's view of one Application: Synced until
// flip is called, then OutOfSync with the given resource. It is a Watcher,
// so the settle window hears the flip at once (a barrier, not a sleep).
type flipping struct {
	mu      sync.Mutex
	out     *argoapp.ResourceState
	changed chan struct{}
	reads   int
}

func (f *flipping) Application(_ context.Context, name string) (argoapp.AppState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	s := argoapp.AppState{Name: name, Found: true, Phase: argoapp.PhaseSucceeded, Sync: argoapp.SyncSynced, Health: argoapp.HealthHealthy}
	if f.out != nil {
		s.Sync, s.Resources = "OutOfSync", []argoapp.ResourceState{*f.out}
	}
	return s, nil
}

func (f *flipping) Changes(ctx context.Context, _ string) <-chan struct{} { return f.changed }

func (f *flipping) flip(r argoapp.ResourceState) {
	f.mu.Lock()
	f.out = &r
	f.mu.Unlock()
	select { // heard at the window's next wait, or not at all when a read saw it first
	case f.changed <- struct{}{}:
	default:
	}
}

// TestSettleNamesTheFieldAndManager: an Application that stays Synced
// over the window is reported so; one that flips to OutOfSync after a
// second manager wrote an object's field (on the real API server) is
// reported at once, naming the object, the field and the manager.
func TestSettleNamesTheFieldAndManager(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	d := dynamic.NewForConfigOrDie(cp.RESTConfig())
	ref := objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: "settings"}
	cms := d.Resource(ref.GVR()).Namespace(ns)
	force := true
	apply := func(manager, body string) {
		t.Helper()
		if _, err := cms.Patch(ctx, "settings", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
			t.Fatal(err)
		}
	}
	apply(finalize.ArgoCDManager, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"`+ns+`"},"data":{"mode":"git"}}`)
	other := ref
	other.Name = "other" // a second target: one watch serves the namespace's ConfigMaps
	if _, err := cms.Patch(ctx, "other", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","namespace":"`+ns+`"},"data":{"a":"b"}}`),
		metav1.PatchOptions{FieldManager: finalize.ArgoCDManager, Force: &force}); err != nil {
		t.Fatal(err)
	}
	app := "adopt-" + ns
	newRunner := func(reader argoapp.StatusReader, window time.Duration) *finalize.Runner {
		return &finalize.Runner{
			Reader:    reader,
			Settle:    window,
			Selection: finalize.Selection{Targets: map[string][]finalize.Target{app: {{Ref: ref, App: app}, {Ref: other, App: app}}}},
			Finalizer: &finalize.Finalizer{Client: func(t finalize.Target) finalize.Client { return d.Resource(t.GVR()).Namespace(t.Namespace) }},
		}
	}

	calm := &flipping{changed: make(chan struct{}, 1)}
	rep := &finalize.Report{Apps: []finalize.AppReport{{Name: app, Ready: true}, {Name: "not-ready"}}}
	if err := newRunner(calm, 200*time.Millisecond).SettleAll(ctx, rep); err != nil {
		t.Fatal(err)
	}
	if s := rep.Apps[0].Settle; s == nil || !s.Synced || s.Window != "200ms" {
		t.Errorf("settle %+v; want Synced over 200ms", s)
	}
	if rep.Apps[1].Settle != nil {
		t.Errorf("an Application not ready was watched: %+v", rep.Apps[1].Settle)
	}

	// The window is long; the flip ends it.
	f := &flipping{changed: make(chan struct{}, 1)}
	rep = &finalize.Report{Apps: []finalize.AppReport{{Name: app, Ready: true}}}
	done, opened := make(chan error, 1), make(chan struct{}, 1)
	r := newRunner(f, 10*time.Minute)
	r.Progress = func(string, argoapp.AppState, string) { opened <- struct{}{} }
	go func() { done <- r.SettleAll(ctx, rep) }()
	<-opened // a barrier: the window's watches are open, so the write below is seen
	apply("replica-manager", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"`+ns+`"},"data":{"mode":"scaled"}}`)
	f.flip(argoapp.ResourceState{Ref: ref, Status: "OutOfSync"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := rep.Apps[0].Settle
	if s == nil || s.Synced || s.Sync != "OutOfSync" || len(s.Drift) != 1 {
		t.Fatalf("settle %+v; want OutOfSync with one drift", s)
	}
	if dr := s.Drift[0]; dr.Object != ref.String() || dr.Manager != "replica-manager (Apply)" || strings.Join(dr.Fields, ",") != "data.mode" {
		t.Errorf("drift %+v; want %s data.mode by replica-manager (Apply)", dr, ref.String())
	}
	if p := strings.Join(rep.Apps[0].Problems, "\n"); !strings.Contains(p, "went OutOfSync within the 10m0s settle window after cleanup: "+ref.String()+": data.mode changed by replica-manager (Apply)") {
		t.Errorf("problems %q; want the field and the manager named", p)
	}
}
