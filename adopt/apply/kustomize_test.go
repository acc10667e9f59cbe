package apply

import (
	"context"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// TestKustomizeApplicationHasNoDirectoryFilter: an Application whose
// source is a kustomize overlay points at the overlay with no directory
// include or exclude, even though the overlay holds other manifests (a
// patch). With a filter, Argo CD reads the source as a plain directory and
// applies kustomization.yaml itself as an object.
func TestKustomizeApplicationHasNoDirectoryFilter(t *testing.T) {
	overlay := "apps/web/overlays/prod"
	p := kustomizePlan("adopt-web-prod", "web-prod", overlay, "", "prod-web-cfg", "prod-web-env-ktf22628f7")
	tree := mapTree{
		overlay + "/kustomization.yaml":    "resources: [../../base]\npatches: [{path: mode.yaml}]\n",
		overlay + "/mode.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\n",
		"apps/web/base/kustomization.yaml": "resources: [configmap.yaml]\n",
		"apps/web/base/configmap.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\n",
	}
	c, as, written := buildOne(t, p, tree, fetchAny)
	src := written.Spec.Source
	if src == nil || src.Path != overlay {
		t.Fatalf("source %+v, want path %s", src, overlay)
	}
	if d := src.Directory; d != nil {
		t.Errorf("source.directory %+v: Argo CD would read the overlay as plain files\n%s", *d, c.Files[as.File])
	}
	if as.Application.Include != "" || as.Application.Exclude != "" {
		t.Errorf("summary: include %q exclude %q, want none", as.Application.Include, as.Application.Exclude)
	}
}

// TestBaseKustomizationApplication: a kustomization that overlays build on
// is an app of its own (applied with kubectl apply -k). Its Application
// points at it with a kustomize source, and its objects, in Git as its
// render, are not exported.
func TestBaseKustomizationApplication(t *testing.T) {
	base := "apps/web/base"
	p := kustomizePlan("adopt-web-dev-base", "web-dev", base, "equals live; apps/web/overlays/prod differs (data.mode)", "web-cfg", "web-env")
	// An object the plan left ambiguous has no Application: it is never
	// read for an export.
	p.Objects = append(p.Objects, plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "web-dev", Name: "twin"},
		Ambiguous: []plan.GitMatch{{Path: "a/kustomization.yaml", Kustomization: "a"}, {Path: "b/kustomization.yaml", Kustomization: "b"}}})
	fetch := func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		if name == "twin" {
			t.Errorf("apply read %s/%s, which no Application adopts", ns, name)
		}
		return fetchAny(ctx, gvr, ns, name)
	}
	tree := mapTree{
		"apps/web/overlays/prod/kustomization.yaml": "resources: [../../base]\npatches: [{path: mode.yaml}]\n",
		"apps/web/overlays/prod/mode.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\ndata: {mode: prod}\n",
		base + "/kustomization.yaml":                "resources: [configmap.yaml]\n",
		base + "/configmap.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\ndata: {mode: base}\n",
	}
	c, as, written := buildOne(t, p, tree, fetch)
	if src := written.Spec.Source; src == nil || src.Path != base || src.Directory != nil {
		t.Fatalf("source %+v, want a kustomize source at %s\n%s", src, base, c.Files[as.File])
	}
	for f := range c.Files {
		if f != as.File {
			t.Errorf("apply wrote %s: an object in Git was exported", f)
		}
	}
	for _, o := range as.Objects {
		if o.Where != "in Git at "+base+"/kustomization.yaml" {
			t.Errorf("%s: %q", o.Ref, o.Where)
		}
	}
}

// kustomizePlan is a plan of one Application at the kustomization dir,
// adopting ConfigMaps in ns that its render holds.
func kustomizePlan(app, ns, dir, reason string, names ...string) *plan.Plan {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-" + app,
		Cluster:  plan.Cluster{Server: "https://127.0.0.1:6443"},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, Namespace: "argocd"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, RepoURL: "https://git.example.invalid/gitops.git", AppsDir: "argocd/apps", ExportDir: "adopted",
			Project: "default", Destination: "https://kubernetes.default.svc"}}
	a := plan.Application{Name: app, Namespace: ns, Source: "git", SourcePath: dir, Kustomize: true}
	for _, name := range names {
		o := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: a.Name,
			Git: &plan.GitMatch{Path: dir + "/kustomization.yaml", Kustomization: dir, Reason: reason}}
		p.Objects = append(p.Objects, o)
		a.Objects = append(a.Objects, o.Ref.String())
	}
	p.Applications = []plan.Application{a}
	return p
}

// buildOne builds p, which has one Application, on tree, reading live
// objects with fetch: the change, the
// Application's summary and the Application written.
func buildOne(t *testing.T, p *plan.Plan, tree mapTree, fetch Fetcher) (gitops.Content, AppSummary, *v1alpha1.Application) {
	t.Helper()
	a := newApplier(t, p, func(o *Options) { o.Fetch = fetch })
	c, err := a.Build(tree)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	if len(s.Applications) != 1 {
		t.Fatalf("%d Applications, want 1", len(s.Applications))
	}
	as := s.Applications[0]
	written, err := argoapp.DecodeApplication(c.Files[as.File])
	if err != nil {
		t.Fatal(err)
	}
	return c, as, written
}
