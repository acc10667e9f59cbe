package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/templates"
)

// includePlan has one Application per way a directory can hold other
// manifests: in the tree, written by an earlier Application of the same
// build (an export, or an Application manifest when the source path is the
// apps directory), or none that count (not a manifest, in a subdirectory,
// the Application's own or excluded names).
func includePlan() *plan.Plan {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-include",
		Cluster:  plan.Cluster{Server: "https://127.0.0.1:6443"},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, Namespace: "argocd"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, RepoURL: "https://git.example.invalid/gitops.git", AppsDir: "apps", ExportDir: "adopted",
			Project: "default", Destination: "https://kubernetes.default.svc"}}
	add := func(name, dir string, include []string, objs ...string) {
		app := plan.Application{Name: name, Namespace: "ns", Source: "export", SourcePath: dir, Include: include}
		for _, o := range objs {
			kind, obj, _ := strings.Cut(o, "/")
			ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: kind, Resource: strings.ToLower(kind) + "s", Namespace: "ns", Name: obj}, App: name}
			p.Objects = append(p.Objects, ob)
			app.Objects = append(app.Objects, ob.Ref.String())
		}
		p.Applications = append(p.Applications, app)
	}
	add("only-readme", "adopted/ns/a", nil, "ConfigMap/a1")
	add("tree-yml", "adopted/ns/b", nil, "ConfigMap/b1", "ConfigMap/b2")
	add("tree-json", "adopted/ns/j", nil, "ConfigMap/j1")
	add("shared-first", "adopted/ns/cd", nil, "ConfigMap/c1")
	add("shared-second", "adopted/ns/cd/", nil, "ConfigMap/d1")
	add("own-names", "adopted/ns/f", nil, "ConfigMap/f1", "Secret/f2")
	add("in-apps-dir", "apps", nil, "ConfigMap/e1")
	add("planned-include", "adopted/ns/g", []string{"configmap-g1.yaml"}, "ConfigMap/g1")
	add("after-apps", "adopted/ns/h", nil, "ConfigMap/h1")
	return p
}

var includeTree = mapTree{
	"README.md":                          "gitops\n",
	"adopted/ns/a/README.md":             "notes\n",
	"adopted/ns/a/sub/deep.yaml":         "kind: ConfigMap\n",
	"adopted/ns/b/extra.YML":             "kind: ConfigMap\n",
	"adopted/ns/j/extra.json":            "{}\n",
	"adopted/ns/f/configmap-f1.yaml":     "kind: ConfigMap\n",
	"adopted/ns/f/secret-f2.yaml":        "kind: Secret\n",
	"adopted/ns/g/other.yaml":            "kind: ConfigMap\n",
	"adopted/ns/hx/configmap-other.yaml": "kind: ConfigMap\n",
}

// fetchAny returns a small live object of gvr's kind, as the API server
// would (server fields included).
func fetchAny(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	kind := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}[gvr.Resource]
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "7", "uid": "u-" + name},
		"data":     map[string]any{"config.yaml": strings.Repeat("key: value\n", 20)},
	}}, nil
}

// TestIncludeWhereOtherManifests: an Application lists its files in
// directory.include exactly where its directory holds other manifests
// (.yaml, .yml, .json, any case), in the tree or written earlier in the
// same build, and not for files of its own, excluded ones, files in
// subdirectories or non-manifests.
func TestIncludeWhereOtherManifests(t *testing.T) {
	a := newApplier(t, includePlan(), func(o *Options) { o.Fetch, o.Secrets = fetchAny, export.SecretsPlaceholder })
	c, err := a.Build(includeTree)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"only-readme":     "",
		"tree-yml":        "{configmap-b1.yaml,configmap-b2.yaml}",
		"tree-json":       "configmap-j1.yaml",
		"shared-first":    "",
		"shared-second":   "configmap-d1.yaml",
		"own-names":       "",
		"in-apps-dir":     "configmap-e1.yaml",
		"planned-include": "configmap-g1.yaml",
		"after-apps":      "",
	}
	s := a.Summary()
	if len(s.Applications) != len(want) {
		t.Fatalf("%d Applications, want %d", len(s.Applications), len(want))
	}
	for _, as := range s.Applications {
		if got := as.Application.Include; got != want[as.Name] {
			t.Errorf("%s: include %q, want %q", as.Name, got, want[as.Name])
		}
		app, err := argoapp.DecodeApplication(c.Files[as.File])
		if err != nil {
			t.Fatalf("%s: %v", as.Name, err)
		}
		written := ""
		if d := app.Spec.Source.Directory; d != nil {
			written = d.Include
		}
		if written != want[as.Name] {
			t.Errorf("%s: written include %q, want %q", as.Name, written, want[as.Name])
		}
	}
	if s.Applications[5].Application.Exclude != "secret-f2.yaml" {
		t.Errorf("own-names: exclude %q", s.Applications[5].Application.Exclude)
	}
}

// failingTemplates is the embedded Application template, failing to
// execute for the Applications named.
func failingTemplates(t *testing.T, names ...string) *templates.Set {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "templates", templates.Application))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cond := fmt.Sprintf(`{{if eq .Name %q}}{{index .Objects 99}}{{end}}`, strings.Join(names, `" "`))
	cond = strings.ReplaceAll(cond, `\"`, `"`)
	if err := os.WriteFile(filepath.Join(dir, templates.Application), append(text, cond...), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := templates.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestBuildErrorsInPlanOrder: the build reports the error of the first
// Application in plan order that fails, whether it fails to render (the
// template) or to be placed (the plan).
func TestBuildErrorsInPlanOrder(t *testing.T) {
	for _, c := range []struct {
		name       string
		failRender []string
		badPath    int
		want       string
		contract   bool
	}{
		{"render before place", []string{"adopt-svc-012"}, 30, "render Application adopt-svc-012", false},
		{"place before render", []string{"adopt-svc-035"}, 30, "Application adopt-svc-030 has no source path", true},
		{"two renders", []string{"adopt-svc-035", "adopt-svc-012"}, -1, "render Application adopt-svc-012", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := benchPlan(40, 2)
			if c.badPath >= 0 {
				p.Applications[c.badPath].SourcePath = "."
			}
			set := failingTemplates(t, c.failRender...)
			a := newApplier(t, p, func(o *Options) { o.Fetch, o.Templates = fetchAny, set })
			_, err := a.Build(mapTree{})
			var ce *ContractError
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &ce) != c.contract {
				t.Fatalf("build: %v, want %q", err, c.want)
			}
		})
	}
}

// benchPlan is the apply bench's plan: apps Applications of perApp
// ConfigMaps each, all exported, in one namespace.
func benchPlan(apps, perApp int) *plan.Plan {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-bench",
		Cluster:  plan.Cluster{Server: "https://127.0.0.1:6443"},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, Namespace: "argocd", Version: "v2.14.21"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, RepoURL: "https://git.example.invalid/gitops.git", AppsDir: "apps", ExportDir: "adopted",
			Project: "default", Destination: "https://kubernetes.default.svc"}}
	for i := range apps {
		app := plan.Application{Name: fmt.Sprintf("adopt-svc-%03d", i), Namespace: "bench-apply", Source: "export",
			SourcePath: fmt.Sprintf("adopted/bench-apply/svc-%03d", i)}
		for j := range perApp {
			ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "bench-apply", Name: fmt.Sprintf("cfg-%04d", j*apps+i)}, App: app.Name}
			p.Objects = append(p.Objects, ob)
			app.Objects = append(app.Objects, ob.Ref.String())
		}
		p.Applications = append(p.Applications, app)
	}
	return p
}

// TestBuildIsStable: two builds of one plan write the same files.
func TestBuildIsStable(t *testing.T) {
	a := newApplier(t, benchPlan(50, 4), func(o *Options) { o.Fetch = fetchAny })
	one, err := a.Build(mapTree{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	two, err := a.Build(mapTree{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Files) != 250 || len(two.Files) != len(one.Files) || one.Message != two.Message {
		t.Fatalf("%d and %d files", len(one.Files), len(two.Files))
	}
	for f, b := range one.Files {
		if !bytes.Equal(two.Files[f], b) {
			t.Errorf("%s differs between builds", f)
		}
	}
}

// BenchmarkBuild builds the apply bench's commit (500 Applications, 2,000
// exported ConfigMaps) from exports already read.
func BenchmarkBuild(b *testing.B) {
	a := newApplier(b, benchPlan(500, 4), func(o *Options) { o.Fetch = fetchAny })
	tree := mapTree{"README.md": "gitops\n"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Build(tree); err != nil {
			b.Fatal(err)
		}
	}
}
