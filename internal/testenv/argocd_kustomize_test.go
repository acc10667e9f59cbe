package testenv

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestArgoCDv2RendersKustomizeOverlay(t *testing.T) {
	t.Parallel() // on its version's shared plane, in turn with that plane's other tests (sharedArgoCD)
	testArgoCDRendersKustomizeOverlay(t, ArgoCDOldest)
}

func TestArgoCDv3RendersKustomizeOverlay(t *testing.T) {
	t.Parallel() // on its version's shared plane, in turn with that plane's other tests (sharedArgoCD)
	testArgoCDRendersKustomizeOverlay(t, ArgoCDCurrent)
}

// kustomizeRepo is a base and a prod overlay that renames, moves, patches
// and adds a generated ConfigMap.
var kustomizeRepo = map[string]string{
	"apps/web/base/kustomization.yaml": "resources: [configmap.yaml]\n",
	"apps/web/base/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-cfg}
data: {mode: base}
`,
	"apps/web/overlays/prod/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: web-prod
namePrefix: prod-
resources: [../../base]
patches:
- path: mode.yaml
configMapGenerator:
- name: web-env
  literals: [LOG_LEVEL=warn]
`,
	"apps/web/overlays/prod/mode.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-cfg}
data: {mode: prod}
`,
}

// testArgoCDRendersKustomizeOverlay points an Application at a kustomize
// overlay in a repo on the real git server and asks argocd-server for its
// target manifests: the repo-server must have run the kustomize it
// bundles (from its PATH; without one Argo CD answers with an error). The
// generated ConfigMap's name carries kustomize's content hash.
func testArgoCDRendersKustomizeOverlay(t *testing.T, version string) {
	_, a := sharedArgoCD(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	g, err := StartGitServer("argocd", "git-"+randomToken()[:8])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	repoURL, err := g.CreateRepo("gitops", kustomizeRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddRepository(ctx, "gitops", repoURL, g.User, g.Password); err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web-prod
spec:
  project: default
  source: {repoURL: %q, path: apps/web/overlays/prod, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: web-prod}
`, repoURL)
	if err := a.CreateApplication(ctx, []byte(app)); err != nil {
		t.Fatal(err)
	}
	// Once the controller has compared it, argocd-server knows it too.
	waitCtx, waitCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer waitCancel()
	if _, err := a.WaitApplication(waitCtx, "web-prod", func(s AppStatus) bool { return s.Sync != "" }); err != nil {
		t.Fatal(err)
	}

	renderStart := time.Now()
	objs, err := a.Manifests(ctx, "web-prod")
	if err != nil {
		t.Fatalf("%v\nrepo-server: %s", err, lastLines(a.LogTail("argocd-repo-server", 3000), 5))
	}
	t.Logf("argocd %s: rendered %d manifests in %s", version, len(objs), time.Since(renderStart).Round(time.Millisecond))

	got := map[string]map[string]any{}
	var names []string
	for _, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		id := fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
		got[id] = o
		names = append(names, id)
	}
	sort.Strings(names)
	want := map[string]map[string]any{
		"ConfigMap web-prod/prod-web-cfg":            {"mode": "prod"},
		"ConfigMap web-prod/prod-web-env-dfk4bdbtkk": {"LOG_LEVEL": "warn"},
	}
	if len(got) != len(want) {
		t.Errorf("Argo CD %s rendered %s, want the %d objects below", version, strings.Join(names, ", "), len(want))
	}
	for id, data := range want {
		o, ok := got[id]
		if !ok {
			t.Errorf("Argo CD %s did not render %s; it rendered %s", version, id, strings.Join(names, ", "))
			continue
		}
		if fmt.Sprint(o["data"]) != fmt.Sprint(data) {
			t.Errorf("%s data %v, want %v", id, o["data"], data)
		}
	}
}
