package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/templates"
)

// TestExportListEqualsGet checks that apply's exports are the same bytes
// whether a namespace's objects are read with one paginated list (enough
// of them to list; as protobuf, as apply lists ConfigMaps) or one GET each, on a real API server; that a listed
// namespace's object the list did not return still fails by name; and that
// a namespace with few objects is read object by object.
func TestExportListEqualsGet(t *testing.T) {
	ctx := context.Background()
	many, few := cp.Namespace(t), cp.Namespace(t)
	cs := cp.Clientset()
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
	dyn := dynClient(t)
	c, err := connectREST(cp.RESTConfig(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, lister := apply.Live(dyn, c.clients.Core) // ConfigMaps as protobuf
	gets, lists := 0, 0
	run := func(list bool, p *plan.Plan) (map[string][]byte, error) {
		set, err := templates.New("")
		if err != nil {
			t.Fatal(err)
		}
		o := apply.Options{Plan: p, Secrets: export.SecretsSkip, Templates: set,
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
		a, err := apply.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Export(ctx); err != nil {
			return nil, err
		}
		c, err := a.Build(mapTreeOf{})
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

// mapTreeOf is an empty checked-out tree.
type mapTreeOf map[string]string

func (m mapTreeOf) Files() ([]string, error)          { return nil, nil }
func (m mapTreeOf) ReadFile(p string) ([]byte, error) { return []byte(m[p]), nil }
