package apply

// Apply's export of live objects on a real kube-apiserver, moved down from
// cmd/adopt (TestExportListEqualsGet, TestExportSpread), where they ran
// in the command's test package with client-go's default rate.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
	"github.com/adopt-dev/adopt/templates"
)

// TestExportListEqualsGet checks that apply's exports are the same bytes
// whether a namespace's objects are read with one paginated list (enough
// of them to list; as protobuf, as apply lists ConfigMaps) or one GET
// each, on a real API server; that a listed namespace's object the list
// did not return still fails by name; and that, with no count of the
// cluster, a namespace with few objects is read object by object.
func TestExportListEqualsGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	many, few := cp.Namespace(t), cp.Namespace(t)
	c, err := kubeconn.New(cp.RESTConfig(), "", "") // the command's clients and rate
	if err != nil {
		t.Fatal(err)
	}
	cs, dyn := c.Kube, c.Clients.Dynamic
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-export",
		Cluster:  plan.Cluster{Server: cp.Server},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey, Namespace: "argocd"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, AppsDir: "apps", ExportDir: "adopted", Project: "default", Destination: "https://kubernetes.default.svc"}}
	add := func(ns string, n int) {
		app := plan.Application{Name: "adopt-" + ns, Namespace: ns, Project: "default", Source: "export", SourcePath: "adopted/" + ns,
			RepoURL: "https://git.example.invalid/gitops.git", DestinationServer: "https://kubernetes.default.svc"}
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("cm-%03d", i)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels:      map[string]string{"app.kubernetes.io/part-of": "shop", "i": fmt.Sprint(i)},
				Annotations: map[string]string{"team": "platform", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
				Data: map[string]string{"k": strings.Repeat("v", i), "empty": ""}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			o := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: app.Name}
			p.Objects = append(p.Objects, o)
			app.Objects = append(app.Objects, o.Ref.String())
		}
		p.Applications = append(p.Applications, app)
	}
	add(many, 40)
	add(few, 3)
	_, lister, _ := Live(dyn, c.Clients.Core) // ConfigMaps as protobuf
	gets, lists := 0, 0
	run := func(list bool, p *plan.Plan) (map[string][]byte, error) {
		set, err := templates.New("")
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Plan: p, Secrets: export.SecretsSkip, Templates: set,
			Fetch: func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
				gets++
				return export.Fetch(ctx, dyn, gvr, ns, name)
			}, Readers: 1}
		if list {
			o.List = func(ctx context.Context, gvr schema.GroupVersionResource, ns string, fn func(*unstructured.Unstructured) error) error {
				lists++
				return lister(ctx, gvr, ns, fn)
			}
		}
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Export(ctx); err != nil {
			return nil, err
		}
		c, err := a.Build(mapTree{})
		if err != nil {
			t.Fatal(err)
		}
		return c.Files, nil
	}
	byGet, err := run(false, p)
	if err != nil {
		t.Fatal(err)
	}
	if gets != 43 {
		t.Fatalf("%d GETs without a lister, want 43", gets)
	}
	gets = 0
	byList, err := run(true, p)
	if err != nil {
		t.Fatal(err)
	}
	if lists != 1 || gets != 3 {
		t.Fatalf("%d lists and %d GETs, want 1 list (namespace %s) and 3 GETs (namespace %s)", lists, gets, many, few)
	}
	if len(byList) != len(byGet) || len(byGet) < 43 {
		t.Fatalf("%d files by list, %d by get", len(byList), len(byGet))
	}
	for f, b := range byGet {
		if string(byList[f]) != string(b) {
			t.Fatalf("%s differs:\nget:\n%s\nlist:\n%s", f, b, byList[f])
		}
	}

	// An object the list does not return is read alone, and its error
	// names it.
	gone := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: many, Name: "gone"}, App: "adopt-" + many}
	p.Objects = append(p.Objects, gone)
	p.Applications[0].Objects = append(p.Applications[0].Objects, gone.Ref.String())
	_, err = run(true, p)
	if err == nil || !strings.Contains(err.Error(), gone.Ref.String()) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing object: %v", err)
	}
}

// TestExportSpread exports 800 ConfigMaps spread over 200 namespaces, 4
// each, as a real estate spreads them, through a request-counting proxy
// in front of the real API server with the command's clients (50
// requests a second): the export counts the cluster's ConfigMaps and
// lists them all in a few pages (one GET each took 800 requests), waits
// out a 429 on the first page and lists again rather than falling back
// to GETs, writes the same bytes as one GET each, and an object the list
// did not return still fails by name. When the list of the whole cluster
// fails, the objects are read one by one and the export still succeeds.
func TestExportSpread(t *testing.T) {
	ctx := context.Background()
	base := cp.Namespace(t)
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000 // seeding is not what this test measures
	cs := kubernetes.NewForConfigOrDie(cfg)
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-spread",
		Cluster:  plan.Cluster{Server: cp.Server},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey, Namespace: "argocd"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, AppsDir: "apps", ExportDir: "adopted", Project: "default", Destination: "https://kubernetes.default.svc"}}
	const namespaces, each = 200, 4
	p.Applications = make([]plan.Application, namespaces)
	var g errgroup.Group
	g.SetLimit(16)
	for n := 0; n < namespaces; n++ {
		ns := fmt.Sprintf("%s-%03d", base, n)
		app := plan.Application{Name: "adopt-" + ns, Namespace: ns, Project: "default", Source: "export", SourcePath: "adopted/" + ns,
			RepoURL: "https://git.example.invalid/gitops.git", DestinationServer: "https://kubernetes.default.svc"}
		for i := 0; i < each; i++ {
			o := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}, App: app.Name}
			p.Objects = append(p.Objects, o)
			app.Objects = append(app.Objects, o.Ref.String())
		}
		p.Applications[n] = app
		g.Go(func() error {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			for i := 0; i < each; i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns,
					Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
					Data: map[string]string{"k": strings.Repeat("v", n+i)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	fp, err := testenv.StartFaultProxy(cp, t.TempDir(),
		testenv.Fault{Kind: testenv.TooManyRequests, Path: "/api/v1/configmaps", Query: "limit=50", Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fp.Close()
	exportVia := func(p *plan.Plan, kubeconfig string, list bool) (map[string][]byte, error) {
		pcfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		c, err := kubeconn.New(pcfg, "", "") // the command's clients and rate
		if err != nil {
			t.Fatal(err)
		}
		fetch, lister, count := Live(c.Clients.Dynamic, c.Clients.Core)
		set, err := templates.New("")
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Plan: p, Secrets: export.SecretsSkip, Templates: set, Fetch: fetch}
		if list {
			o.List, o.Count = lister, count
		}
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Export(ctx); err != nil {
			return nil, err
		}
		b, err := a.Build(mapTree{})
		if err != nil {
			t.Fatal(err)
		}
		return b.Files, nil
	}
	byList, err := exportVia(p, fp.Kubeconfig, true)
	if err != nil {
		t.Fatal(err)
	}
	reqs := fp.Requests()
	objectGets := 0
	for _, r := range reqs {
		if r.Method == "GET" && strings.Contains(r.Path, "/namespaces/") {
			objectGets++
		}
	}
	if fp.Injected(testenv.TooManyRequests) != 1 {
		t.Fatalf("the 429 was not injected: %v", reqs)
	}
	// The bound fails with one GET an object (800), or one list a
	// namespace (200).
	if len(reqs) > 40 || objectGets > 0 {
		t.Fatalf("exporting %d objects in %d namespaces took %d requests, %d of them per namespace or object, want at most 40 and none:\n%v", namespaces*each, namespaces, len(reqs), objectGets, reqs)
	}
	t.Logf("%d objects in %d namespaces: %d requests: %v", namespaces*each, namespaces, len(reqs), reqs)
	// The first three namespaces, one GET each, give the same bytes.
	few := *p
	few.Objects = p.Objects[:3*each]
	few.Applications = p.Applications[:3]
	byGet, err := exportVia(&few, cp.Kubeconfig, false)
	if err != nil {
		t.Fatal(err)
	}
	same := func(got map[string][]byte, how string) {
		t.Helper()
		n := 0
		for f, b := range byGet {
			if !strings.HasPrefix(f, "adopted/") {
				continue // the Applications name another plan
			}
			n++
			if string(got[f]) != string(b) {
				t.Fatalf("%s differs %s:\n%s\nwant, by GET:\n%s", f, how, got[f], b)
			}
		}
		if n != 3*each {
			t.Fatalf("%d exports by GET, want %d", n, 3*each)
		}
	}
	same(byList, "by a list of the cluster")

	// An object the list does not return is read alone, and its error
	// names it.
	gone := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: p.Objects[0].Namespace, Name: "gone"}, App: p.Applications[0].Name}
	missing := *p
	missing.Objects = append(append([]plan.Object(nil), p.Objects...), gone)
	missing.Applications = append([]plan.Application(nil), p.Applications...)
	missing.Applications[0].Objects = append(append([]string(nil), p.Applications[0].Objects...), gone.Ref.String())
	if _, err := exportVia(&missing, fp.Kubeconfig, true); err == nil || !strings.Contains(err.Error(), gone.Ref.String()) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing object: %v", err)
	}

	// A list of the whole cluster that fails leaves the objects to single
	// reads.
	failing, err := testenv.StartFaultProxy(cp, t.TempDir(), testenv.Fault{Kind: testenv.InternalError, Path: "/api/v1/configmaps", Query: "limit=50"})
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	byGets, err := exportVia(&few, failing.Kubeconfig, true)
	if err != nil {
		t.Fatal(err)
	}
	reqs = failing.Requests()
	if failing.Injected(testenv.InternalError) == 0 || len(reqs) != 2+3*each {
		t.Fatalf("after a failed list, %d requests (%d failed), want a count, the failed list and %d GETs: %v", len(reqs), failing.Injected(testenv.InternalError), 3*each, reqs)
	}
	same(byGets, "after a failed list")
}
