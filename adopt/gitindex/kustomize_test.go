package gitindex

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRenderOverlays: a base with two overlays (namespace, namePrefix,
// commonLabels, a strategic-merge patch, a JSON 6902 patch and a
// configMapGenerator). Each live object is found at its overlay. The base
// is rendered and indexed too (it is a place an Application could point),
// and its files are read only through kustomize.
func TestRenderOverlays(t *testing.T) {
	ix, err := indexDir("testdata/overlays", KustomizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ix.Rendered, ","); got != "apps/web/base,apps/web/overlays/prod,apps/web/overlays/staging" {
		t.Fatalf("rendered %q (unrendered %+v)", got, ix.Unrendered)
	}
	for _, env := range []string{"prod", "staging"} {
		ns := "web-" + env
		cm := ix.Lookup("", "ConfigMap", ns, env+"-web-cfg")
		if len(cm) != 1 || cm[0].Dir() != "apps/web/overlays/"+env || cm[0].Path != "apps/web/overlays/"+env+"/kustomization.yaml" {
			t.Fatalf("%s: %+v", env, cm)
		}
		data := cm[0].Object["data"].(map[string]any)
		labels := cm[0].Object["metadata"].(map[string]any)["labels"].(map[string]any)
		if data["mode"] != env || data["greeting"] != "hello" || labels["env"] != env {
			t.Fatalf("%s: patch or labels not applied: %v", env, cm[0].Object)
		}
		d := ix.Lookup("apps", "Deployment", ns, env+"-web")
		if len(d) != 1 {
			t.Fatalf("%s deployment: %+v", env, d)
		}
		spec := d[0].Object["spec"].(map[string]any)
		want := map[string]int64{"prod": 3, "staging": 1}[env]
		if fmt.Sprint(spec["replicas"]) != fmt.Sprint(want) {
			t.Fatalf("%s: JSON 6902 patch: replicas %v", env, spec["replicas"])
		}
		// The generator's name carries a hash suffix, and the Deployment
		// refers to it by that name.
		var gen *Manifest
		for _, m := range ix.Manifests() {
			if m.Kind == "ConfigMap" && m.Namespace == ns && m.Generated == env+"-web-env" {
				gen = m
			}
		}
		if gen == nil {
			t.Fatalf("%s: generated ConfigMap not indexed", env)
		}
		if !strings.Contains(jsonOf(t, spec), gen.Name) {
			t.Fatalf("%s: deployment does not refer to %s", env, gen.Name)
		}
		// A live generated ConfigMap made from older input has another
		// suffix: it is found by its stem.
		if m := ix.Lookup("", "ConfigMap", ns, env+"-web-env-9c7m2bf4tg"); len(m) != 1 || m[0] != gen {
			t.Fatalf("%s: by stem: %+v", env, m)
		}
	}
	// The base's own files are read only through kustomize: web-cfg is
	// found in the base's render, never as the plain file.
	if m := ix.Lookup("", "ConfigMap", "web-prod", "web-cfg"); len(m) != 1 || m[0].Render != "apps/web/base" || m[0].Path != "apps/web/base/kustomization.yaml" {
		t.Fatalf("base's web-cfg: %+v", m)
	}
	if n := len(ix.Manifests()); n != 11 {
		t.Fatalf("%d manifests, want 11 (4 per overlay, 3 in the base)", n)
	}
	if got := strings.Join(ix.UsedBy("apps/web/base"), ","); got != "apps/web/overlays/prod,apps/web/overlays/staging" || len(ix.UsedBy("apps/web/overlays/prod")) != 0 {
		t.Fatalf("used by %q", got)
	}
}

// TestRenderFailures: what cannot be rendered is skipped with the file and
// the reason, and never fetched.
func TestRenderFailures(t *testing.T) {
	ix := build(map[string]string{
		"missing/kustomization.yaml":  "resources: [../nowhere]\n",
		"remote/kustomization.yaml":   "resources:\n- https://example.invalid/org/repo//base?ref=v1\n",
		"onremote/kustomization.yaml": "resources: [../remote]\n",
		"broken/kustomization.yaml":   "resources: [cm.yaml]\npatches:\n- path: nope.yaml\n",
		"broken/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"notyaml/kustomization.yaml":  "resources: [\n",
		"ok/kustomization.yaml":       "resources: [cm.yaml]\n",
		"ok/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n",
	})
	reasons := map[string]string{}
	for _, s := range ix.Unrendered {
		reasons[s.Path] = s.Reason
	}
	for file, want := range map[string]string{
		"missing/kustomization.yaml":  `"../nowhere" does not exist`,
		"onremote/kustomization.yaml": "remote resource",
		"broken/kustomization.yaml":   "nope.yaml",
		"notyaml/kustomization.yaml":  "notyaml/kustomization.yaml",
	} {
		if !strings.Contains(reasons[file], want) {
			t.Errorf("%s: reason %q, want it to hold %q", file, reasons[file], want)
		}
	}
	if len(ix.Lookup("", "ConfigMap", "", "b")) != 0 || len(ix.Lookup("", "ConfigMap", "", "ok")) != 1 {
		t.Fatalf("manifests %+v", ix.Manifests())
	}
}

func TestBuildOptions(t *testing.T) {
	files := map[string]string{
		"shared/patch.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: patched}\n",
		"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: ../shared/patch.yaml\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n",
	}
	ix := build(files)
	if len(rendered(ix.Lookup("", "ConfigMap", "", "c"))) != 0 || len(ix.Unrendered) != 1 || !strings.Contains(ix.Unrendered[0].Reason, "is not in or below") {
		t.Fatalf("a patch outside the kustomization root loaded under the default restrictor: %+v", ix.Unrendered)
	}
	ix = New()
	ix.Kustomize = KustomizeOptions{BuildOptions: "--load-restrictor LoadRestrictionsNone --enable-helm"}
	for p, c := range files {
		ix.Add(p, []byte(c))
	}
	ix.Finish()
	m := rendered(ix.Lookup("", "ConfigMap", "", "c"))
	if len(m) != 1 || m[0].Object["data"].(map[string]any)["k"] != "patched" {
		t.Fatalf("LoadRestrictionsNone: %+v (unrendered %+v)", m, ix.Unrendered)
	}
	if len(ix.Notes) != 1 || !strings.Contains(ix.Notes[0], "--enable-helm") {
		t.Fatalf("notes %q", ix.Notes)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rendered(ms []*Manifest) []*Manifest {
	var out []*Manifest
	for _, m := range ms {
		if m.Render != "" {
			out = append(out, m)
		}
	}
	return out
}

// TestEveryKustomizationIsACandidate: shop/base is an app of its own and
// the base of two overlays, one with a Component. Every kustomization but
// the Component is rendered and indexed, so a live object applied with
// `kubectl apply -k shop/base` is found in the base's render, and one in
// shop-prod in both the base's render (no namespace) and the overlay's.
func TestEveryKustomizationIsACandidate(t *testing.T) {
	ix, err := indexDir("testdata/inputs", KustomizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ix.Rendered, ","); got != "guestbook,shop/base,shop/overlays/prod,shop/overlays/staging" || len(ix.Unrendered) != 0 {
		t.Fatalf("rendered %q, unrendered %+v", got, ix.Unrendered)
	}
	if got := strings.Join(ix.UsedBy("shop/base"), ","); got != "shop/overlays/prod,shop/overlays/staging" {
		t.Fatalf("shop/base used by %q", got)
	}
	if got := strings.Join(ix.UsedBy("shop/components/metrics"), ","); got != "shop/overlays/prod" {
		t.Fatalf("the Component used by %q", got)
	}
	dirs := func(ms []*Manifest) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Dir())
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct{ group, kind, ns, name, want string }{
		{"", "ConfigMap", "shop-dev", "shop-cfg", "shop/base"},
		{"apps", "Deployment", "shop-dev", "shop", "shop/base"},
		{"", "ConfigMap", "shop-prod", "shop-cfg", "shop/overlays/prod,shop/base"},
		{"apps", "Deployment", "shop-staging", "shop", "shop/overlays/staging,shop/base"},
		// The Component's object only through the overlay naming it.
		{"", "ConfigMap", "shop-prod", "shop-metrics", "shop/overlays/prod"},
		{"", "ConfigMap", "shop-dev", "shop-metrics", ""},
	} {
		if got := dirs(ix.Lookup(c.group, c.kind, c.ns, c.name)); got != c.want {
			t.Errorf("%s %s/%s: found in %q, want %q", c.kind, c.ns, c.name, got, c.want)
		}
	}
	d := ix.Lookup("apps", "Deployment", "shop-prod", "shop")[0]
	tpl := d.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	if fmt.Sprint(d.Object["spec"].(map[string]any)["replicas"]) != "3" || tpl["annotations"] == nil {
		t.Fatalf("prod Deployment: the overlay's patch or the Component's is missing: %v", d.Object)
	}
}

// TestKustomizationInputsAreNotManifests: guestbook/kustomization.yaml
// reads plain files in directories that hold no kustomization (resources
// in base/, a strategic-merge patch in patches/, a generator's files and
// envs in config/). They are its inputs: Lookup finds the object only in
// its render, never in the file, so nothing is defined twice and no
// Application would point at base/. An existing Application's directory
// source at base/ still reads them.
func TestKustomizationInputsAreNotManifests(t *testing.T) {
	ix, err := indexDir("testdata/inputs", KustomizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ group, kind, name string }{{"apps", "Deployment", "lobby-ui"}, {"", "Service", "lobby-ui"}} {
		ms := ix.Lookup(c.group, c.kind, "guestbook", c.name)
		if len(ms) != 1 || ms[0].Render != "guestbook" || ms[0].Path != "guestbook/kustomization.yaml" {
			t.Fatalf("%s %s: %+v, want the guestbook render alone", c.kind, c.name, ms)
		}
	}
	if ms := ix.Lookup("", "Pod", "guestbook", "guestbook-agent"); len(ms) != 0 {
		t.Fatalf("the generator's file is a manifest: %+v", ms)
	}
	for _, m := range ix.Manifests() {
		if m.Render == "" {
			t.Errorf("%s:%d is a plain manifest; every file in the repo is a kustomization's", m.Path, m.Line)
		}
	}
	var gen []*Manifest
	for _, m := range ix.Manifests() {
		if m.Kind == "ConfigMap" && m.Generated == "lobby-ui" {
			gen = append(gen, m)
		}
	}
	if len(gen) != 1 || !strings.Contains(jsonOf(t, gen[0].Object["data"]), "guestbook-agent") || !strings.Contains(jsonOf(t, gen[0].Object["data"]), "dark") {
		t.Fatalf("generated ConfigMap: %+v", gen)
	}
	if files := ix.FilesIn("guestbook/base"); len(files) != 2 {
		t.Fatalf("a directory source at guestbook/base reads %d files, want 2", len(files))
	}
	ms, err := ix.Render("guestbook/base", Directory{})
	if err != nil || len(ms) != 2 {
		t.Fatalf("directory source at guestbook/base: %+v, %v", ms, err)
	}
	if m := ix.At("apps", "Deployment", "guestbook", "lobby-ui", "guestbook/base/deployment.yaml", 1); m == nil || m != ms[0] {
		t.Fatalf("At does not find the file an existing Application's directory source reads: %+v", m)
	}
	if m := ix.At("", "ConfigMap", "shop-prod", "shop-cfg", "shop/base/kustomization.yaml", 0); m == nil || m.Render != "shop/base" {
		t.Fatalf("At does not find the base's render: %+v", m)
	}
}
