package status

import (
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestFleetInputs: each cluster is followed under the generated name, in
// the set's file, on the fleet's branch, with its own journal; an
// Application no set covers keeps its name and file. Assemble counts each
// cluster apart.
func TestFleetInputs(t *testing.T) {
	ref := objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "hook"}
	mk := func(dest string) *plan.Plan {
		return &plan.Plan{ID: "plan-" + dest, Settings: plan.Settings{AppsDir: "apps"},
			ArgoCD: plan.ArgoCD{Management: &plan.Management{Cluster: dest}},
			Applications: []plan.Application{
				{Name: "adopt-shop", Namespace: "shop", Objects: []string{ref.String()}},
				{Name: "solo-" + dest, Namespace: "shop"},
			},
			Objects: []plan.Object{{Ref: ref, App: "adopt-shop"}}}
	}
	ix := &fleet.Index{APIVersion: fleet.APIVersion, Kind: fleet.Kind,
		Clusters:        []fleet.ClusterEntry{{Context: "a", Destination: "eu-1", PlanID: "plan-eu-1"}, {Context: "b", Destination: "eu-2", PlanID: "plan-eu-2"}},
		ApplicationSets: []fleet.ApplicationSet{{Name: "adopt-shop", Namespace: "shop", Clusters: []string{"eu-1", "eu-2"}, Objects: []string{ref.String()}}}}
	f := &fleet.Fleet{Dir: "plans", Path: "plans/fleet.yaml", Index: ix,
		Plans: map[string]*plan.Plan{"a": mk("eu-1"), "b": mk("eu-2")}, Files: map[string]string{"a": "plans/a.yaml", "b": "plans/b.yaml"}}
	in := FleetInputs(f)
	if len(in) != 2 {
		t.Fatalf("%d inputs", len(in))
	}
	var facts []Facts
	for n, i := range in {
		dest := []string{"eu-1", "eu-2"}[n]
		gen := fleet.GeneratedName(dest, "adopt-shop")
		if i.Cluster != []string{"a", "b"}[n] || i.Branch != "adopt/"+ix.ID() || i.File != "plans" || i.Journal != "plans/"+i.Cluster+".yaml.journal" {
			t.Errorf("input %d: %+v", n, i)
		}
		if i.Plan.Applications[0].Name != gen || i.Plan.Objects[0].App != gen || i.AppFiles[gen] != "apps/adopt-shop.applicationset.yaml" {
			t.Errorf("input %d: Applications %+v, files %v, want %s in the set's file", n, i.Plan.Applications, i.AppFiles, gen)
		}
		if _, ok := i.AppFiles["solo-"+dest]; ok || i.Plan.Applications[1].Name != "solo-"+dest {
			t.Errorf("input %d: an Application no set covers was renamed or moved: %+v %v", n, i.Plan.Applications[1], i.AppFiles)
		}
		facts = append(facts, Facts{PlanID: i.Plan.ID, PlanFile: i.File, Cluster: i.Cluster, App: i.Plan.Applications[0], Object: i.Plan.Objects[0], Found: true, GitRead: true, Pushed: n == 0})
	}
	refs := []PlanRef{{ID: "plan-eu-1", Context: "a"}, {ID: "plan-eu-2", Context: "b"}}
	r := Assemble(time.Now(), refs, facts, nil, nil)
	if len(r.Clusters) != 2 || r.Clusters[0].Cluster != "a" || r.Clusters[0].Counts.InReview != 1 || r.Clusters[1].Counts.Planned != 1 || r.Counts.Total() != 2 {
		t.Errorf("per-cluster counts %+v, total %+v", r.Clusters, r.Counts)
	}
	if o := r.Objects[1]; o.Cluster != "b" || o.Next != "adopt apply --plan plans --repo <gitops repo> --open-pr" {
		t.Errorf("object %+v", o)
	}
	if s := r.Snapshot(); s.Clusters["a"].InReview != 1 || s.Clusters["b"].Planned != 1 {
		t.Errorf("snapshot clusters %+v", s.Clusters)
	}
}
