package planner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestKustomizeBasesAndInputs (issue 34; the planning of cmd/adopt's
// TestPlanKustomizeBasesAndInputs, moved down): adopt/gitindex/testdata/inputs
// in a Git checkout, applied by hand as its README says, with kubectl's
// own kustomize:
//
//   - kubectl apply -k shop/base -n <dev>: the base is an app of its own as
//     well as the base of prod and staging;
//   - kubectl apply -k shop/overlays/prod (a Component, a patch) and
//     shop/overlays/staging (no name prefix: the issue 28 case);
//   - kubectl apply -k guestbook -n <gb>: a kustomization reading plain
//     files in base/, patches/ and config/, which hold no kustomization.
//
// Every object is matched to the kustomization it was applied from, with
// no drift; each gets one Application at that kustomization; nothing the
// repo holds is exported, no file is "defined twice", no Application
// points at a directory of inputs, and the preview finds each render, the
// base's too.
func TestKustomizeBasesAndInputs(t *testing.T) {
	ctx := context.Background()
	dev, prod, staging, gb := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	files, err := testenv.ReadFiles("../gitindex/testdata/inputs")
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		files[p] = strings.NewReplacer("namespace: shop-prod", "namespace: "+prod, "namespace: shop-staging", "namespace: "+staging).Replace(c)
	}
	repo := filepath.Join(t.TempDir(), "gitops")
	if err := testenv.InitRepo(repo, files); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"shop/base", "-n", dev}, {"shop/overlays/prod"}, {"shop/overlays/staging"}, {"guestbook", "-n", gb}} {
		if out, err := cp.Kubectl(ctx, nil, append([]string{"apply", "-k", filepath.Join(repo, a[0])}, a[1:]...)...); err != nil {
			t.Fatalf("kubectl apply -k %s: %v\n%s", a[0], err, out)
		}
	}
	type want struct{ kind, name, reason string }
	for _, c := range []struct {
		ns, kust string
		objects  []want
	}{
		{dev, "shop/base", []want{{"ConfigMap", "shop-cfg", ""}, {"Deployment", "shop", ""}, {"Service", "shop", ""}}},
		{prod, "shop/overlays/prod", []want{
			{"ConfigMap", "shop-cfg", "shop/base equals live, built on by shop/overlays/prod, shop/overlays/staging; chosen because other objects in " + prod + " match it alone"},
			{"Deployment", "shop", "equals live; shop/base differs (spec.replicas)"},
			{"Service", "shop", "match it alone"},
			{"ConfigMap", "shop-metrics", ""}}},
		{staging, "shop/overlays/staging", []want{
			{"ConfigMap", "shop-cfg", "equals live; shop/base differs (data.mode)"},
			{"Deployment", "shop", "match it alone"},
			{"Service", "shop", "match it alone"}}},
		{gb, "guestbook", []want{{"ConfigMap", "lobby-ui-", ""}, {"Deployment", "lobby-ui", ""}, {"Service", "lobby-ui", ""}}},
	} {
		o := options(t, c.ns)
		o.Repo, o.Preview = gitindex.Source{Location: repo}, true
		p := run(t, o)
		if len(p.Objects) != len(c.objects) || len(p.Applications) != 1 {
			t.Errorf("%s: %d objects, %d Applications %+v; want %d objects, one Application", c.kust, len(p.Objects), len(p.Applications), p.Applications, len(c.objects))
			continue
		}
		app := p.Applications[0]
		if app.Source != "git" || app.SourcePath != c.kust || !app.Kustomize || len(app.Include) > 0 || len(app.Objects) != len(c.objects) {
			t.Errorf("%s: Application %+v, want a kustomize source at %s", c.kust, app, c.kust)
		}
		for _, w := range c.objects {
			var o *plan.Object
			for i := range p.Objects {
				if p.Objects[i].Kind == w.kind && (p.Objects[i].Name == w.name || strings.HasSuffix(w.name, "-") && strings.HasPrefix(p.Objects[i].Name, w.name)) {
					o = &p.Objects[i]
				}
			}
			switch {
			case o == nil:
				t.Errorf("%s: %s %s not planned", c.kust, w.kind, w.name)
				continue
			case o.Git == nil || o.Git.Kustomization != c.kust || o.Git.Path != c.kust+"/kustomization.yaml" || o.Git.Line != 0 || len(o.Ambiguous) > 0:
				t.Errorf("%s: %s matched %+v (ambiguous %+v)", c.kust, o.Ref.String(), o.Git, o.Ambiguous)
			case !strings.Contains(o.Git.Reason, w.reason) || w.reason == "" && o.Git.Reason != "":
				t.Errorf("%s: %s reason %q, want %q", c.kust, o.Ref.String(), o.Git.Reason, w.reason)
			case o.Drift == nil || !o.Drift.Identical():
				t.Errorf("%s: %s drift %+v, want none", c.kust, o.Ref.String(), o.Drift)
			case o.App != app.Name:
				t.Errorf("%s: %s in Application %q", c.kust, o.Ref.String(), o.App)
			case o.Preview == nil || o.Preview.Outcome != preview.NoOp:
				t.Errorf("%s: %s preview %+v, want no-op", c.kust, o.Ref.String(), o.Preview)
			}
			for _, f := range o.Findings {
				if f.Code == plan.CodeAmbiguous || f.Code == plan.CodeNotInGit || f.Code == plan.CodeStaleVsGit {
					t.Errorf("%s: %s: %s", c.kust, o.Ref.String(), f.Message)
				}
			}
		}
		if s := p.Summary; s.NotInGit != 0 || s.Ambiguous != 0 || s.Drifted != 0 || s.Preview == nil || s.Preview.NoOp != len(c.objects) {
			t.Errorf("%s: summary %+v preview %+v", c.kust, s, s.Preview)
		}
		for _, f := range p.Findings {
			if f.Code == plan.CodeRenderFailed {
				t.Errorf("%s: %s", c.kust, f.Message)
			}
		}
		if got := strings.Join(p.Repo.Rendered, ","); got != "guestbook,shop/base,shop/overlays/prod,shop/overlays/staging" {
			t.Errorf("rendered %s", got)
		}
	}
}
