package gitindex

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
)

const multi = `# leading comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: hook
  namespace: litellm-test
data:
  script: |
    ---
    not a separator inside a block scalar
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
---
just: some config
---
`

func build(files map[string]string) *Index {
	ix := New()
	for p, c := range files {
		ix.Add(p, []byte(c))
	}
	ix.Finish()
	return ix
}

func TestIndex(t *testing.T) {
	ix := build(map[string]string{
		"k8s/system/multi.yaml":   multi,
		"k8s/system/cm.json":      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"js","namespace":"a"}}`,
		"k8s/list.yaml":           "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s1, namespace: a}\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s2, namespace: a}\n",
		"kust/kustomization.yaml": "resources: [deploy.yaml]\n",
		"kust/deploy.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: k}\n",
		"dup/a.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice, namespace: a}\n",
		"dup/b.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twice}\n",
		"bad/keys.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"chart/templates/d.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  labels: {{ include \"x\" . }}\n",
		"README.md":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-yaml-file}\n",
	})
	m := ix.Lookup("", "ConfigMap", "litellm-test", "hook")
	if len(m) != 1 || m[0].Path != "k8s/system/multi.yaml" || m[0].Line != 2 {
		t.Fatalf("hook: %+v", m)
	}
	if d := ix.Lookup("apps", "Deployment", "any-ns", "web"); len(d) != 1 || d[0].Line != 12 {
		t.Fatalf("namespace defaulting / line: %+v", d)
	}
	if l := ix.Lookup("", "Service", "a", "s2"); len(l) != 1 || l[0].Line != 7 {
		t.Fatalf("List item: %+v", l)
	}
	if j := ix.Lookup("", "ConfigMap", "a", "js"); len(j) != 1 || j[0].Line != 1 {
		t.Fatalf("json: %+v", j)
	}
	if a := ix.Lookup("", "ConfigMap", "a", "twice"); len(a) != 2 {
		t.Fatalf("ambiguous: %+v", a)
	}
	if a := ix.Lookup("", "ConfigMap", "other", "twice"); len(a) != 1 {
		t.Fatalf("defaulted only: %+v", a)
	}
	if len(ix.Lookup("", "ConfigMap", "", "not-yaml-file")) != 0 {
		t.Fatal("indexed a .md file")
	}
	if strings.Join(ix.Kustomizations, ",") != "kust" || ix.InKustomization("kust") != "kust" || ix.InKustomization("k8s") != "" {
		t.Fatalf("kustomizations %v", ix.Kustomizations)
	}
	reasons := map[string]string{}
	for _, s := range ix.Skipped {
		reasons[s.Path] = s.Reason
	}
	if !strings.Contains(reasons["bad/keys.yaml"], "already defined") {
		t.Fatalf("duplicate keys: %q", reasons["bad/keys.yaml"])
	}
	if !strings.Contains(reasons["chart/templates/d.yaml"], "template") {
		t.Fatalf("template: %q", reasons["chart/templates/d.yaml"])
	}
	if n := len(ix.FilesIn("k8s/system")); n != 2 {
		t.Fatalf("files in k8s/system: %d", n)
	}
}

func TestCompare(t *testing.T) {
	manifest := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hook", "labels": map[string]any{"app": "hook"}},
		"data":     map[string]any{"hook.py": "print(1)\n" + strings.Repeat("x", 8126), "same": "s"},
	}
	live := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "hook", "uid": "u", "resourceVersion": "9", "labels": map[string]any{"app": "hook"},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		"data": map[string]any{"hook.py": "print(1)\n", "same": "s", "extra": "server-side"},
	}
	d := Compare(manifest, live)
	if strings.Join(d.Fields, ",") != "data.hook.py" || d.BytesBehind != 8126 {
		t.Fatalf("drift %+v", d)
	}
	dep := map[string]any{"spec": map[string]any{"replicas": 2, "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "a", "image": "img:1"}}}}}}
	liveDep := map[string]any{"spec": map[string]any{"replicas": int64(2), "revisionHistoryLimit": int64(10), "template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "a", "image": "img:1", "imagePullPolicy": "IfNotPresent"}}}}}}
	if d := Compare(dep, liveDep); !d.Identical() {
		t.Fatalf("server defaults counted as drift: %+v", d)
	}
	liveDep["spec"].(map[string]any)["replicas"] = int64(3)
	if d := Compare(dep, liveDep); strings.Join(d.Fields, ",") != "spec.replicas" || d.BytesBehind != 1 {
		t.Fatalf("replicas: %+v", d)
	}
	// A Secret's stringData is compared as the data live holds, and named
	// as that field (objdiff's one rule; it was stringData.password).
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "stringData": map[string]any{"password": "new-value"}}
	liveSecret := map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"password": "b2xkLXZhbHVl"}} // old-value
	if d := Compare(secret, liveSecret); strings.Join(d.Fields, ",") != "data.password" {
		t.Fatalf("secret: %+v", d)
	}
	liveSecret["data"] = map[string]any{"password": "bmV3LXZhbHVl"} // new-value
	if d := Compare(secret, liveSecret); !d.Identical() {
		t.Fatalf("secret equal to its stringData: %+v", d)
	}
}

// TestCompareNamedLists: containers and env are matched by name, as the
// preview matches them. A changed image is named by its container; an env
// var only live holds (another writer's) is not drift, like any field only
// live holds, where index-by-index matching counted the whole list.
func TestCompareNamedLists(t *testing.T) {
	container := func(image string, env ...string) map[string]any {
		var vars []any
		for _, e := range env {
			vars = append(vars, map[string]any{"name": e, "value": "1"})
		}
		return map[string]any{"name": "main", "image": image, "env": vars}
	}
	pod := func(cs ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": cs}}}}
	}
	sidecar := map[string]any{"name": "proxy", "image": "proxy:1"}
	for _, c := range []struct {
		name           string
		manifest, live map[string]any
		want           string
	}{
		{"image", pod(container("img:2", "A")), pod(container("img:1", "A")), "spec.template.spec.containers[name=main].image"},
		{"reordered", pod(sidecar, container("img:1", "A")), pod(container("img:1", "A"), sidecar), ""},
		{"live-only container", pod(container("img:1", "A")), pod(sidecar, container("img:1", "A")), ""},
		{"live-only env var", pod(container("img:1", "A")), pod(container("img:1", "A", "B")), ""},
		{"env var only in Git", pod(container("img:1", "A", "B")), pod(container("img:1", "A")), "spec.template.spec.containers[name=main].env[name=B]"},
	} {
		if d := Compare(c.manifest, c.live); strings.Join(d.Fields, ",") != c.want {
			t.Errorf("%s: drift %+v, want %q", c.name, d, c.want)
		}
	}
}

func TestSpan(t *testing.T) {
	for _, c := range []struct {
		a, b string
		n    int
	}{{"abc", "abc", 0}, {"abcdef", "abc", 3}, {"abc", "abcdef", 3}, {"aXc", "aYc", 1}, {"", "abc", 3}, {"aaa", "aa", 1}} {
		if got := span(c.a, c.b); got != c.n {
			t.Errorf("span(%q,%q)=%d want %d", c.a, c.b, got, c.n)
		}
	}
}

// FuzzIndex feeds arbitrary bytes to the indexer as YAML and as JSON: it
// must never panic, and every manifest it keeps must have a kind, a name
// and a line inside the file.
func FuzzIndex(f *testing.F) {
	f.Add([]byte(multi))
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\nc: [*b, *b]\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: p}}]\n"))
	f.Add([]byte{0xff, 0xfe, 'k', 'i', 'n', 'd'})
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		for _, name := range []string{"f.yaml", "f.json"} {
			ix := New()
			ix.Add(name, data)
			ix.Finish()
			for _, m := range ix.Manifests() {
				if m.Kind == "" || m.Name == "" || m.Line < 1 || m.Line > lines {
					t.Fatalf("bad manifest %+v (file has %d lines)", m.Key, lines)
				}
				if _, err := budget.AppliedConfig(m.Object, "ns"); err != nil {
					t.Fatalf("manifest does not encode as JSON: %v", err)
				}
				Compare(m.Object, m.Object)
			}
		}
	})
}
