package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/gitops"
)

// Issue 28: adopt's render of an Application's source (gitindex.Render)
// equals what Argo CD's repo-server renders for it, object for object.

func TestRenderOracleV2(t *testing.T) {
	t.Parallel() // on its version's shared plane, in turn with that plane's other tests (sharedArgoCD)
	testRenderOracle(t, ArgoCDOldest)
}

func TestRenderOracleV3(t *testing.T) {
	t.Parallel() // on its version's shared plane, in turn with that plane's other tests (sharedArgoCD)
	testRenderOracle(t, ArgoCDCurrent)
}

// oracleDirFiles is a directory source's tree: nested directories with
// .yaml, .yml and .json files, some left out by include, some by exclude,
// and files that are not manifests at all.
var oracleDirFiles = map[string]string{
	// Included by *.yaml at any depth (Argo CD's * also matches /).
	"dirsrc/web.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-web}
data: {mode: dir, count: "3"}
---
apiVersion: v1
kind: Service
metadata: {name: dir-web, namespace: explicit-ns, labels: {tier: front}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`,
	"dirsrc/list.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: dir-list-a}
  data: {k: a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: dir-list-b}
  data: {k: b}
`,
	"dirsrc/nested/deeper/app.json": `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "dir-json", "annotations": {"note": "from json"}},
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "dir-json"}},
    "template": {
      "metadata": {"labels": {"app": "dir-json"}},
      "spec": {"containers": [{"name": "c", "image": "registry.invalid/c:1", "ports": [{"containerPort": 8080}]}]}
    }
  }
}
`,
	// Included by nested/*.yml, at two depths.
	"dirsrc/nested/b.yml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-nested-yml}
data: {depth: "1"}
`,
	"dirsrc/nested/deeper/c.yml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-deeper-yml, namespace: explicit-ns}
data: {depth: "2"}
`,
	// A CRD, which Argo CD renders without a tracking mark.
	"dirsrc/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	// Not included: a .yml outside nested/.
	"dirsrc/other/e.yml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-not-included}
`,
	// Excluded by *skip* and legacy/* (at any depth below legacy/).
	"dirsrc/nested/skip-me.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-excluded-skip}
`,
	"dirsrc/legacy/old.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-excluded-legacy}
`,
	"dirsrc/legacy/deep/older.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dir-excluded-legacy-deep"}}
`,
	// Not manifest files.
	"dirsrc/README.md": "# not a manifest\n",
	"dirsrc/nested/notes.txt": `apiVersion: v1
kind: ConfigMap
metadata: {name: dir-txt}
`,
}

// oracleFlatFiles is a directory source read without recurse: what lies in
// its subdirectories is not rendered.
var oracleFlatFiles = map[string]string{
	"flat/a.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: flat-a}
data: {file: a}
`,
	"flat/b.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flat-b", "namespace": "explicit-ns"}, "data": {"file": "b"}}
`,
	"flat/sub/c.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: flat-sub-c}
`,
	"flat/sub/deeper/d.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flat-sub-d"}}
`,
}

// oracleSource is one Application over the repo, with the identities
// ("Kind namespace/name") Argo CD must render for it, so that agreeing on
// nothing cannot pass.
type oracleSource struct {
	app  string
	path string
	dir  gitindex.Directory
	want []string
}

var oracleSources = []oracleSource{
	{
		app:  "oracle-dir-recurse",
		path: "dirsrc",
		dir:  gitindex.Directory{Recurse: true, Include: "{*.yaml,*.json,nested/*.yml}", Exclude: "{*skip*,legacy/*}"},
		want: []string{
			"ConfigMap /dir-deeper-yml@explicit-ns", "ConfigMap /dir-list-a", "ConfigMap /dir-list-b",
			"ConfigMap /dir-nested-yml", "ConfigMap /dir-web", "CustomResourceDefinition apiextensions.k8s.io/widgets.example.com",
			"Deployment apps/dir-json", "Service /dir-web@explicit-ns",
		},
	},
	{
		app:  "oracle-kustomize-prod",
		path: "apps/web/overlays/prod",
		want: []string{
			"ConfigMap /prod-web-cfg@web-prod", "ConfigMap /prod-web-env-*@web-prod",
			"Deployment apps/prod-web@web-prod", "Service /prod-web@web-prod",
		},
	},
	{
		app:  "oracle-kustomize-staging",
		path: "apps/web/overlays/staging",
		want: []string{
			"ConfigMap /staging-web-cfg@web-staging", "ConfigMap /staging-web-env-*@web-staging",
			"Deployment apps/staging-web@web-staging", "Service /staging-web@web-staging",
		},
	},
	{
		app:  "oracle-dir-flat",
		path: "flat",
		want: []string{"ConfigMap /flat-a", "ConfigMap /flat-b@explicit-ns"},
	},
}

// oracleDestNamespace is every Application's destination namespace.
const oracleDestNamespace = "oracle-dest"

// testRenderOracle serves one repo over git HTTP, points one Application
// per source at it (never synced), and compares what argocd-server's
// manifests API returns with what adopt renders from the same repo URL
// (gitindex; plan.RenderSource for a chart, see testHelmOracle).
func testRenderOracle(t *testing.T, version string) {
	files := map[string]string{}
	for _, m := range []map[string]string{oracleDirFiles, oracleFlatFiles, oracleAppSetFiles} {
		for p, c := range m {
			files[p] = c
		}
	}
	overlays := filepath.Join("..", "..", "adopt", "gitindex", "testdata", "overlays")
	err := filepath.WalkDir(overlays, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(overlays, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if files["apps/web/overlays/staging/kustomization.yaml"] == "" {
		t.Fatalf("the overlays fixture was not copied from %s", overlays)
	}
	for p, c := range oracleHelmFiles(t) {
		files[p] = c
	}

	cp, a := sharedArgoCD(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	g, err := StartGitServer("argocd", "git-"+randomToken()[:8])
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	repoURL, err := g.CreateRepo("oracle", files)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddRepository(ctx, "oracle", repoURL, g.User, g.Password); err != nil {
		t.Fatal(err)
	}
	for _, s := range oracleSources {
		if err := a.CreateApplication(ctx, []byte(oracleApplication(s, repoURL))); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range oracleHelmApps {
		if err := a.CreateApplication(ctx, []byte(h.application(repoURL))); err != nil {
			t.Fatal(err)
		}
	}

	ix, err := gitindex.Load(ctx, gitindex.Source{Location: repoURL, Revision: "main", Auth: gitops.Auth{Username: g.User, Password: g.Password}})
	if err != nil {
		t.Fatal(err)
	}

	for _, s := range oracleSources {
		t.Run(s.app, func(t *testing.T) {
			argo := oracleManifests(t, ctx, a, s.app)
			ours, err := ix.Render(s.path, s.dir)
			if err != nil {
				t.Fatalf("gitindex cannot render %s: %v", s.path, err)
			}
			compareRender(t, version, s, argo, ours)
		})
	}
	testHelmOracle(t, ctx, version, a, cp, ix, repoURL)
	testAppSetOracle(t, ctx, a, ix, repoURL)
}

// oracleManifests waits until the controller has compared Application app
// (argocd-server then knows it too) and returns its manifests.
func oracleManifests(t *testing.T, ctx context.Context, a *ArgoCD, app string) []map[string]any {
	t.Helper()
	waitCtx, waitCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer waitCancel()
	if _, err := a.WaitApplication(waitCtx, app, func(st AppStatus) bool { return st.Sync != "" }); err != nil {
		t.Fatal(err)
	}
	argo, err := a.Manifests(ctx, app)
	if err != nil {
		t.Fatalf("%v\nrepo-server: %s", err, lastLines(a.LogTail("argocd-repo-server", 3000), 5))
	}
	return argo
}

func oracleApplication(s oracleSource, repoURL string) string {
	src := fmt.Sprintf("{repoURL: %q, path: %s, targetRevision: main}", repoURL, s.path)
	if s.dir != (gitindex.Directory{}) {
		src = fmt.Sprintf("{repoURL: %q, path: %s, targetRevision: main, directory: {recurse: %t, include: %q, exclude: %q}}",
			repoURL, s.path, s.dir.Recurse, s.dir.Include, s.dir.Exclude)
	}
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
spec:
  project: default
  source: %s
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, s.app, src, oracleDestNamespace)
}

// compareRender checks that Argo CD's and adopt's renders hold the same
// identities, those s.want names, and that each object is equal as JSON
// once the tracking label or annotation Argo CD adds is taken off.
func compareRender(t *testing.T, version string, s oracleSource, argo []map[string]any, ours []*gitindex.Manifest) {
	argoBy := map[string]map[string]any{}
	for _, o := range argo {
		id := oracleID(o)
		if argoBy[id] != nil {
			t.Errorf("Argo CD rendered %s twice", id)
		}
		argoBy[id] = o
	}
	oursBy := map[string]map[string]any{}
	for _, m := range ours {
		o := jsonRoundTrip(t, m.Object)
		id := oracleID(o)
		if oursBy[id] != nil {
			t.Errorf("adopt rendered %s twice", id)
		}
		oursBy[id] = o
		key := gitindex.Key{Group: m.Group, Kind: m.Kind, Namespace: m.Namespace, Name: m.Name}
		if want := keyOf(o); key != want {
			t.Errorf("adopt keys %s as %+v, its object says %+v", id, key, want)
		}
	}
	argoIDs, ourIDs := sortedKeys(argoBy), sortedKeys(oursBy)
	if !reflect.DeepEqual(argoIDs, ourIDs) {
		t.Errorf("Argo CD %s renders %s as\n  %s\nadopt renders\n  %s", version, s.path, strings.Join(argoIDs, "\n  "), strings.Join(ourIDs, "\n  "))
	}
	if !matchIDs(argoIDs, s.want) {
		t.Errorf("Argo CD %s renders %s as\n  %s\nthe fixture expects\n  %s", version, s.path, strings.Join(argoIDs, "\n  "), strings.Join(s.want, "\n  "))
	}
	t.Logf("Argo CD %s and adopt render %s (%s): %d and %d objects", version, s.path, s.app, len(argoIDs), len(ourIDs))
	for _, id := range argoIDs {
		o := oursBy[id]
		if o == nil {
			continue
		}
		a := untrack(t, version, s.app, argoBy[id], o)
		o = maskSecret(t, a, o)
		if !reflect.DeepEqual(a, o) {
			var lines []string
			jsonDiff("", a, o, &lines)
			t.Errorf("%s %s differs (- Argo CD %s, + adopt):\n%s", s.path, id, version, strings.Join(lines, "\n"))
		}
	}
}

// oracleID is "Kind group/name", with "@namespace" when the object sets one.
func oracleID(o map[string]any) string {
	k := keyOf(o)
	id := fmt.Sprintf("%s %s/%s", k.Kind, k.Group, k.Name)
	if k.Namespace != "" {
		id += "@" + k.Namespace
	}
	return id
}

func keyOf(o map[string]any) gitindex.Key {
	meta, _ := o["metadata"].(map[string]any)
	av, _ := o["apiVersion"].(string)
	group, _, ok := strings.Cut(av, "/")
	if !ok {
		group = ""
	}
	k := gitindex.Key{Group: group}
	k.Kind, _ = o["kind"].(string)
	k.Namespace, _ = meta["namespace"].(string)
	k.Name, _ = meta["name"].(string)
	return k
}

// matchIDs compares ids with want, where a want ending in "-*@ns" stands
// for a generated name's hash suffix.
func matchIDs(ids, want []string) bool {
	if len(ids) != len(want) {
		return false
	}
	w := append([]string(nil), want...)
	sort.Strings(w)
	for i, id := range ids {
		prefix, rest, ok := strings.Cut(w[i], "*")
		if !ok {
			if id != w[i] {
				return false
			}
			continue
		}
		mid, found := strings.CutPrefix(id, prefix)
		if !found || !strings.HasSuffix(mid, rest) || len(mid) != len(rest)+10 {
			return false
		}
	}
	return true
}

// untrack returns Argo CD's object without the tracking mark the
// repo-server adds to every object but a CRD, after checking its value:
// v2.14 tracks by the app.kubernetes.io/instance label (the Application's
// name), v3.2 by the argocd.argoproj.io/tracking-id annotation. When the
// source sets that key itself (a chart's instance label, its release
// name), the mark has replaced it and Git's value is put back; otherwise
// the key is removed, and a map left empty too when gitindex's object has
// none.
func untrack(t *testing.T, version, app string, argo, ours map[string]any) map[string]any {
	t.Helper()
	a := jsonRoundTrip(t, argo)
	meta, _ := a["metadata"].(map[string]any)
	ourMeta, _ := ours["metadata"].(map[string]any)
	k := keyOf(a)
	ns := k.Namespace
	if ns == "" {
		ns = oracleDestNamespace
	}
	field, key, want := "labels", "app.kubernetes.io/instance", app
	if !strings.HasPrefix(version, "v2.") {
		field, key, want = "annotations", "argocd.argoproj.io/tracking-id", fmt.Sprintf("%s:%s/%s:%s/%s", app, k.Group, k.Kind, ns, k.Name)
	}
	m, _ := meta[field].(map[string]any)
	ourM, _ := ourMeta[field].(map[string]any)
	v, marked := m[key]
	gitV, inGit := ourM[key]
	if k.Group == "apiextensions.k8s.io" && k.Kind == "CustomResourceDefinition" {
		if marked && (!inGit || v != gitV) {
			t.Errorf("%s: Argo CD set the CRD's %s %s to %q", oracleID(a), field, key, v)
		}
		return a
	}
	if !marked {
		t.Errorf("%s: Argo CD set no %s %s", oracleID(a), field, key)
		return a
	}
	if v != want {
		t.Errorf("%s: Argo CD's %s %s is %q, want %q", oracleID(a), field, key, v, want)
	}
	if inGit {
		m[key] = gitV
		return a
	}
	delete(m, key)
	if _, had := ourMeta[field]; len(m) == 0 && !had {
		delete(meta, field)
	}
	return a
}

// maskSecret returns gitindex's object with a core Secret's data values
// hidden as argocd-server's manifests API hides them (gitops-engine's
// diff.HideSecretData: every value of a lone object is "++++++++"), after
// checking that Argo CD's Secret holds exactly that mask; the keys are
// still compared. Anything else is returned as it is.
func maskSecret(t *testing.T, argo, ours map[string]any) map[string]any {
	t.Helper()
	k := keyOf(ours)
	if k.Group != "" || k.Kind != "Secret" {
		return ours
	}
	ad, _ := argo["data"].(map[string]any)
	for key, v := range ad {
		if v != "++++++++" {
			t.Errorf("%s: Argo CD's data.%s is %q, not argocd-server's mask", oracleID(argo), key, v)
		}
	}
	o := jsonRoundTrip(t, ours)
	if d, ok := o["data"].(map[string]any); ok {
		for key := range d {
			d[key] = "++++++++"
		}
	}
	return o
}

func jsonRoundTrip(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedKeys(m map[string]map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// jsonDiff lists the paths where a and b (decoded JSON) differ, with both
// values.
func jsonDiff(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			jsonDiff(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			jsonDiff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		*out = append(*out, fmt.Sprintf("  %s\n    - %s\n    + %s", path, aj, bj))
	}
}
