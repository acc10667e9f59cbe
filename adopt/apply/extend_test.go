package apply

import (
	"errors"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// secondPlan is benchPlan(1, 1) a week later: ConfigMap cfg-0001 in the
// same group as the first's cfg-0000.
func secondPlan() *plan.Plan {
	second := benchPlan(1, 1)
	second.ID = "plan-second"
	second.Objects[0].Name = "cfg-0001"
	second.Applications[0].Objects = []string{second.Objects[0].Ref.String()}
	return second
}

// TestSecondAdoptionExtendsTheFirst (issue 43): a group adopted before
// (its Application file and export merged) gets a new object. apply
// extends the Application: its objects and its directory include name
// both objects, so the first stays tracked (with prune, it would have
// been deleted). An Application file of that name that adopt did not
// write, or that syncs another path, is refused, never replaced.
func TestSecondAdoptionExtendsTheFirst(t *testing.T) {
	first := benchPlan(1, 1) // adopt-svc-000 adopts ConfigMap cfg-0000
	a := newApplier(t, first, func(o *Options) { o.Fetch = fetchAny })
	c, err := a.Build(mapTree{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	merged := mapTree{"README.md": "gitops\n"}
	for f, b := range c.Files {
		merged[f] = string(b)
	}
	// A week later: cfg-0001 in the same group.
	second := secondPlan()
	b := newApplier(t, second, func(o *Options) { o.Fetch = fetchAny })
	c2, err := b.Build(merged)
	if err != nil {
		t.Fatal(err)
	}
	app, err := argoapp.DecodeApplication(c2.Files["apps/adopt-svc-000.yaml"])
	if err != nil {
		t.Fatal(err)
	}
	objs := app.Annotations["adopt.dev/objects"]
	if !strings.Contains(objs, "/cfg-0000") || !strings.Contains(objs, "/cfg-0001") {
		t.Errorf("the extended Application adopts %q; want both objects", objs)
	}
	// Its plan ids grow: the annotation lists both adoptions', the label
	// (one value) names the newest.
	firstID, err := argoapp.DecodeApplication([]byte(merged["apps/adopt-svc-000.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	was, now := firstID.Labels[argoapp.PlanIDLabel], app.Labels[argoapp.PlanIDLabel]
	if was == now || app.Annotations[argoapp.PlanIDLabel] != was+", "+now {
		t.Errorf("plan ids: label %q (first %q), annotation %q; want the annotation to list both, oldest first", now, was, app.Annotations[argoapp.PlanIDLabel])
	}
	if d := app.Spec.Source.Directory; d != nil && d.Include != "" && (!strings.Contains(d.Include, "cfg-0000") || !strings.Contains(d.Include, "cfg-0001")) {
		t.Errorf("the extended Application's include %q leaves one out", d.Include)
	}
	if !strings.Contains(strings.Join(b.Summary().Applications[0].Notes, "\n"), "extends Application adopt-svc-000") {
		t.Errorf("the summary does not say the Application is extended: %v", b.Summary().Applications[0].Notes)
	}

	for name, file := range map[string]string{
		"a person's Application": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: adopt-svc-000, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: https://git.example.invalid/gitops.git, path: adopted/bench-apply/svc-000}\n  destination: {server: https://kubernetes.default.svc, namespace: bench-apply}\n",
		"another path":           strings.Replace(merged["apps/adopt-svc-000.yaml"], "path: \"adopted/bench-apply/svc-000\"", "path: \"elsewhere\"", 1),
	} {
		tree := mapTree{}
		for f, v := range merged {
			tree[f] = v
		}
		tree["apps/adopt-svc-000.yaml"] = file
		_, err := newApplier(t, second, func(o *Options) { o.Fetch = fetchAny }).Build(tree)
		var ce *ContractError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "apply never replaces an Application") {
			t.Errorf("%s: %v; want a refusal", name, err)
		}
	}
}

// TestSecondAdoptionExtendsARenamedApplication (issue 43): the first
// adoption's Application was renamed in review (its file and its name)
// before it merged. The second adoption of the same group finds it by what
// merged (an Application adopt wrote that syncs the same repository and
// path to the same namespace), extends that file under that name, and
// writes no second Application of the plan's name. One of another
// namespace is not it.
func TestSecondAdoptionExtendsARenamedApplication(t *testing.T) {
	first := benchPlan(1, 1)
	c, err := newApplier(t, first, func(o *Options) { o.Fetch = fetchAny }).Build(mapTree{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ns      string
		extends bool
	}{{"same destination", "bench-apply", true}, {"another namespace", "elsewhere", false}} {
		t.Run(tc.name, func(t *testing.T) {
			merged := mapTree{"README.md": "gitops\n"}
			for f, b := range c.Files {
				merged[f] = string(b)
			}
			renamed := strings.Replace(merged["apps/adopt-svc-000.yaml"], `name: "adopt-svc-000"`, `name: "search"`, 1)
			renamed = strings.Replace(renamed, `namespace: "bench-apply"`, `namespace: "`+tc.ns+`"`, 1)
			if renamed == merged["apps/adopt-svc-000.yaml"] {
				t.Fatalf("the rename changed nothing:\n%s", renamed)
			}
			delete(merged, "apps/adopt-svc-000.yaml")
			merged["apps/search.yaml"] = renamed
			second := secondPlan()
			b := newApplier(t, second, func(o *Options) { o.Fetch = fetchAny })
			c2, err := b.Build(merged)
			if err != nil {
				t.Fatal(err)
			}
			_, own := c2.Files["apps/adopt-svc-000.yaml"]
			if !tc.extends {
				if !own {
					t.Errorf("an Application of another namespace was taken for the group's")
				}
				return
			}
			if own {
				t.Errorf("a second Application of the plan's name was written beside the renamed one")
			}
			app, err := argoapp.DecodeApplication(c2.Files["apps/search.yaml"])
			if err != nil {
				t.Fatalf("the renamed Application was not extended: %v", err)
			}
			if objs := app.Annotations["adopt.dev/objects"]; app.Name != "search" || !strings.Contains(objs, "/cfg-0000") || !strings.Contains(objs, "/cfg-0001") {
				t.Errorf("extended Application %s adopts %q; want search adopting both", app.Name, objs)
			}
			if notes := strings.Join(b.Summary().Applications[0].Notes, "\n"); !strings.Contains(notes, "extends Application search (the plan's adopt-svc-000, renamed when it was merged)") {
				t.Errorf("the summary does not say the renamed Application is extended: %s", notes)
			}
		})
	}
}
