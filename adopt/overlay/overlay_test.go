package overlay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// The three clusters' manifests. Every value type is here (strings,
// integers, a float, booleans, null, nested maps, lists of named items,
// a list of scalars, multi-line strings), and every kind of difference:
// a changed scalar, a key one cluster adds and another lacks, a named
// list's item changed and one added in the middle, an object on one
// cluster only, and an object the same everywhere.
var manifests = map[string]map[string]string{
	"eu": {
		"configmap-settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {tier: web, region: eu}
data:
  mode: fast
  legacy: "on"
  script.py: |
    import os
    print("eu")
  empty: ""
`,
		"deployment-web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  paused: false
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {team: shop}
    spec:
      containers:
      - name: web
        image: shop/web:1.4.0
        args: [--port, "8080", --verbose]
        env:
        - {name: REGION, value: eu}
        - {name: LOG, value: info}
        resources: {limits: {cpu: 500m, memory: 256Mi}}
      - name: sidecar
        image: shop/proxy:2.0
        stdin: true
`,
		"widget.example.com-catalog.yaml": `apiVersion: example.com/v1
kind: Widget
metadata: {name: catalog, namespace: shop}
spec:
  ratio: 0.25
  enabled: true
  owner: null
  stages:
  - {name: build, timeout: 30}
  - {name: test, timeout: 60, retries: 2}
  - {name: ship, timeout: 90}
`,
		"configmap-eu-only.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: eu-only, namespace: shop}
data: {gdpr: "true"}
`,
		"service-web.yaml": `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
`,
	},
	"us": {
		"configmap-settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {tier: web, region: us}
data:
  mode: fast
  script.py: |
    import os
    print("us")
    print("twice")
  empty: ""
`,
		"deployment-web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 5
  paused: false
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {team: shop}
    spec:
      containers:
      - name: web
        image: shop/web:1.5.0
        args: [--port, "8080"]
        env:
        - {name: REGION, value: us}
        - {name: TZ, value: America/New_York}
        - {name: LOG, value: info}
        resources: {limits: {cpu: 500m, memory: 512Mi}}
      - name: sidecar
        image: shop/proxy:2.0
        stdin: false
`,
		"widget.example.com-catalog.yaml": `apiVersion: example.com/v1
kind: Widget
metadata: {name: catalog, namespace: shop}
spec:
  ratio: 0.5
  enabled: false
  owner: team-us
  stages:
  - {name: build, timeout: 30}
  - {name: scan, timeout: 15}
  - {name: test, timeout: 60, retries: 3}
  - {name: ship, timeout: 90}
`,
		"service-web.yaml": `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
`,
	},
	"ap": {
		"configmap-settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  labels: {tier: web, region: ap}
data:
  mode: slow
  script.py: |
    import os
    print("eu")
  empty: ""
`,
		"deployment-web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  paused: false
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {team: shop}
    spec:
      containers:
      - name: web
        image: shop/web:1.4.0
        args: [--port, "8080", --verbose]
        env:
        - {name: REGION, value: ap}
        - {name: LOG, value: debug}
        resources: {limits: {cpu: 500m, memory: 256Mi}}
      - name: sidecar
        image: shop/proxy:2.0
        stdin: true
`,
		"widget.example.com-catalog.yaml": `apiVersion: example.com/v1
kind: Widget
metadata: {name: catalog, namespace: shop}
spec:
  ratio: 0.25
  enabled: true
  owner: null
  stages:
  - {name: build, timeout: 30}
  - {name: test, timeout: 60, retries: 2}
  - {name: ship, timeout: 90}
`,
		"service-web.yaml": `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: 8080, protocol: TCP}
`,
	},
}

// fleetClusters are the manifests as apply exports them (export.Marshal's
// bytes), with a Secret's placeholder beside them on each cluster: the
// same on eu and us, another on ap.
func fleetClusters(t *testing.T, names ...string) []Cluster {
	t.Helper()
	var out []Cluster
	for _, n := range names {
		c := Cluster{Name: n, Resources: map[string][]byte{}, Others: map[string][]byte{
			"secret-creds.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\ndata: {password: \"\"}\n"),
		}}
		if n == "ap" {
			c.Others["secret-creds.yaml"] = []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: shop}\ndata: {token: \"\"}\n")
		}
		for f, y := range manifests[n] {
			b, err := Normalize([]byte(y))
			if err != nil {
				t.Fatalf("%s %s: %v", n, f, err)
			}
			c.Resources[f] = b
		}
		out = append(out, c)
	}
	return out
}

// TestBuildBaseAndOverlays: the base holds what all three clusters share,
// each overlay only its cluster's differences, in the form that renders
// exactly; every overlay is proven by kustomize's library (Build) and,
// below, by the real kustomize CLI; a re-build gives the same bytes.
func TestBuildBaseAndOverlays(t *testing.T) {
	clusters := fleetClusters(t, "eu", "us", "ap")
	l, err := Build(clusters)
	if err != nil {
		t.Fatal(err)
	}
	file := func(p string) string {
		t.Helper()
		b, ok := l.Files[p]
		if !ok {
			t.Fatalf("no %s among %v", p, keys(l.Files))
		}
		return string(b)
	}
	// What is common is in the base, and nothing else.
	base := file("base/configmap-settings.yaml")
	for _, want := range []string{"tier: web", "empty: \"\"", "name: settings"} {
		if !strings.Contains(base, want) {
			t.Errorf("base ConfigMap lacks %q:\n%s", want, base)
		}
	}
	for _, not := range []string{"region", "legacy", "mode", "script.py"} {
		if strings.Contains(base, not) {
			t.Errorf("base ConfigMap holds %q, which the clusters do not share:\n%s", not, base)
		}
	}
	dep := file("base/deployment-web.yaml")
	for _, want := range []string{"name: web\n", "name: sidecar", "image: shop/proxy:2.0", "cpu: 500m", "name: LOG", "paused: false", "team: shop"} {
		if !strings.Contains(dep, want) {
			t.Errorf("base Deployment lacks %q:\n%s", want, dep)
		}
	}
	for _, not := range []string{"replicas", "shop/web:", "value: eu", "memory", "stdin", "args", "value: info"} {
		if strings.Contains(dep, not) {
			t.Errorf("base Deployment holds %q:\n%s", not, dep)
		}
	}
	if s := file("base/kustomization.yaml"); s != "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - configmap-settings.yaml\n  - deployment-web.yaml\n  - service-web.yaml\n  - widget.example.com-catalog.yaml\n" {
		t.Errorf("base kustomization:\n%s", s)
	}
	// The Service is the same everywhere: in the base, patched nowhere.
	// The object on eu only is whole in eu's overlay.
	forms := map[string]Form{}
	for _, p := range l.Patches {
		forms[p.Cluster+" "+p.Object.String()] = p.Form
		if p.Object.Kind == "Service" {
			t.Errorf("the Service, the same on every cluster, is patched: %+v", p)
		}
	}
	if forms["eu ConfigMap shop/eu-only"] != Whole || file("overlays/eu/configmap-eu-only.yaml") != string(clusters[0].Resources["configmap-eu-only.yaml"]) {
		t.Errorf("eu-only: %v", forms)
	}
	if _, ok := l.Files["base/configmap-eu-only.yaml"]; ok {
		t.Errorf("the object on eu only is in the base")
	}
	for _, c := range []string{"eu", "us", "ap"} {
		// Maps only: a strategic-merge patch.
		if f := forms[c+" ConfigMap shop/settings"]; f != StrategicMerge {
			t.Errorf("%s: ConfigMap settings patched as %q, want %s", c, f, StrategicMerge)
		}
		k := file("overlays/" + c + "/kustomization.yaml")
		if !strings.Contains(k, "resources:\n  - ../../base\n") || !strings.Contains(k, "path: patches/configmap-settings.yaml") {
			t.Errorf("%s's kustomization:\n%s", c, k)
		}
	}
	// A CRD's named list with an item inserted in the middle, and a
	// null: strategic merge cannot say either exactly.
	if f := forms["us example.com/Widget shop/catalog"]; f != JSON6902 {
		t.Errorf("us's Widget patched as %q, want %s", f, JSON6902)
	}
	if k := file("overlays/us/kustomization.yaml"); !strings.Contains(k, "path: patches/widget.example.com-catalog.yaml\n    target:\n      group: example.com\n      version: v1\n      kind: Widget\n      namespace: shop\n      name: catalog\n") {
		t.Errorf("us's kustomization lacks the JSON patch's target:\n%s", k)
	}
	if p := file("overlays/us/patches/widget.example.com-catalog.yaml"); !strings.Contains(p, "op: add\n  path: /spec/stages/1\n") || strings.Contains(p, "name: build") {
		t.Errorf("us's Widget patch adds the stage in the middle by index and nothing else:\n%s", p)
	}
	// Only the differences: eu's ConfigMap patch holds its region, mode,
	// script and legacy key, not what the base holds.
	p := file("overlays/eu/patches/configmap-settings.yaml")
	for _, want := range []string{"region: eu", "legacy: \"on\"", "mode: fast", "print(\"eu\")"} {
		if !strings.Contains(p, want) {
			t.Errorf("eu's ConfigMap patch lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "tier") || strings.Contains(p, "empty") {
		t.Errorf("eu's ConfigMap patch repeats the base:\n%s", p)
	}
	// Secrets' placeholders are beside the manifests, never built: the
	// same on eu and us but not on ap, so one per overlay.
	for _, c := range []string{"eu", "us", "ap"} {
		if _, ok := l.Files["overlays/"+c+"/secret-creds.yaml"]; !ok {
			t.Errorf("%s's placeholder is not in its overlay", c)
		}
	}
	again, err := Build(fleetClusters(t, "eu", "us", "ap"))
	if err != nil || !equalFiles(again.Files, l.Files) {
		t.Errorf("a re-build differs: %v", err)
	}
	realKustomize(t, l, clusters)

	// Two clusters, their placeholders the same: in the base once.
	two, err := Build(fleetClusters(t, "eu", "us"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := two.Files["base/secret-creds.yaml"]; !ok || two.Files["overlays/eu/secret-creds.yaml"] != nil {
		t.Errorf("the shared placeholder: %v", keys(two.Files))
	}
	if strings.Contains(string(two.Files["base/kustomization.yaml"]), "secret") {
		t.Errorf("a placeholder is built:\n%s", two.Files["base/kustomization.yaml"])
	}
}

// realKustomize builds every overlay with the real kustomize CLI that
// Argo CD v3.2 bundles, and checks each object it prints against the
// cluster's, byte for byte after normalisation.
func realKustomize(t *testing.T, l *Layout, clusters []Cluster) {
	t.Helper()
	bin, err := testenv.KustomizeBinaries(testenv.BundledKustomize(testenv.ArgoCDTrap))
	if err != nil {
		t.Fatal(err) // never a skip
	}
	root := t.TempDir()
	for p, b := range l.Files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clusters {
		out, err := exec.Command(filepath.Join(bin, "kustomize"), "build", filepath.Join(root, OverlayDir(c.Name))).Output()
		if err != nil {
			t.Fatalf("kustomize build %s: %v", c.Name, err)
		}
		want := map[string]bool{}
		for _, b := range c.Resources {
			want[string(b)] = true
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
		n := 0
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := Normalize(doc)
			if err != nil {
				t.Fatal(err)
			}
			if !want[string(got)] {
				t.Errorf("cluster %s: kustomize %s printed an object the cluster does not hold:\n%s", c.Name, bin, got)
			}
			n++
		}
		if n != len(c.Resources) {
			t.Errorf("cluster %s: kustomize printed %d objects, want %d", c.Name, n, len(c.Resources))
		}
	}
}

// TestProveRefuses: an overlay that no longer renders its cluster's
// object is refused, naming the cluster, the object and the field; so is
// one that renders an object the cluster does not hold, and one whose
// object is missing.
func TestProveRefuses(t *testing.T) {
	clusters := fleetClusters(t, "eu", "us")
	l, err := Build(clusters)
	if err != nil {
		t.Fatal(err)
	}
	var pe *ProofError
	edit := func(p, from, to string) *Layout {
		t.Helper()
		c := &Layout{Files: map[string][]byte{}}
		for k, v := range l.Files {
			c.Files[k] = v
		}
		if !strings.Contains(string(c.Files[p]), from) {
			t.Fatalf("%s lacks %q:\n%s", p, from, c.Files[p])
		}
		c.Files[p] = []byte(strings.Replace(string(c.Files[p]), from, to, 1))
		return c
	}
	err = edit("overlays/us/patches/deployment-web.yaml", "replicas: 5", "replicas: 4").Prove(clusters)
	if !errors.As(err, &pe) || pe.Cluster != "us" || pe.Object.String() != "apps/Deployment shop/web" || pe.Path != ".spec.replicas" ||
		err.Error() != "cluster us: apps/Deployment shop/web: overlays/us does not render it as the cluster holds it (first difference at .spec.replicas)" {
		t.Errorf("a changed patch: %v", err)
	}
	if strings.Contains(err.Error(), "4") || strings.Contains(err.Error(), "5") {
		t.Errorf("the error quotes a value: %v", err)
	}
	err = edit("overlays/eu/kustomization.yaml", "  - configmap-eu-only.yaml\n", "").Prove(clusters)
	if !errors.As(err, &pe) || pe.Cluster != "eu" || pe.Object.String() != "ConfigMap shop/eu-only" || !strings.Contains(err.Error(), "does not render it") {
		t.Errorf("a missing object: %v", err)
	}
	err = edit("overlays/us/kustomization.yaml", "  - ../../base\n", "  - ../../base\n  - ../eu/configmap-eu-only.yaml\n").Prove(clusters)
	if err == nil || !strings.Contains(err.Error(), "cluster us") {
		t.Errorf("an extra object: %v", err)
	}
	err = edit("base/kustomization.yaml", "resources:\n", "resources:\n  - nowhere.yaml\n").Prove(clusters)
	if !errors.As(err, &pe) || pe.Cluster != "eu" || !strings.Contains(err.Error(), "kustomize build overlays/eu fails") {
		t.Errorf("a broken base: %v", err)
	}
}

// TestBuildRefusesBadInput: one cluster, a name that is a path, and a
// file that holds no object are refused before anything is laid out.
func TestBuildRefusesBadInput(t *testing.T) {
	c := fleetClusters(t, "eu", "us")
	if _, err := Build(c[:1]); err == nil {
		t.Error("one cluster: no error")
	}
	bad := fleetClusters(t, "eu", "us")
	bad[1].Name = "../eu"
	if _, err := Build(bad); err == nil {
		t.Error("a cluster name that is a path: no error")
	}
	bad = fleetClusters(t, "eu", "us")
	bad[0].Resources["kustomization.yaml"] = []byte("kind: Kustomization\n")
	if _, err := Build(bad); err == nil {
		t.Error("a resource named kustomization.yaml: no error")
	}
}

func keys(m map[string][]byte) []string { return sortedKeys(m) }

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestFormPerObject: each kind of difference, between an object on
// cluster a and its copy on cluster b, gets the patch form that renders
// it exactly. kustomize merges a built-in kind's lists by their merge
// keys (containers and env by name), putting an item the base lacks
// before the base's, but replaces a custom resource's list whole, and a
// strategic-merge null deletes a field: an item added after another, a
// custom resource's list item and a null are JSON 6902.
func TestFormPerObject(t *testing.T) {
	dep := func(image, env string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: " + image + "\n        env:\n" + env
	}
	cr := func(spec string) string {
		return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\nspec:\n" + spec
	}
	cases := []struct {
		name, a, b string
		want       Form
	}{
		{"changed scalar", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {k: a, num: \"1\"}\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {k: b, num: \"1\"}\n", StrategicMerge},
		{"added key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {k: a}\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop, labels: {tier: web}}\ndata:\n  k: a\n  extra: |\n    line one\n    line two\n", StrategicMerge},
		{"container image", dep("web:1", "        - {name: A, value: a}\n"), dep("web:2", "        - {name: A, value: a}\n"), StrategicMerge},
		// kustomize's strategic merge puts a new item before the base's:
		// first it is exact, after another it is JSON.
		{"env item first", dep("web:1", "        - {name: B, value: b}\n"), dep("web:1", "        - {name: A, value: a}\n        - {name: B, value: b}\n"), StrategicMerge},
		{"env item appended", dep("web:1", "        - {name: A, value: a}\n"), dep("web:1", "        - {name: A, value: a}\n        - {name: B, value: b}\n"), JSON6902},
		{"env item inserted", dep("web:1", "        - {name: A, value: a}\n        - {name: C, value: c}\n"), dep("web:1", "        - {name: A, value: a}\n        - {name: B, value: b}\n        - {name: C, value: c}\n"), JSON6902},
		{"list of scalars", cr("  args: [a, b]\n"), cr("  args: [a, c]\n"), StrategicMerge},
		{"custom resource's list item", cr("  stages:\n  - {name: build, count: 1}\n  - {name: test, count: 2}\n"), cr("  stages:\n  - {name: build, count: 1}\n  - {name: test, count: 3}\n"), JSON6902},
		{"custom resource's item inserted", cr("  stages:\n  - {name: build}\n  - {name: ship}\n"), cr("  stages:\n  - {name: build}\n  - {name: scan}\n  - {name: ship}\n"), JSON6902},
		{"null", cr("  owner: team\n  enabled: true\n"), cr("  owner: null\n  enabled: true\n"), JSON6902},
		{"number and boolean", cr("  ratio: 0.5\n  replicas: 2\n  enabled: true\n"), cr("  ratio: 0.75\n  replicas: 3\n  enabled: false\n"), StrategicMerge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cs []Cluster
			for _, c := range []struct{ n, y string }{{"a", tc.a}, {"b", tc.b}} {
				b, err := Normalize([]byte(c.y))
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, Cluster{Name: c.n, Resources: map[string][]byte{"obj.yaml": b}})
			}
			l, err := Build(cs)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range l.Patches {
				if p.Cluster == "b" && p.Form != tc.want {
					t.Errorf("b's patch is %s, want %s:\n%s", p.Form, tc.want, l.Files[p.File])
				}
			}
			if len(l.Patches) == 0 {
				t.Errorf("no patch")
			}
		})
	}
}
