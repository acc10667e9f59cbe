package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// overlayRepo copies adopt/gitindex/testdata/overlays (a base with a prod
// and a staging overlay) into a new directory, with each overlay's
// namespace renamed to one of this test's own.
func overlayRepo(t *testing.T, nsOf map[string]string) string {
	t.Helper()
	rename := map[string]string{}
	for env, ns := range nsOf {
		rename["namespace: web-"+env] = "namespace: " + ns
	}
	dst := t.TempDir()
	if err := testenv.WriteFiles(dst, testdataRepo(t, "overlays", rename)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// testdataRepo reads the files of adopt/gitindex/testdata/<name>, with
// each key of replace replaced by its value.
func testdataRepo(t *testing.T, name string, replace map[string]string) map[string]string {
	t.Helper()
	files, err := testenv.ReadFiles(filepath.Join("../../adopt/gitindex/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		for old, repl := range replace {
			c = strings.ReplaceAll(c, old, repl)
		}
		files[p] = c
	}
	return files
}

// TestPlanKustomizeOverlays: a base with two overlays (namespace,
// namePrefix, commonLabels, a strategic-merge and a JSON 6902 patch, a
// configMapGenerator), applied by hand with `kubectl apply -k`. Every live
// object matches its overlay's render with no drift, each overlay gets one
// Application at the overlay's path, never the base, and nothing is
// exported.
func TestPlanKustomizeOverlays(t *testing.T) {
	ctx := context.Background()
	nsOf := map[string]string{"prod": cp.Namespace(t), "staging": cp.Namespace(t)}
	repo := overlayRepo(t, nsOf)
	for env := range nsOf {
		if out, err := cp.Kubectl(ctx, nil, "apply", "-k", filepath.Join(repo, "apps/web/overlays", env)); err != nil {
			t.Fatalf("kubectl apply -k %s: %v\n%s", env, err, out)
		}
	}
	for env, ns := range nsOf {
		overlay := "apps/web/overlays/" + env
		p := planJSON(t, "-n", ns, "--repo", repo)
		if len(p.Objects) != 4 {
			t.Fatalf("%s: %d objects, want 4 (ConfigMap, generated ConfigMap, Deployment, Service)", env, len(p.Objects))
		}
		for _, o := range p.Objects {
			if o.Git == nil || o.Git.Kustomization != overlay || o.Git.Path != overlay+"/kustomization.yaml" {
				t.Fatalf("%s: %s/%s matched %+v (ambiguous %+v), want the overlay %s", env, o.Kind, o.Name, o.Git, o.Ambiguous, overlay)
			}
			if o.Drift == nil || !o.Drift.Identical() {
				t.Fatalf("%s: %s/%s drift %+v, want none", env, o.Kind, o.Name, o.Drift)
			}
			if !strings.HasPrefix(o.Name, env+"-") {
				t.Fatalf("%s: %s has no name prefix", env, o.Name)
			}
		}
		if len(p.Applications) != 1 {
			t.Fatalf("%s: %d Applications: %+v", env, len(p.Applications), p.Applications)
		}
		a := p.Applications[0]
		if a.Source != "git" || a.SourcePath != overlay || !a.Kustomize || a.Include != nil {
			t.Fatalf("%s: Application %+v, want a kustomize source at %s", env, a, overlay)
		}
		if p.Summary.NotInGit != 0 || p.Summary.Drifted != 0 || p.Summary.Ambiguous != 0 {
			t.Fatalf("%s: summary %+v", env, p.Summary)
		}
		for _, f := range p.Findings {
			if f.Code == plan.CodeRenderFailed {
				t.Fatalf("%s: %s", env, f.Message)
			}
		}
		if strings.Join(p.Repo.Rendered, ",") != "apps/web/base,apps/web/overlays/prod,apps/web/overlays/staging" {
			t.Fatalf("rendered %v", p.Repo.Rendered)
		}
	}
}

// TestPlanKustomizeBuildOptions: argocd-cm's kustomize.buildOptions is how
// Argo CD builds; with LoadRestrictionsNone an overlay may read a patch
// outside its directory, and the plan renders it the same way.
func TestPlanKustomizeBuildOptions(t *testing.T) {
	ctx := context.Background()
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	repo := t.TempDir()
	writeTree(t, repo, map[string]string{
		"shared/mode.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: opt-cfg}\ndata: {mode: shared}\n",
		"app/kustomization.yaml":    "namespace: " + ns + "\nresources: [cm.yaml]\npatches:\n- path: ../shared/mode.yaml\n",
		"app/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: opt-cfg}\ndata: {mode: own}\n",
		"shared/kustomization.yaml": "resources: []\n",
	})
	live := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: opt-cfg, namespace: " + ns + "}\ndata: {mode: shared}\n"
	if out, err := cp.Kubectl(ctx, []byte(live), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// kustomize's default restrictor: the overlay does not build.
	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", repo)
	if o := findObject(p, "ConfigMap", ns, "opt-cfg"); o == nil || o.Git != nil || len(p.Repo.Unrendered) != 1 || !strings.Contains(p.Repo.Unrendered[0].Reason, "is not in or below") {
		t.Fatalf("default restrictor: object %+v, unrendered %+v", o, p.Repo.Unrendered)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: " + argoNS + "}\ndata:\n  kustomize.buildOptions: --load-restrictor LoadRestrictionsNone\n"
	if out, err := cp.Kubectl(ctx, []byte(cm), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	p = planJSON(t, "-n", ns, "--argocd-namespace", argoNS, "--repo", repo)
	o := findObject(p, "ConfigMap", ns, "opt-cfg")
	if o == nil || o.Git == nil || o.Git.Kustomization != "app" || o.Drift == nil || !o.Drift.Identical() || len(p.Repo.Unrendered) != 0 {
		t.Fatalf("LoadRestrictionsNone: object %+v, unrendered %+v", o, p.Repo.Unrendered)
	}
}
