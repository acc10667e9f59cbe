package finalize_test

import (
	"context"
	"encoding/json"
	fmtpkg "fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// synced reads every Application as Synced, Healthy, its sync Succeeded.
type synced struct{}

func (synced) Application(_ context.Context, name string) (argoapp.AppState, error) {
	return argoapp.AppState{Name: name, Found: true, Phase: argoapp.PhaseSucceeded, Sync: argoapp.SyncSynced,
		Health: argoapp.HealthHealthy, Revision: "0123456789abcdef", History: []string{"0123456789abcdef"}}, nil
}

// countingClient counts patches per object and checks each is guarded; it
// counts GETs and lists too. Its patches pass through overlap, shared by
// every namespace's client.
type countingClient struct {
	finalize.Client
	overlap     *overlap
	mu          sync.Mutex
	patches     map[string]int
	unguarded   []string
	gets, lists int
}

// overlap counts the patches in flight across all clients, and holds each
// one until want of them are in flight at once; from then on it holds
// none. So the runner's patches overlap by construction, not by luck of
// scheduling: a runner that never has want patches in flight keeps its
// first patch held, and after a minute overlap notes that and lets every
// patch go (the test then fails saying so).
type overlap struct {
	want   int
	met    chan struct{} // closed once want patches were in flight at once
	once   sync.Once
	mu     sync.Mutex
	now    int
	max    int
	failed string
}

func newOverlap(want int) *overlap { return &overlap{want: want, met: make(chan struct{})} }

// enter counts a patch in flight and holds it until want are.
func (o *overlap) enter() {
	o.mu.Lock()
	o.now++
	o.max = max(o.max, o.now)
	if o.now >= o.want {
		o.once.Do(func() { close(o.met) })
	}
	o.mu.Unlock()
	select {
	case <-o.met:
	case <-time.After(time.Minute):
		o.mu.Lock()
		if o.failed == "" {
			o.failed = fmtpkg.Sprintf("a patch waited a minute for %d patches in flight at once (in flight then: %d, most ever: %d)", o.want, o.now, o.max)
		}
		o.mu.Unlock()
		o.once.Do(func() { close(o.met) })
	}
}

// leave counts a patch that came back.
func (o *overlap) leave() {
	o.mu.Lock()
	o.now--
	o.mu.Unlock()
}

func (c *countingClient) Get(ctx context.Context, n string, o metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Client.Get(ctx, n, o, sub...)
}

func (c *countingClient) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Client.(finalize.Lister).List(ctx, o)
}

func (c *countingClient) Patch(ctx context.Context, n string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	var ops []map[string]any
	_ = json.Unmarshal(data, &ops)
	guarded := map[string]bool{}
	for _, op := range ops {
		if op["op"] == "test" {
			guarded[fmtpkg.Sprint(op["path"])] = true
		}
	}
	c.mu.Lock()
	c.patches[n]++
	if pt != types.JSONPatchType || !guarded["/metadata/resourceVersion"] || !guarded["/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"] {
		c.unguarded = append(c.unguarded, n)
	}
	c.mu.Unlock()
	c.overlap.enter()
	defer c.overlap.leave()
	return c.Client.Patch(ctx, n, pt, data, o, sub...)
}

// TestRunnerParallel finalizes 3 Applications of 20 ConfigMaps each, 8 at
// a time, against a real API server: every object is patched exactly
// once, each patch tests the resourceVersion and the annotation's value,
// 8 patches are in flight at once (each is held until they are) and never
// more, over all namespaces, the tracking check read the three
// namespaces with one count and one list of the whole cluster (fewer
// requests than a list each) and no GET, the report lists the objects in the
// plan's order whatever order they finished in, and the journal (written
// concurrently) lets undo restore every annotation byte for byte.
func TestRunnerParallel(t *testing.T) {
	ctx := context.Background()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000 // the default 5 a second would be all this test measures
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &plan.Plan{Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey}}
	var sel finalize.Selection
	sel.Targets = map[string][]finalize.Target{}
	orig := map[string]string{}
	var order []string
	for a := 0; a < 3; a++ {
		ns := cp.Namespace(t)
		appName := app(ns)
		sel.Apps = append(sel.Apps, plan.Application{Name: appName, Namespace: ns})
		for i := 0; i < 20; i++ {
			n := fmtpkg.Sprintf("cm-%02d", 19-i) // plan order is not name order
			hand := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": n, "namespace": ns}, "data": map[string]any{"i": fmtpkg.Sprint(i)}}
			hb, _ := json.Marshal(hand)
			kubectl(t, hb, "-n", ns, "apply", "-f", "-")
			hand["metadata"].(map[string]any)["annotations"] = map[string]any{argoapp.AnnotationTrackingID: appName + ":/ConfigMap:" + ns + "/" + n}
			u := &unstructured.Unstructured{Object: hand}
			if _, err := d.Resource(cmGVR).Namespace(ns).Apply(ctx, n, u, metav1.ApplyOptions{FieldManager: finalize.ArgoCDManager, Force: true}); err != nil {
				t.Fatal(err)
			}
			live, err := d.Resource(cmGVR).Namespace(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tg := finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: n}, App: appName}
			orig[tg.Ref.String()] = live.GetAnnotations()[budget.LastAppliedKey]
			if orig[tg.Ref.String()] == "" {
				t.Fatalf("%s has no last-applied annotation", tg.Ref.String())
			}
			sel.Targets[appName] = append(sel.Targets[appName], tg)
			order = append(order, tg.Ref.String())
		}
	}
	clients := map[string]*countingClient{}
	var cmu sync.Mutex
	const parallel = 8
	inFlight := newOverlap(parallel)
	client := func(tg finalize.Target) finalize.Client {
		cmu.Lock()
		defer cmu.Unlock()
		if clients[tg.Namespace] == nil {
			clients[tg.Namespace] = &countingClient{Client: d.Resource(tg.GVR()).Namespace(tg.Namespace), overlap: inFlight, patches: map[string]int{}}
		}
		return clients[tg.Namespace]
	}
	jp := filepath.Join(t.TempDir(), "plan.yaml.journal")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	f := &finalize.Finalizer{Client: client, Tracking: &p.Tracking, Journal: j}
	r := &finalize.Runner{Plan: p, Selection: sel, Finalizer: f, Reader: synced{}, Timeout: time.Minute, PollInterval: 50 * time.Millisecond, Parallel: parallel}
	rep := &finalize.Report{}
	if err := r.Run(ctx, rep); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if inFlight.failed != "" {
		t.Fatalf("the patches did not overlap: %s", inFlight.failed)
	}
	var got []string
	for _, res := range rep.Objects {
		got = append(got, res.Object)
		if res.Status != finalize.StatusFinalized {
			t.Errorf("%s: %s (%s)", res.Object, res.Status, res.Reason)
		}
	}
	if !reflect.DeepEqual(got, order) {
		t.Fatalf("report order\n%v\nwant the plan's\n%v", got, order)
	}
	if c := clients[""]; c == nil || c.lists < 2 || c.gets != 0 || len(c.patches) != 0 {
		t.Errorf("the tracking check did not count and list the whole cluster once: %+v", c)
	}
	delete(clients, "")
	for ns, c := range clients {
		if len(c.unguarded) > 0 {
			t.Errorf("%s: unguarded patches of %v", ns, c.unguarded)
		}
		if len(c.patches) != 20 {
			t.Errorf("%s: %d objects patched, want 20", ns, len(c.patches))
		}
		if c.lists != 0 || c.gets != 0 {
			t.Errorf("%s: the tracking check listed %d times and sent %d GETs, want the cluster's list and no GET", ns, c.lists, c.gets)
		}
		for n, k := range c.patches {
			if k != 1 {
				t.Errorf("%s/%s patched %d times", ns, n, k)
			}
		}
	}
	if maxNow := inFlight.max; maxNow < 2 || maxNow > parallel {
		t.Fatalf("at most %d patches at once, want between 2 and %d", maxNow, parallel)
	}
	for _, tg := range sel.All() {
		u, err := d.Resource(cmGVR).Namespace(tg.Namespace).Get(ctx, tg.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := u.GetAnnotations()[budget.LastAppliedKey]; ok {
			t.Fatalf("%s still carries the annotation", tg.Ref.String())
		}
	}

	// Undo from the concurrently written journal restores every one.
	entries, err := finalize.ReadJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*len(order) {
		t.Fatalf("%d journal lines, want %d", len(entries), 2*len(order))
	}
	undo := &finalize.Report{Undo: true}
	r.Undo(ctx, entries, undo)
	if len(undo.Objects) != len(order) {
		t.Fatalf("undo covered %d objects, want %d", len(undo.Objects), len(order))
	}
	for _, tg := range sel.All() {
		u, err := d.Resource(cmGVR).Namespace(tg.Namespace).Get(ctx, tg.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := u.GetAnnotations()[budget.LastAppliedKey]; got != orig[tg.Ref.String()] {
			t.Fatalf("%s: undo restored %q, want %q", tg.Ref.String(), got, orig[tg.Ref.String()])
		}
	}
}
