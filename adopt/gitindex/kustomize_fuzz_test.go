package gitindex

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The fixed tree the fuzzed overlay builds on.
const (
	fuzzBase    = "apps/web/base"
	fuzzOverlay = "apps/web/overlays/fuzz"
	fuzzKust    = fuzzOverlay + "/kustomization.yaml"
	fuzzPatch   = fuzzOverlay + "/mode.yaml"
)

var fuzzTree = map[string]string{
	fuzzBase + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- configmap.yaml\n- deployment.yaml\n",
	fuzzBase + "/configmap.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-cfg\ndata:\n  mode: base\n",
	fuzzBase + "/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n" +
		"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n" +
		"      containers:\n      - name: web\n        image: registry.invalid/web:1.0.0\n        envFrom:\n        - configMapRef: {name: web-cfg}\n",
}

// tripwire is the HTTP transport while the fuzzer runs: kustomize reads a
// remote file through http.DefaultTransport, and a render must never.
type tripwire struct{ hits atomic.Int64 }

func (t *tripwire) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "" { // without a host no request leaves the process
		t.hits.Add(1)
	}
	return nil, errors.New("network is off in FuzzRenderKustomization")
}

// FuzzRenderKustomization renders a fuzzed overlay (its kustomization and
// a patch file) on a fixed base. The render never panics, never reaches
// the network, never runs git (kustomize clones remote bases with the git
// program: a stand-in on PATH records any run), every manifest Lookup finds
// has a kind and a name, and the overlay is either rendered or unrendered
// with a reason: never both, never neither.
func FuzzRenderKustomization(f *testing.F) {
	for _, env := range []string{"prod", "staging"} {
		k, err := os.ReadFile("testdata/overlays/apps/web/overlays/" + env + "/kustomization.yaml")
		if err != nil {
			f.Fatal(err)
		}
		p, err := os.ReadFile("testdata/overlays/apps/web/overlays/" + env + "/mode.yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(k), string(p))
	}
	for _, k := range []string{
		"resources: [../../nowhere]\n",                                  // missing base
		"resources:\n- https://example.invalid/org/repo//base?ref=v1\n", // remote URL
		"resources: [\n", // bad YAML
		"resources: [../../base]\npatches:\n- path: nope.yaml\n", // patch of a missing file
		"resources: [../../base]\npatches:\n- path: mode.yaml\n", // patch of an empty file
		"kind: Component\nresources: [../../base]\n",
		"resources: [.]\n",
		"resources: [../../base]\npatches:\n- path: https://example.invalid/p.yaml\n",
		"resources: [../../base]\ntransformers: [github.com/org/repo]\n",
		"resources: [u@h/../../..//base]\n",
		"resources: [GitHub.com/../../..//base]\n",
		"resources: [../../base]\ngenerators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: g}\n  files: [https://example.invalid/f]\n",
	} {
		f.Add(k, "")
	}
	// kustomize v5.4.3 panics on two deletions in one patch file
	// (kubernetes-sigs/kustomize#5552).
	f.Add("resources: [../../base]\npatches:\n- path: mode.yaml\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\n$patch: delete\n---\n"+
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n$patch: delete\n")
	// A plugin config in the patch file, naming a remote patch.
	f.Add("resources: [../../base]\ntransformers: [mode.yaml]\n", "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: https://example.invalid/p.yaml\n")
	trip, was := &tripwire{}, http.DefaultTransport
	http.DefaultTransport = trip
	f.Cleanup(func() { http.DefaultTransport = was })
	bin := f.TempDir()
	ran := filepath.Join(bin, "git-ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\nexit 1\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Setenv("PATH", bin)
	f.Fuzz(func(t *testing.T, kust, patch string) {
		ix := New()
		for p, c := range fuzzTree {
			ix.Add(p, []byte(c))
		}
		ix.Add(fuzzKust, []byte(kust))
		if patch != "" {
			ix.Add(fuzzPatch, []byte(patch))
		}
		ix.Finish()
		if n := trip.hits.Swap(0); n > 0 {
			t.Fatalf("the render made %d HTTP requests", n)
		}
		if b, err := os.ReadFile(ran); err == nil {
			os.Remove(ran)
			t.Fatalf("the render ran git %s", b)
		}
		for _, m := range ix.Manifests() {
			if m.Kind == "" || m.Name == "" {
				t.Fatalf("manifest without a kind or a name: %+v", m.Key)
			}
			found := false
			for _, l := range ix.Lookup(m.Group, m.Kind, m.Namespace, m.Name) {
				found = found || l == m
			}
			if !found {
				t.Fatalf("Lookup does not find %+v", m.Key)
			}
		}
		rendered := 0
		for _, r := range ix.Rendered {
			if r == fuzzOverlay {
				rendered++
			}
		}
		unrendered := 0
		for _, u := range ix.Unrendered {
			if u.Path == fuzzKust {
				unrendered++
				if strings.TrimSpace(u.Reason) == "" {
					t.Fatalf("unrendered without a reason: %+v", u)
				}
			}
		}
		if rendered+unrendered != 1 {
			t.Fatalf("overlay rendered %d times, unrendered %d times (unrendered: %+v)", rendered, unrendered, ix.Unrendered)
		}
	})
}
