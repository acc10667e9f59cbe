package gitindex

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRenderOverlays: a base with two overlays (namespace, namePrefix,
// commonLabels, a strategic-merge patch, a JSON 6902 patch and a
// configMapGenerator). Each live object is found at its overlay, never at
// the base, whose files are not manifests of their own.
func TestRenderOverlays(t *testing.T) {
	ix, err := indexDir("testdata/overlays", KustomizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ix.Rendered, ","); got != "apps/web/overlays/prod,apps/web/overlays/staging" {
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
		if n, _ := number(spec["replicas"]); int64(n) != want {
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
	// The base's own files are read only through kustomize.
	if m := ix.Lookup("", "ConfigMap", "web-prod", "web-cfg"); len(m) != 0 {
		t.Fatalf("base file matched as a plain manifest: %+v", m)
	}
	if n := len(ix.Manifests()); n != 8 {
		t.Fatalf("%d manifests, want 8 (4 per overlay)", n)
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
