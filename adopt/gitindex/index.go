// Package gitindex reads the GitOps repo and indexes the Kubernetes
// manifests in it: every YAML or JSON document with an apiVersion, kind and
// name, keyed by group/kind/namespace/name, with the file and line it starts
// on. It renders kustomizations the way Argo CD's repo-server does (with
// kustomize's own library), and it compares a live object with its
// manifest (drift),
// looking only at the fields the manifest sets. It reads Git; it never
// writes to it and never talks to the cluster.
package gitindex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/adopt-dev/adopt/gitops"
)

// MaxFileBytes is the largest file indexed; larger files are reported as
// skipped, so one huge file cannot exhaust memory.
const MaxFileBytes = 8 << 20

// Key identifies a manifest. Namespace is "" when the manifest sets none.
type Key struct {
	Group     string `json:"group" yaml:"group"`
	Kind      string `json:"kind" yaml:"kind"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name      string `json:"name" yaml:"name"`
}

// Manifest is one Kubernetes document in the repo.
type Manifest struct {
	Key
	// Path is the file, slash-separated and relative to the repo root;
	// Line is where the document starts (1-based).
	Path string
	Line int
	// Object is the decoded document.
	Object map[string]any
	// Render is the kustomization directory whose build holds the object
	// ("" for an object read from a plain file); Path is then that
	// kustomization's file and Line is 0.
	Render string
	// Generated is a generated ConfigMap's or Secret's name without its
	// hash suffix.
	Generated string
}

// Dir is where an Application would point to get the manifest: the
// kustomization that renders it, or the file's directory ("." for the
// root).
func (m *Manifest) Dir() string {
	if m.Render != "" {
		return m.Render
	}
	return path.Dir(m.Path)
}

// Skipped is a file (or one document in it) that was not indexed.
type Skipped struct {
	Path   string `json:"path" yaml:"path"`
	Line   int    `json:"line,omitempty" yaml:"line,omitempty"`
	Reason string `json:"reason" yaml:"reason"`
}

// Index is every manifest found in one revision of the repo.
type Index struct {
	// Source is the repo URL (without credentials) or local path.
	Source string
	// Remote is the remote a checkout (or bare repository) is fetched
	// from, as gitops.UpstreamRemote chooses it; zero for a URL, a plain
	// directory or a repository without one. RemoteErr says why a
	// remote's url could not be read.
	Remote    gitops.Remote
	RemoteErr string
	// Revision is the commit the index was built from ("" for a plain
	// directory).
	Revision string
	// Kustomizations are directories holding a kustomization file.
	Kustomizations []string
	// Rendered are the kustomizations rendered, each a place an
	// Application could point: an overlay, a base or both.
	Rendered []string
	// Skipped are files or documents that could not be read as manifests.
	Skipped []Skipped
	// Unrendered are the kustomizations that could not be rendered: the
	// kustomization file and why.
	Unrendered []Skipped
	// Notes say what the render did not apply.
	Notes []string
	// Kustomize are the build options kustomizations are rendered with;
	// set them before Finish.
	Kustomize KustomizeOptions

	manifests []*Manifest
	// docs are every document of a plain file, kustomization and chart
	// directories' too (a directory source reads them).
	docs []*Manifest
	// renders are each kustomization's render, by directory.
	renders map[string][]*Manifest
	// usedBy are the kustomizations that build on a kustomization (name
	// it in resources, bases or components), by directory.
	usedBy map[string][]string
	// read are the files some kustomization's build read: its inputs,
	// which are not plain manifests.
	read map[string]bool
	// unrenderable says why a kustomization could not be rendered.
	unrenderable map[string]string
	// jsonnet are the .jsonnet files, which a directory source evaluates.
	jsonnet []string
	// charts are directories holding a Chart.yaml.
	charts   map[string]bool
	byKey    map[Key][]*Manifest
	byStem   map[Key][]*Manifest
	kust     map[string]bool
	kustFile map[string]string
	// fs holds the files kustomize reads, until Finish.
	fs filesys.FileSystem
	// revs reads the repo at other revisions (nil for a plain directory).
	revs *revisions
	// overrides are the repo-server's parameter override files
	// (.argocd-source.yaml, .argocd-source-<app>.yaml), by path.
	overrides map[string][]byte
	// paths are every file of the revision, indexed or not, sorted
	// (Dirs, Files).
	paths []string
}

// New returns an empty index.
func New() *Index {
	return &Index{byKey: map[Key][]*Manifest{}, kust: map[string]bool{}, kustFile: map[string]string{}, renders: map[string][]*Manifest{}, unrenderable: map[string]string{},
		usedBy: map[string][]string{}, read: map[string]bool{},
		charts: map[string]bool{}, overrides: map[string][]byte{}, fs: filesys.MakeFsInMemory()}
}

// Manifests returns every manifest Lookup finds, by path and line.
func (ix *Index) Manifests() []*Manifest { return ix.manifests }

// IsManifestFile says whether a file name is read as YAML or JSON: as
// Argo CD's directory source decides, the extension is lower-case.
func IsManifestFile(p string) bool {
	switch path.Ext(p) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func isKustomizationFile(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// Add indexes one file. It never fails: what it cannot read it records in
// Skipped with the reason.
func (ix *Index) Add(p string, data []byte) {
	if len(data) > MaxFileBytes {
		ix.Skipped = append(ix.Skipped, Skipped{Path: p, Reason: fmt.Sprintf("file is %d bytes, over the %d-byte limit", len(data), MaxFileBytes)})
		return
	}
	ix.AddFile(p, data)
	if isOverrideFile(p) {
		ix.overrides[p] = data
		return
	}
	if path.Base(p) == "Chart.yaml" {
		ix.charts[path.Dir(p)] = true
	}
	if strings.HasSuffix(p, ".jsonnet") {
		ix.jsonnet = append(ix.jsonnet, p)
	}
	if isKustomizationFile(p) {
		ix.addKustomization(path.Dir(p))
		if ix.kustFile[path.Dir(p)] == "" {
			ix.kustFile[path.Dir(p)] = p
		}
		return
	}
	if !IsManifestFile(p) {
		return
	}
	if err := ix.addDocs(p, data); err != nil {
		ix.Skipped = append(ix.Skipped, Skipped{Path: p, Line: lineOf(err), Reason: reason(data, err)})
	}
}

// AddFile keeps a file that is not indexed itself but that a
// kustomization may read (a patch, a generator's input), until Finish.
func (ix *Index) AddFile(p string, data []byte) {
	if ix.fs != nil {
		_ = ix.fs.WriteFile("/"+p, data)
	}
}

func (ix *Index) addKustomization(dir string) {
	if !ix.kust[dir] {
		ix.kust[dir] = true
		ix.Kustomizations = append(ix.Kustomizations, dir)
		sort.Strings(ix.Kustomizations)
	}
}

// addDocs decodes every document of a file. Documents before a syntax error
// are kept; the error is returned.
func (ix *Index) addDocs(p string, data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var found []*Manifest
	for {
		var doc yaml.Node
		derr := dec.Decode(&doc)
		if errors.Is(derr, io.EOF) {
			break
		}
		if derr != nil {
			ix.commit(found)
			return fmt.Errorf("not valid YAML/JSON: %v", derr)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			continue
		}
		var obj map[string]any
		if derr := asArgoCDReads(root); derr != nil {
			ix.Skipped = append(ix.Skipped, Skipped{Path: p, Line: root.Line, Reason: derr.Error()})
			continue
		}
		if derr := root.Decode(&obj); derr != nil {
			ix.Skipped = append(ix.Skipped, Skipped{Path: p, Line: root.Line, Reason: reason(data, derr)})
			continue
		}
		obj = normalize(obj).(map[string]any)
		if isKustomization(obj) {
			ix.addKustomization(path.Dir(p))
			continue
		}
		if k, _ := obj["kind"].(string); strings.HasSuffix(k, "List") && obj["items"] != nil {
			found = append(found, ix.listItems(p, root, obj)...)
			continue
		}
		if m := toManifest(p, root.Line, obj); m != nil {
			found = append(found, m)
		}
	}
	ix.commit(found)
	return nil
}

func (ix *Index) listItems(p string, root *yaml.Node, obj map[string]any) []*Manifest {
	items, _ := obj["items"].([]any)
	var lines []int
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "items" && root.Content[i+1].Kind == yaml.SequenceNode {
			for _, it := range root.Content[i+1].Content {
				lines = append(lines, it.Line)
			}
		}
	}
	var out []*Manifest
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		line := root.Line
		if i < len(lines) {
			line = lines[i]
		}
		if mf := toManifest(p, line, m); mf != nil {
			out = append(out, mf)
		}
	}
	return out
}

func (ix *Index) commit(ms []*Manifest) {
	ix.manifests = append(ix.manifests, ms...)
}

func isKustomization(obj map[string]any) bool {
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return strings.HasPrefix(av, "kustomize.config.k8s.io/") && (k == "Kustomization" || k == "Component")
}

// toManifest returns nil for a document that is not a Kubernetes object.
func toManifest(p string, line int, obj map[string]any) *Manifest {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if av == "" || kind == "" || name == "" {
		return nil
	}
	ns, _ := meta["namespace"].(string)
	group := ""
	if g, _, ok := strings.Cut(av, "/"); ok {
		group = g
	}
	return &Manifest{Key: Key{Group: group, Kind: kind, Namespace: ns, Name: name}, Path: p, Line: line, Object: obj}
}

// normalize turns YAML's map[any]any into map[string]any all the way down,
// so documents encode as JSON.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	}
	return v
}

// chartOf returns the chart directory dir is in (dir or a parent), "" when
// none.
func (ix *Index) chartOf(dir string) string {
	for d := dir; ; d = path.Dir(d) {
		if ix.charts[d] {
			return d
		}
		if d == "." || d == "/" || d == "" {
			return ""
		}
	}
}

// Finish renders the kustomizations and sorts the index; call it after the
// last Add.
func (ix *Index) Finish() {
	ix.render(ix.Kustomize)
	// A kustomization directory's own files, and any file a kustomization
	// reads, are read only through kustomize, and a chart's only through
	// Helm: they are not manifests an Application could point at (an
	// existing Application's directory source still reads them: docs).
	var keep []*Manifest
	for _, m := range ix.manifests {
		if m.Render == "" {
			ix.docs = append(ix.docs, m)
			if ix.kust[m.Dir()] || ix.chartOf(m.Dir()) != "" || ix.read[m.Path] {
				continue
			}
		}
		keep = append(keep, m)
	}
	ix.manifests = keep
	// The files stay: charts and their values files are read later, and
	// so are an ApplicationSet Git file generator's (Files).
	ix.byKey, ix.byStem = map[Key][]*Manifest{}, map[Key][]*Manifest{}
	for _, m := range ix.manifests {
		ix.byKey[m.Key] = append(ix.byKey[m.Key], m)
		if m.Generated != "" {
			k := m.Key
			k.Name = m.Generated
			ix.byStem[k] = append(ix.byStem[k], m)
		}
	}
	sort.SliceStable(ix.manifests, func(i, j int) bool {
		a, b := ix.manifests[i], ix.manifests[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Line < b.Line
	})
	for _, ms := range ix.byKey {
		sort.SliceStable(ms, func(i, j int) bool {
			if ms[i].Path != ms[j].Path {
				return ms[i].Path < ms[j].Path
			}
			return ms[i].Line < ms[j].Line
		})
	}
	sort.SliceStable(ix.Skipped, func(i, j int) bool {
		if ix.Skipped[i].Path != ix.Skipped[j].Path {
			return ix.Skipped[i].Path < ix.Skipped[j].Path
		}
		return ix.Skipped[i].Line < ix.Skipped[j].Line
	})
}

// Lookup finds the manifests that define a live object. For a namespaced
// object a manifest without a namespace also matches: Argo CD would put it
// in the Application's destination namespace. More than one result means
// the object is defined more than once (ambiguous).
//
// A generated ConfigMap or Secret whose live name carries another hash
// suffix than the render's (made from older generator input) is found by
// its name without the suffix.
func (ix *Index) Lookup(group, kind, namespace, name string) []*Manifest {
	out := ix.lookup(ix.byKey, Key{Group: group, Kind: kind, Namespace: namespace, Name: name})
	if len(out) == 0 && group == "" && (kind == "ConfigMap" || kind == "Secret") && hashSuffix.MatchString(name) {
		out = ix.lookup(ix.byStem, Key{Kind: kind, Namespace: namespace, Name: name[:len(name)-11]})
	}
	return out
}

func (ix *Index) lookup(by map[Key][]*Manifest, k Key) []*Manifest {
	out := append([]*Manifest(nil), by[k]...)
	if k.Namespace != "" {
		k.Namespace = ""
		out = append(out, by[k]...)
	}
	return out
}

// InKustomization returns dir when it holds a kustomization, else "".
func (ix *Index) InKustomization(dir string) string {
	if ix.kust[dir] {
		return dir
	}
	return ""
}

// KustomizationFile is the path of the kustomization file in dir
// (kustomization.yaml, .yml or Kustomization), "" when it holds none.
func (ix *Index) KustomizationFile(dir string) string {
	if !ix.kust[dir] {
		return ""
	}
	return ix.kustFile[dir]
}

// UsedBy lists the kustomizations that build on the kustomization at dir
// (name it in resources, bases or components); none for a leaf.
func (ix *Index) UsedBy(dir string) []string { return ix.usedBy[dir] }

// At returns the manifest a plan's Git match names for a live object: the
// document at file:line, or (line 0) the object in the render of the
// kustomization whose file is file. It finds what Lookup finds, and the
// documents only an existing Application's directory source reads (a
// kustomization's input, a file in a kustomization's directory); nil when
// the repo holds none.
func (ix *Index) At(group, kind, namespace, name, file string, line int) *Manifest {
	for _, m := range ix.Lookup(group, kind, namespace, name) {
		if m.Path == file && m.Line == line {
			return m
		}
	}
	for _, m := range ix.docs {
		if m.Path == file && m.Line == line && m.Group == group && m.Kind == kind && m.Name == name && (m.Namespace == namespace || m.Namespace == "") {
			return m
		}
	}
	return nil
}

// FilesIn lists the manifest files directly in dir that Argo CD's directory
// source would read, with the manifests each holds (a kustomization's
// input among them).
func (ix *Index) FilesIn(dir string) map[string][]*Manifest {
	out := map[string][]*Manifest{}
	for _, m := range ix.docs {
		if m.Dir() == dir {
			out[m.Path] = append(out[m.Path], m)
		}
	}
	return out
}

// reason explains a parse error in one line, saying so when the file looks
// like a template.
func reason(data []byte, err error) string {
	r := gitops.OneLine(err.Error())
	if bytes.Contains(data, []byte("{{")) {
		r = "looks like a template (has {{ }}), not rendered: " + r
	}
	return r
}

func lineOf(err error) int {
	var n int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "not valid YAML/JSON: "), "yaml: line %d:", &n); e == nil {
		return n
	}
	return 0
}
