package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// fleetPlans are contractPlan on two clusters, registered as eu and us,
// with only the exported Application adopt-shop; the index proposes it as
// one ApplicationSet.
func fleetPlans() (map[string]*plan.Plan, *fleet.Index) {
	plans := map[string]*plan.Plan{}
	ix := &fleet.Index{APIVersion: fleet.APIVersion, Kind: fleet.Kind}
	for i, dest := range []string{"eu", "us"} {
		p := contractPlan()
		p.Cluster.Server = []string{"https://10.0.1.1:6443", "https://10.0.2.1:6443"}[i]
		p.Settings.Destination = "name:" + dest
		p.Applications = p.Applications[:1]
		p.Applications[0].DestinationName = dest
		p.Objects = p.Objects[:1]
		plans["ctx-"+dest] = p
		ix.Clusters = append(ix.Clusters, fleet.ClusterEntry{Context: "ctx-" + dest, Server: p.Cluster.Server, Destination: dest, PlanID: p.ID})
	}
	ix.ApplicationSets = []fleet.ApplicationSet{{Name: "adopt-shop", Namespace: "shop", Clusters: []string{"eu", "us"},
		Objects: plans["ctx-eu"].Applications[0].Objects, SourcePath: "clusters/prod/adopted/shop"}}
	return plans, ix
}

// buildFleet exports each plan with data per cluster (nil: the same) and
// builds the fleet commit.
func buildFleet(t *testing.T, plans map[string]*plan.Plan, ix *fleet.Index, data map[string]string) (*Fleet, map[string][]byte, error) {
	t.Helper()
	return buildFleetWith(t, plans, ix, data, nil)
}

// buildFleetWith is buildFleet with each live ConfigMap's annotations.
func buildFleetWith(t *testing.T, plans map[string]*plan.Plan, ix *fleet.Index, data map[string]string, annotations map[string]any) (*Fleet, map[string][]byte, error) {
	t.Helper()
	f := &Fleet{Index: ix, Members: map[string]*Applier{}}
	for c, p := range plans {
		f.Members[c] = newApplier(t, p, func(o *Options) {
			if v, ok := data[c]; ok {
				o.Fetch = func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
					u, err := fetchConfigMap(ctx, gvr, ns, name)
					u.Object["data"] = map[string]any{"k": v}
					if annotations != nil {
						u.Object["metadata"].(map[string]any)["annotations"] = annotations
					}
					return u, err
				}
			}
		})
	}
	c, err := f.Build(mapTree{})
	return f, c.Files, err
}

func decodeSet(t *testing.T, b []byte) *v1alpha1.ApplicationSet {
	t.Helper()
	var as v1alpha1.ApplicationSet
	if err := yaml.UnmarshalStrict(b, &as); err != nil {
		t.Fatal(err)
	}
	return &as
}

// TestFleetApplicationSet: identical exports are written once and the
// template names their path; a label selecting exactly the clusters makes
// a clusters generator; exports that differ go to each cluster's own path
// through {{.path}}; a re-build gives the same bytes.
func TestFleetApplicationSet(t *testing.T) {
	plans, ix := fleetPlans()
	f, files, err := buildFleet(t, plans, ix, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := "clusters/prod/apps/adopt-shop.applicationset.yaml"
	as := decodeSet(t, files[file])
	tmpl := as.Spec.Template
	g := as.Spec.Generators[0]
	if !as.Spec.GoTemplate || strings.Join(as.Spec.GoTemplateOptions, ",") != "missingkey=error" || as.Spec.SyncPolicy == nil || !as.Spec.SyncPolicy.PreserveResourcesOnDeletion ||
		tmpl.Name != "{{.name}}-adopt-shop" || tmpl.Spec.Destination.Name != "{{.name}}" || tmpl.Spec.Destination.Server != "" ||
		tmpl.Spec.Source.Path != "clusters/prod/adopted/shop" || tmpl.Spec.Project != "platform" || as.Namespace != "argocd-mgmt" ||
		tmpl.Spec.SyncPolicy.Automated != nil || !tmpl.Spec.SyncPolicy.SyncOptions.HasOption("ServerSideApply=true") ||
		g.List == nil || len(g.List.Elements) != 2 || string(g.List.Elements[0].Raw) != `{"name":"eu"}` {
		t.Fatalf("ApplicationSet:\n%s", files[file])
	}
	if _, ok := files["clusters/prod/adopted/shop/configmap-hook.yaml"]; !ok || len(files) != 2 {
		t.Errorf("files %v, want the set and one common export", keys(files))
	}
	if s := f.Summary().Sets[0]; strings.Join(s.Generated, ",") != "eu-adopt-shop,us-adopt-shop" {
		t.Errorf("generated %v", s.Generated)
	}
	_, again, _ := buildFleet(t, plans, ix, nil)
	if string(again[file]) != string(files[file]) {
		t.Errorf("a re-build differs")
	}

	ix.ApplicationSets[0].Selector = map[string]string{"fleet": "sprint"}
	_, files, err = buildFleet(t, plans, ix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := decodeSet(t, files[file]).Spec.Generators[0]; g.Clusters == nil || g.List != nil || g.Clusters.Selector.MatchLabels["fleet"] != "sprint" {
		t.Errorf("with a selector:\n%s", files[file])
	}

	// Different clean manifests: a kustomize base of what the clusters
	// share and one overlay each, each cluster's path its overlay, and
	// the list generator even with a selector (a cluster labelled later
	// would have no overlay).
	f, files, err = buildFleet(t, plans, ix, map[string]string{"ctx-eu": "eu", "ctx-us": "us"})
	if err != nil {
		t.Fatal(err)
	}
	as = decodeSet(t, files[file])
	root := "clusters/prod/adopted/shop"
	if src := as.Spec.Template.Spec.Source; src.Path != "{{.path}}" || src.Directory != nil || as.Spec.Generators[0].List == nil ||
		string(as.Spec.Generators[0].List.Elements[1].Raw) != `{"name":"us","path":"`+root+`/overlays/us"}` {
		t.Errorf("per-cluster overlays:\n%s", files[file])
	}
	if b := string(files[root+"/base/configmap-hook.yaml"]); b == "" || strings.Contains(b, "k: ") {
		t.Errorf("the base holds a cluster's value, or is missing: %q (files %v)", b, keys(files))
	}
	for _, c := range []string{"eu", "us"} {
		if b := files[root+"/overlays/"+c+"/patches/configmap-hook.yaml"]; !strings.Contains(string(b), "k: "+c) {
			t.Errorf("cluster %s's patch: %q (files %v)", c, b, keys(files))
		}
		if k := string(files[root+"/overlays/"+c+"/kustomization.yaml"]); !strings.Contains(k, "- ../../base") || !strings.Contains(k, "path: patches/configmap-hook.yaml") {
			t.Errorf("cluster %s's kustomization:\n%s", c, k)
		}
	}
	if len(files) != 7 {
		t.Errorf("files %v, want the set, the base (object, kustomization) and per cluster a kustomization and a patch", keys(files))
	}
	s := f.Summary().Sets[0]
	if s.Base != root+"/base" || len(s.Patches) != 2 || s.Patches[0].Form != "strategic-merge" || s.Paths["eu"] != root+"/overlays/eu" {
		t.Errorf("summary %+v", s)
	}
	if msg := fleetMessage(f.Summary()); !strings.Contains(msg, "overlay us: ConfigMap shop/hook, strategic-merge patch "+root+"/overlays/us/patches/configmap-hook.yaml") {
		t.Errorf("the commit message does not list the overlays' patches:\n%s", msg)
	}
}

// TestFleetRefuses: Applications that differ in more than destination and
// path are not one set, and two clusters writing one file differently are
// not one commit.
func TestFleetRefuses(t *testing.T) {
	plans, ix := fleetPlans()
	plans["ctx-us"].Applications[0].Project = "other"
	var ce *ContractError
	if _, _, err := buildFleet(t, plans, ix, nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), "differ in more than destination and path") {
		t.Errorf("a differing project: %v", err)
	}
	plans, ix = fleetPlans()
	ix.ApplicationSets = nil // each cluster writes adopt-shop itself
	if _, _, err := buildFleet(t, plans, ix, map[string]string{"ctx-eu": "eu", "ctx-us": "us"}); !errors.As(err, &ce) ||
		!strings.Contains(err.Error(), "cluster ctx-eu and cluster ctx-us both write clusters/prod/") {
		t.Errorf("two clusters writing one file: %v", err)
	}
}

// TestFleetOverlayNotExact: an overlay that kustomize would not render to
// its cluster's object (here a live annotation kustomize keeps for itself
// and strips from what it builds) refuses the fleet commit, naming the
// ApplicationSet, the cluster, the object and the field, and writes
// nothing.
func TestFleetOverlayNotExact(t *testing.T) {
	plans, ix := fleetPlans()
	_, files, err := buildFleetWith(t, plans, ix, map[string]string{"ctx-eu": "eu", "ctx-us": "us"}, map[string]any{"config.kubernetes.io/index": "0"})
	want := "ApplicationSet adopt-shop: the kustomize overlay of cluster eu is not exact, and nothing was written: cluster eu: ConfigMap shop/hook: neither a strategic-merge nor a JSON 6902 patch renders to it (first difference at .metadata.annotations)."
	if err == nil || !strings.HasPrefix(err.Error(), want) || files != nil {
		t.Errorf("got %v (files %v), want %q", err, keys(files), want)
	}
}
