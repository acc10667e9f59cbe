// Package overlay owns the kustomize layout of one application's manifests
// that differ between the clusters of a fleet: a base of what every
// cluster's manifests share, and one overlay per cluster holding only that
// cluster's differences (a strategic-merge patch or a JSON 6902 patch per
// object, whichever renders to the object exactly), and the proof: each
// overlay built with kustomize's own library (sigs.k8s.io/kustomize/api,
// as Argo CD's repo-server runs `kustomize build`) gives that cluster's
// manifests, byte for byte after normalisation (Prove).
//
// It reads and writes no file, cluster or repository: it takes manifests
// as bytes and returns files as bytes. It never adds a value a cluster's
// manifests do not hold, and its errors name a cluster, an object and a
// field path, never a value.
package overlay

import (
	"bytes"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/objref"
)

// Cluster is one cluster's manifests of the application.
type Cluster struct {
	// Name names the cluster's overlay directory (overlays/<Name>).
	Name string
	// Resources are the manifests kustomize builds, by file name: one
	// object each (as export.Marshal writes it).
	Resources map[string][]byte
	// Others are files written beside them that are never built (a
	// Secret's placeholder, excluded from sync), by file name.
	Others map[string][]byte
}

// Form is how an overlay patches one object.
type Form string

const (
	// StrategicMerge is a partial object merged into the base's.
	StrategicMerge Form = "strategic-merge"
	// JSON6902 is a list of RFC 6902 operations with a target.
	JSON6902 Form = "json6902"
	// Whole is an object written whole into the overlay: it is not on
	// every cluster, or its apiVersion differs between them.
	Whole Form = "whole"
)

// Base and Overlays are the layout's directories, relative to its root.
const (
	Base     = "base"
	Overlays = "overlays"
	// Kustomization is the kustomization file of each directory.
	Kustomization = "kustomization.yaml"
)

// OverlayDir is cluster's overlay directory, relative to the root.
func OverlayDir(cluster string) string { return path.Join(Overlays, cluster) }

// Patch is one object of one cluster that differs from the base.
type Patch struct {
	Cluster string
	Object  objref.Ref
	// File is the patch (or, Whole, the object), relative to the root.
	File string
	Form Form
}

// Layout is the base and the overlays.
type Layout struct {
	// Files are every file of the layout by path relative to its root:
	// base/kustomization.yaml and the shared objects, and per cluster
	// overlays/<cluster>/kustomization.yaml, its patches under patches/
	// and its whole objects.
	Files map[string][]byte
	// Shared are the objects in the base, by file name.
	Shared []string
	// Patches are every object an overlay patches or adds, by cluster
	// then file.
	Patches []Patch
}

// object is one decoded manifest.
type object struct {
	file string
	ref  objref.Ref
	m    map[string]any
	// norm is its normalised bytes (Normalize).
	norm []byte
}

// Build makes the layout of clusters' manifests and proves it (Prove). An
// object on every cluster with the same apiVersion goes into the base as
// what every cluster's copy shares: the map keys whose values all clusters
// share (recursively), and of a list of named items (every item a map with
// a unique string "name") the items every cluster holds, in an order they
// all keep, each as what its copies share. Anything else that differs is
// left out of the base, and each cluster's overlay patches its object back
// to what the cluster holds.
func Build(clusters []Cluster) (*Layout, error) {
	if len(clusters) < 2 {
		return nil, fmt.Errorf("overlay: %d cluster(s): a base and overlays need at least two", len(clusters))
	}
	seen := map[string]bool{}
	objs := make([]map[string]*object, len(clusters))
	for i, c := range clusters {
		if c.Name == "" || strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == ".." || seen[c.Name] {
			return nil, fmt.Errorf("overlay: cluster name %q cannot name an overlay directory (empty, repeated, or a path)", c.Name)
		}
		seen[c.Name] = true
		objs[i] = map[string]*object{}
		for file, b := range c.Resources {
			if err := checkFile(file); err != nil {
				return nil, fmt.Errorf("overlay: cluster %s: %w", c.Name, err)
			}
			o, err := decode(file, b)
			if err != nil {
				return nil, fmt.Errorf("overlay: cluster %s: %w", c.Name, err)
			}
			objs[i][file] = o
		}
	}
	l := &Layout{Files: map[string][]byte{}}
	files := map[string]bool{}
	for _, m := range objs {
		for f := range m {
			files[f] = true
		}
	}
	base := map[string]*object{}
	for _, f := range sortedKeys(files) {
		var copies []any
		var first *object
		for _, m := range objs {
			o := m[f]
			if o == nil || (first != nil && o.ref != first.ref) {
				copies = nil
				break
			}
			if first == nil {
				first = o
			}
			copies = append(copies, any(o.m))
		}
		if copies == nil {
			continue
		}
		shared, _ := common(copies)
		bo := &object{file: f, ref: first.ref, m: shared.(map[string]any)}
		b, err := export.Marshal(bo.m)
		if err != nil {
			return nil, fmt.Errorf("overlay: %s: %w", first.ref, err)
		}
		base[f], l.Files[path.Join(Base, f)] = bo, b
		l.Shared = append(l.Shared, f)
	}
	l.Files[path.Join(Base, Kustomization)] = kustomization(l.Shared, nil)
	for i, c := range clusters {
		var resources []string
		var patches []patchEntry
		var differ []pair
		for _, f := range sortedKeys(objs[i]) {
			o := objs[i][f]
			bo := base[f]
			switch {
			case bo == nil:
				file := path.Join(OverlayDir(c.Name), f)
				l.Files[file] = c.Resources[f]
				resources = append(resources, f)
				l.Patches = append(l.Patches, Patch{Cluster: c.Name, Object: o.ref, File: file, Form: Whole})
			case !reflect.DeepEqual(bo.m, o.m):
				differ = append(differ, pair{bo, o})
			}
		}
		chosen, err := chooseAll(differ)
		if pe, ok := err.(*ProofError); ok {
			pe.Cluster = c.Name
			return nil, pe
		}
		if err != nil {
			return nil, fmt.Errorf("overlay: cluster %s: %w", c.Name, err)
		}
		for k, d := range differ {
			rel := path.Join("patches", d.o.file)
			file := path.Join(OverlayDir(c.Name), rel)
			l.Files[file] = chosen[k].data
			pe := patchEntry{Path: rel}
			if chosen[k].form == JSON6902 {
				pe.Target = target(d.o.ref)
			}
			patches = append(patches, pe)
			l.Patches = append(l.Patches, Patch{Cluster: c.Name, Object: d.o.ref, File: file, Form: chosen[k].form})
		}
		l.Files[path.Join(OverlayDir(c.Name), Kustomization)] = kustomization(append([]string{"../../" + Base}, resources...), patches)
	}
	if err := others(l, clusters); err != nil {
		return nil, err
	}
	if err := l.Prove(clusters); err != nil {
		return nil, err
	}
	return l, nil
}

// others files each cluster's other files: in the base when every
// cluster holds the same bytes, else in the cluster's overlay. None is a
// resource of a kustomization.
func others(l *Layout, clusters []Cluster) error {
	names := map[string]bool{}
	for _, c := range clusters {
		for f := range c.Others {
			if err := checkFile(f); err != nil {
				return fmt.Errorf("overlay: cluster %s: %w", c.Name, err)
			}
			if _, ok := c.Resources[f]; ok || f == Kustomization {
				return fmt.Errorf("overlay: cluster %s: %s is both built and not built", c.Name, f)
			}
			names[f] = true
		}
	}
	for _, f := range sortedKeys(names) {
		same := true
		for _, c := range clusters {
			b, ok := c.Others[f]
			same = same && ok && bytes.Equal(b, clusters[0].Others[f])
		}
		for _, c := range clusters {
			if b, ok := c.Others[f]; ok {
				if same {
					l.Files[path.Join(Base, f)] = b
					break
				}
				l.Files[path.Join(OverlayDir(c.Name), f)] = b
			}
		}
	}
	return nil
}

// checkFile refuses a file name that is not one plain file of the
// directory, or the kustomization's own.
func checkFile(f string) error {
	if f == "" || strings.ContainsAny(f, `/\`) || f == "." || f == ".." || f == Kustomization {
		return fmt.Errorf("file name %q is not a manifest's file name", f)
	}
	return nil
}

// decode reads one manifest: one object, with its identity.
func decode(file string, b []byte) (*object, error) {
	norm, m, err := normalize(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%s holds no object", file)
	}
	o := &object{file: file, m: m, norm: norm, ref: refOf(m)}
	if o.ref.Kind == "" || o.ref.Name == "" {
		return nil, fmt.Errorf("%s: an object without kind or metadata.name", file)
	}
	return o, nil
}

// refOf is an object's identity.
func refOf(m map[string]any) objref.Ref {
	s := func(v any) string { x, _ := v.(string); return x }
	md, _ := m["metadata"].(map[string]any)
	group, version, ok := strings.Cut(s(m["apiVersion"]), "/")
	if !ok {
		group, version = "", group
	}
	return objref.Ref{Group: group, Version: version, Kind: s(m["kind"]), Namespace: s(md["namespace"]), Name: s(md["name"])}
}

// Normalize is how manifests are compared: the YAML decoded as JSON
// (integers as int64), then encoded by export.Marshal, so that key order,
// quoting and block styles do not count and every value does.
func Normalize(b []byte) ([]byte, error) {
	n, _, err := normalize(b)
	return n, err
}

func normalize(b []byte) ([]byte, map[string]any, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, nil
	}
	out, err := export.Marshal(m)
	return out, m, err
}

// patchEntry is one entry of a kustomization's patches.
type patchEntry struct {
	Path   string       `yaml:"path"`
	Target *patchTarget `yaml:"target,omitempty"`
}

type patchTarget struct {
	Group     string `yaml:"group,omitempty"`
	Version   string `yaml:"version"`
	Kind      string `yaml:"kind"`
	Namespace string `yaml:"namespace,omitempty"`
	Name      string `yaml:"name"`
}

func target(r objref.Ref) *patchTarget {
	return &patchTarget{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// kustomization is a kustomization.yaml with resources and patches.
func kustomization(resources []string, patches []patchEntry) []byte {
	k := struct {
		APIVersion string       `yaml:"apiVersion"`
		Kind       string       `yaml:"kind"`
		Resources  []string     `yaml:"resources"`
		Patches    []patchEntry `yaml:"patches,omitempty"`
	}{"kustomize.config.k8s.io/v1beta1", "Kustomization", resources, patches}
	if k.Resources == nil {
		k.Resources = []string{}
	}
	return marshal(k)
}

// marshal is yaml.v3 with an indent of 2; the values are plain data.
func marshal(v any) []byte {
	var b bytes.Buffer
	e := yaml3.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(v); err != nil {
		panic(err) // strings, lists and maps of decoded JSON only
	}
	_ = e.Close()
	return b.Bytes()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// render builds dir of files with kustomize's own library, the way
// Argo CD's repo-server runs `kustomize build` (load restrictor root only,
// no plugins), and returns each resource decoded and normalised, by
// identity, and the identities in the build's order.
func render(files map[string][]byte, dir string) (map[objref.Ref]*object, []objref.Ref, error) {
	fs := filesys.MakeFsInMemory()
	for p, b := range files {
		if err := fs.WriteFile("/"+p, b); err != nil {
			return nil, nil, err
		}
	}
	k := krusty.MakeKustomizer(&krusty.Options{Reorder: krusty.ReorderOptionLegacy, LoadRestrictions: types.LoadRestrictionsRootOnly, PluginConfig: types.DisabledPluginConfig()})
	rm, err := k.Run(fs, "/"+dir)
	if err != nil {
		return nil, nil, err
	}
	out := map[objref.Ref]*object{}
	var order []objref.Ref
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, nil, err
		}
		o, err := decode("the build's output", y)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := out[o.ref]; dup {
			return nil, nil, fmt.Errorf("%s is rendered twice", o.ref)
		}
		out[o.ref] = o
		order = append(order, o.ref)
	}
	return out, order, nil
}
