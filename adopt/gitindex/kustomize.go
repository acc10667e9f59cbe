package gitindex

import (
	"bytes"
	"fmt"
	iofs "io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	yaml3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/gitops"
)

// KustomizeOptions are the kustomize build options Argo CD passes to
// `kustomize build` (argocd-cm kustomize.buildOptions). Only the load
// restrictor changes what adopt renders; any other option is reported.
type KustomizeOptions struct {
	// BuildOptions is argocd-cm's kustomize.buildOptions, as written there.
	BuildOptions string
}

// restrictions reads the load restrictor from the build options, and lists
// the options adopt does not honour.
func (o KustomizeOptions) restrictions() (types.LoadRestrictions, []string) {
	lr := types.LoadRestrictionsRootOnly
	var other []string
	f := strings.Fields(o.BuildOptions)
	for i := 0; i < len(f); i++ {
		v, isLR := strings.CutPrefix(f[i], "--load-restrictor")
		if !isLR {
			other = append(other, f[i])
			continue
		}
		v = strings.TrimPrefix(v, "=")
		if v == "" && i+1 < len(f) {
			i++
			v = f[i]
		}
		if v == types.LoadRestrictionsNone.String() {
			lr = types.LoadRestrictionsNone
		}
	}
	return lr, other
}

// kustomization is what the renderer reads of a kustomization file itself:
// the paths it builds on.
type kustomization struct {
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Bases      []string `json:"bases"`
	Components []string `json:"components"`
	// Plugin configs: each inline, or a file or directory holding them.
	Generators   []string `json:"generators"`
	Transformers []string `json:"transformers"`
	Validators   []string `json:"validators"`
}

// render builds every kustomization but the Components others name with
// kustomize's own library, the way Argo CD's repo-server runs `kustomize build <path>`.
// Every render is indexed for Lookup: a base is a place an Application
// could point as much as an overlay is (a directory is often an app of its
// own and another's base), and is kept for the sources of existing
// Applications. The files each successful build read (its resources,
// patches, components, generators' files and envs, CRDs, and its bases'
// files) are noted in ix.read: they are the kustomization's inputs, not
// plain manifests. What cannot be rendered is recorded in Unrendered with
// the kustomization file and the error.
func (ix *Index) render(opts KustomizeOptions) {
	fs := ix.fs
	if len(ix.kustFile) == 0 || fs == nil {
		return
	}
	lr, other := opts.restrictions()
	if len(other) > 0 {
		ix.Notes = append(ix.Notes, fmt.Sprintf("kustomize build options %q are not applied by adopt's render (only --load-restrictor is)", strings.Join(other, " ")))
	}
	// Read every kustomization: which directories it builds on, and which
	// of its paths the repo does not hold (remote bases are never fetched).
	deps := map[string][]string{}
	missing := map[string]string{}
	component := map[string]bool{}
	for dir, file := range ix.kustFile {
		b, err := fs.ReadFile("/" + file)
		var k kustomization
		if err == nil {
			err = yaml.Unmarshal(b, &k)
		}
		if err != nil {
			missing[dir] = fmt.Sprintf("%s: %s", file, gitops.OneLine(err.Error()))
			continue
		}
		component[dir] = k.Kind == "Component"
		remote := func(r string) {
			missing[dir] = fmt.Sprintf("%s: %q is a remote resource; adopt renders only what the repo holds", file, r)
		}
		if r := remoteIn(b); r != "" {
			remote(r)
		}
		for _, r := range append(append(append([]string(nil), k.Resources...), k.Bases...), k.Components...) {
			p := path.Join(dir, r)
			switch {
			case looksRemote(r):
				remote(r)
			case !fs.Exists("/" + p):
				missing[dir] = fmt.Sprintf("%s: %q does not exist in the repo", file, r)
			case fs.IsDir("/"+p) && p != dir:
				deps[dir] = append(deps[dir], p)
			}
		}
		// kustomize reads a plugin config that is not inline as it reads
		// a resource, and the config's own paths with the same loader.
		for _, g := range append(append(append([]string(nil), k.Generators...), k.Transformers...), k.Validators...) {
			if inline(g) {
				if r := remoteIn([]byte(g)); r != "" {
					remote(r)
				}
				continue
			}
			p := path.Join(dir, g)
			switch {
			case looksRemote(g):
				remote(g)
			case !fs.Exists("/" + p):
				missing[dir] = fmt.Sprintf("%s: %q does not exist in the repo", file, g)
			default:
				if fs.IsDir("/"+p) && p != dir {
					deps[dir] = append(deps[dir], p)
				}
				_ = fs.Walk("/"+p, func(f string, info iofs.FileInfo, err error) error {
					if err != nil || info.IsDir() {
						return nil
					}
					if c, err := fs.ReadFile(f); err == nil {
						if r := remoteIn(c); r != "" {
							remote(r)
						}
					}
					return nil
				})
			}
		}
	}
	for dir, ds := range deps {
		for _, d := range ds {
			if !slices.Contains(ix.usedBy[d], dir) {
				ix.usedBy[d] = append(ix.usedBy[d], dir)
			}
		}
	}
	for _, by := range ix.usedBy {
		sort.Strings(by)
	}
	var dirs []string
	for dir := range ix.kustFile {
		// A Component is built as part of the kustomizations naming it;
		// one no kustomization names is built as kustomize build would.
		if !component[dir] || len(ix.usedBy[dir]) == 0 {
			dirs = append(dirs, dir)
		}
	}
	sort.Strings(dirs)
	k := krusty.MakeKustomizer(&krusty.Options{Reorder: krusty.ReorderOptionLegacy, LoadRestrictions: lr, PluginConfig: types.DisabledPluginConfig()})
	for _, dir := range dirs {
		file := ix.kustFile[dir]
		why := firstMissing(dir, deps, missing)
		var ms []*Manifest
		log := readLog{FileSystem: fs, read: map[string]bool{}}
		if why == "" {
			var err error
			if ms, err = kustomizeBuild(k, log, dir); err != nil {
				why = "kustomize build " + dir + ": " + gitops.OneLine(err.Error())
			}
		}
		if why != "" {
			ix.Unrendered = append(ix.Unrendered, Skipped{Path: file, Reason: why})
			ix.unrenderable[dir] = why
			continue
		}
		for _, m := range ms {
			m.Path, m.Render = file, dir
		}
		ix.renders[dir] = ms
		ix.manifests = append(ix.manifests, ms...)
		ix.Rendered = append(ix.Rendered, dir)
		for f := range log.read {
			ix.read[f] = true
		}
	}
}

// readLog is the file system a build reads through: it notes every file
// kustomize loads (kustomize reads each one with ReadFile), relative to the
// repo root.
type readLog struct {
	filesys.FileSystem
	read map[string]bool
}

func (l readLog) ReadFile(p string) ([]byte, error) {
	b, err := l.FileSystem.ReadFile(p)
	if err == nil {
		l.read[strings.TrimPrefix(path.Clean(p), "/")] = true
	}
	return b, err
}

// kustomizeBuild runs kustomize on one directory. kustomize panics on some inputs;
// that is an error of the input, not of adopt.
func kustomizeBuild(k *krusty.Kustomizer, fs filesys.FileSystem, dir string) (ms []*Manifest, err error) {
	defer func() {
		if r := recover(); r != nil {
			ms, err = nil, fmt.Errorf("kustomize failed: %v", r)
		}
	}()
	rm, err := k.Run(fs, "/"+dir)
	if err != nil {
		return nil, err
	}
	for _, r := range rm.Resources() {
		obj, err := r.Map()
		if err != nil {
			return nil, err
		}
		if m := toManifest("", 0, normalize(obj).(map[string]any)); m != nil {
			m.Generated = generatedStem(m)
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// firstMissing says why dir, or a kustomization it builds on, cannot be
// rendered from the repo alone; "" when it can.
func firstMissing(dir string, deps map[string][]string, missing map[string]string) string {
	seen := map[string]bool{}
	var walk func(string) string
	walk = func(d string) string {
		if seen[d] {
			return ""
		}
		seen[d] = true
		if why := missing[d]; why != "" {
			return why
		}
		for _, x := range deps[d] {
			if why := walk(x); why != "" {
				return why
			}
		}
		return ""
	}
	return walk(dir)
}

// looksRemote says whether a kustomization path names a remote resource
// (a Git repository or an HTTP URL) rather than a path in the repo. It
// holds every path kustomize would clone (any user@host, github.com in any
// case, a git:: prefix) or fetch (an http or https URL).
func looksRemote(p string) bool {
	if u, err := url.Parse(p); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return true
	}
	l := strings.TrimPrefix(strings.ToLower(p), "git::")
	return strings.Contains(l, "://") || userAt.MatchString(l) || strings.Contains(l, "?ref=") ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:") || strings.HasPrefix(l, "gitlab.com/") || strings.HasPrefix(l, "bitbucket.org/")
}

// userAt is the user@ kustomize takes for an SCP-style Git URL.
var userAt = regexp.MustCompile(`^[a-z][a-z0-9-]*@`)

// pathKeys are the keys of a kustomization, and of the builtin plugins'
// configs, whose values kustomize loads as paths (or URLs).
var pathKeys = map[string]bool{"resources": true, "bases": true, "components": true, "crds": true, "configurations": true,
	"generators": true, "transformers": true, "validators": true, "patchesStrategicMerge": true, "path": true,
	"files": true, "envs": true, "env": true, "valuesFile": true, "additionalValuesFiles": true, "targetFilePath": true}

// remoteIn returns the first path under pathKeys in data's YAML documents
// that looksRemote, "" when none. Multi-line values are inline content,
// never loaded as paths.
func remoteIn(data []byte) (r string) {
	defer func() {
		if recover() != nil {
			r = ""
		}
	}()
	var walk func(v any, isPath bool) string
	walk = func(v any, isPath bool) string {
		switch t := v.(type) {
		case string:
			if isPath && !strings.Contains(t, "\n") && looksRemote(t) {
				return t
			}
		case []any:
			for _, x := range t {
				if r := walk(x, isPath); r != "" {
					return r
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if r := walk(t[k], pathKeys[k]); r != "" {
					return r
				}
			}
		}
		return ""
	}
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	for {
		var doc any
		if dec.Decode(&doc) != nil {
			return ""
		}
		if r := walk(normalize(doc), false); r != "" {
			return r
		}
	}
}

// inline says whether a generators, transformers or validators entry is a
// plugin config itself rather than a path.
func inline(s string) bool {
	var m map[string]any
	return yaml.Unmarshal([]byte(s), &m) == nil && m["kind"] != nil
}

// hashSuffix is the suffix kustomize's generators add to a name: a dash
// and ten characters of its hash alphabet.
var hashSuffix = regexp.MustCompile(`-[24-9bcdfghkmt]{10}$`)

// generatedStem is a generated ConfigMap's or Secret's name without the
// hash suffix, "" for any other object. A live object made from older
// generator input has another suffix; it is found by its stem.
func generatedStem(m *Manifest) string {
	if m.Group != "" || (m.Kind != "ConfigMap" && m.Kind != "Secret") || !hashSuffix.MatchString(m.Name) {
		return ""
	}
	return m.Name[:len(m.Name)-11]
}
