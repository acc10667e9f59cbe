package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/internal/atomicfile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// renderKustomize is the kustomize CLI of the render row's baseline: the
// one Argo CD v2.14 bundles, whose kustomize/api adopt links.
const renderKustomize = "v5.4.3"

// renderRow is row 7: gitindex.Load of a directory of RenderFiles files
// holding RenderApps apps (a base and one overlay each) among plain
// manifests, which indexes every file and renders every overlay (`bench
// -render DIR`), against the kustomize CLI's `kustomize build OVERLAY` once
// per overlay, one after another. Both must give the same number of
// objects.
func (b *bench) renderRow(ctx context.Context) error {
	c := b.c
	if c.RenderApps == 0 {
		return nil
	}
	kdir, err := testenv.KustomizeBinaries(renderKustomize)
	if err != nil {
		return err
	}
	kustomize := filepath.Join(kdir, "kustomize")
	dir, err := os.MkdirTemp("", "bench-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo")
	overlays, err := writeRenderRepo(repo, c.RenderApps, c.RenderFiles)
	if err != nil {
		return err
	}
	c.Log("render: %d overlays in %d files", len(overlays), c.RenderFiles)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ix, err := gitindex.Load(ctx, gitindex.Source{Location: repo})
	if err != nil {
		return err
	}
	// kustomize build runs once per overlay: compare with what the
	// overlays render (the bases are rendered and indexed too).
	objects, leaves := 0, 0
	for _, m := range ix.Manifests() {
		if m.Render != "" && len(ix.UsedBy(m.Render)) == 0 {
			objects++
		}
	}
	for _, r := range ix.Rendered {
		if len(ix.UsedBy(r)) == 0 {
			leaves++
		}
	}
	c.Log("  adopt: gitindex.Load")
	load, err := c.measureRepeat(fmt.Sprintf("gitindex.Load, %d files (%d objects rendered)", c.RenderFiles, objects),
		nil, self, "-render", repo)
	if err != nil {
		return err
	}
	c.Log("  kustomize build loop")
	kust := Measurement{}
	built := 0
	for i, o := range overlays {
		out := filepath.Join(dir, fmt.Sprintf("out-%d.yaml", i))
		m, err := measure("", nil, kustomize, "build", filepath.Join(repo, o), "-o", out)
		if err != nil {
			return err
		}
		kust.Seconds += m.Seconds
		kust.RSSMB = max(kust.RSSMB, m.RSSMB)
		n, err := countObjects(out)
		if err != nil {
			return err
		}
		built += n
	}
	kust.What = fmt.Sprintf("kustomize %s build, %d overlays in turn (%d objects)", renderKustomize, len(overlays), built)
	if built != objects || leaves != len(overlays) {
		return fmt.Errorf("render row: gitindex rendered %d overlays, %d objects; kustomize built %d overlays, %d objects", leaves, objects, len(overlays), built)
	}
	b.res.Rows = append(b.res.Rows, Row{Name: fmt.Sprintf("7. render, %d overlays in a %d-file repo", len(overlays), c.RenderFiles),
		Measured: []Measurement{load, kust},
		Ratios:   []Ratio{ratio("gitindex.Load / kustomize build loop (time)", load.Seconds/kust.Seconds, "<= 0.5", load.Seconds <= 0.5*kust.Seconds)}})
	return nil
}

// renderDir is what `bench -render DIR` measures: gitindex.Load of the
// directory, which must render every kustomization.
func renderDir(dir string) error {
	ix, err := gitindex.Load(context.Background(), gitindex.Source{Location: dir})
	if err != nil {
		return err
	}
	if len(ix.Unrendered) > 0 {
		return fmt.Errorf("%d kustomizations not rendered, the first %s: %s", len(ix.Unrendered), ix.Unrendered[0].Path, ix.Unrendered[0].Reason)
	}
	return nil
}

// writeRenderRepo writes apps apps, each a base (Deployment, Service,
// ConfigMap) and an overlay (namespace, namePrefix, a patch, a
// configMapGenerator), and plain ConfigMaps in other directories up to
// files files. It returns the overlays' directories.
func writeRenderRepo(root string, apps, files int) ([]string, error) {
	write := func(p, content string) error {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return atomicfile.WriteFile(p, []byte(content), 0o644)
	}
	var overlays []string
	n := 0
	for i := 0; i < apps; i++ {
		app := fmt.Sprintf("app-%03d", i)
		d := "apps/" + app
		for p, content := range map[string]string{
			d + "/base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n- service.yaml\n- configmap.yaml\n",
			d + "/base/deployment.yaml": fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %[1]s\n  labels: {app: %[1]s}\nspec:\n  replicas: 1\n"+
				"  selector:\n    matchLabels: {app: %[1]s}\n  template:\n    metadata:\n      labels: {app: %[1]s}\n    spec:\n      containers:\n"+
				"      - name: %[1]s\n        image: registry.invalid/%[1]s:1.0.0\n        ports:\n        - containerPort: 8080\n"+
				"        envFrom:\n        - configMapRef: {name: %[1]s-cfg}\n        - configMapRef: {name: env}\n", app),
			d + "/base/service.yaml":   fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %[1]s\nspec:\n  selector: {app: %[1]s}\n  ports:\n  - port: 80\n    targetPort: 8080\n", app),
			d + "/base/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cfg\ndata:\n  mode: base\n  greeting: hello\n", app),
			d + "/overlay/kustomization.yaml": fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %[1]s-prod\nnamePrefix: prod-\n"+
				"resources:\n- ../base\npatches:\n- path: patch.yaml\nconfigMapGenerator:\n- name: env\n  literals:\n  - APP=%[1]s\n  - LOG_LEVEL=info\n", app),
			d + "/overlay/patch.yaml": fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: 3\n", app),
		} {
			if err := write(p, content); err != nil {
				return nil, err
			}
			n++
		}
		overlays = append(overlays, d+"/overlay")
	}
	for k := 0; n < files; k++ {
		p := fmt.Sprintf("plain/team-%02d/cm-%05d.yaml", k%20, k)
		if err := write(p, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\n  namespace: team-%02d\ndata:\n  k: v\n", k, k%20)); err != nil {
			return nil, err
		}
		n++
	}
	return overlays, nil
}

// countObjects counts the objects (documents with a kind) of a YAML stream.
func countObjects(file string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %v", file, err)
		}
		if doc["kind"] != nil {
			n++
		}
	}
}
