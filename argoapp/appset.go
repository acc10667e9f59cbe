package argoapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"
)

// ApplicationSetGVR is Argo CD's ApplicationSet resource.
var ApplicationSetGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// AppSet is an ApplicationSet read from the cluster, or defined in Git
// and not in the cluster yet (InGit).
type AppSet struct {
	Namespace, Name string
	Spec            v1alpha1.ApplicationSetSpec
	// Err says why its spec could not be read.
	Err string
	// InGit is where in Git it is defined ("file:line", or the render of
	// a root) when it is not in the cluster yet; "" for one read from the
	// cluster.
	InGit string
}

// AppSetOf reads an ApplicationSet manifest (decoded YAML) defined in Git
// at where; one without a namespace is in argoNS, where a root
// Application's sync or kubectl apply in Argo CD's namespace puts it.
func AppSetOf(obj map[string]any, where, argoNS string) AppSet {
	u := &unstructured.Unstructured{Object: obj}
	s := AppSet{Namespace: u.GetNamespace(), Name: u.GetName(), InGit: where}
	if s.Namespace == "" {
		s.Namespace = argoNS
	}
	b, err := json.Marshal(obj["spec"])
	if err == nil {
		err = json.Unmarshal(b, &s.Spec)
	}
	if err != nil {
		s.Err = err.Error()
	}
	return s
}

// Key is the ApplicationSet's namespace/name.
func (s AppSet) Key() string { return s.Namespace + "/" + s.Name }

// ListApplicationSets lists every ApplicationSet (all namespaces). Without
// the CRD there are none; when listing is forbidden, it returns none and
// says so in note.
func ListApplicationSets(ctx context.Context, dyn dynamic.Interface) (sets []AppSet, note string, err error) {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(ApplicationSetGVR).List(ctx, opts)
	})
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		s := AppSet{Namespace: u.GetNamespace(), Name: u.GetName()}
		b, err := json.Marshal(u.Object["spec"])
		if err == nil {
			err = json.Unmarshal(b, &s.Spec)
		}
		if err != nil {
			s.Err = err.Error()
		}
		sets = append(sets, s)
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", nil
	case apierrors.IsForbidden(err):
		return nil, "may not list applicationsets.argoproj.io (403): the Applications ApplicationSets would generate are not known, so objects they would sync may be proposed again", nil
	case err != nil:
		return nil, "", fmt.Errorf("list argoproj.io/ApplicationSet: %w", err)
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Key() < sets[j].Key() })
	return sets, "", nil
}

// Tree is one revision of a Git repository as a Git generator reads it.
type Tree interface {
	// Dirs lists its directories as the repo-server does.
	Dirs() []string
	// Files returns the files a Git file generator path matches, with
	// their contents, by path.
	Files(pattern string) (map[string][]byte, error)
}

// TreeAt gives the tree a Git generator reads (its repoURL at its
// revision), or an error saying why adopt cannot read it.
type TreeAt func(repoURL, revision string) (Tree, error)

// Generate evaluates the ApplicationSet's Git directory and Git file
// generators as Argo CD's ApplicationSet controller does and returns the
// Applications they generate, each put in the ApplicationSet's namespace.
// Each generator it cannot evaluate is one line of skipped, saying why.
func (s AppSet) Generate(at TreeAt) (apps []Defined, skipped []string) {
	skip := func(format string, a ...any) {
		skipped = append(skipped, fmt.Sprintf("ApplicationSet %s: ", s.Key())+fmt.Sprintf(format, a...))
	}
	switch {
	case s.Err != "":
		skip("its spec could not be read (%s)", s.Err)
		return nil, skipped
	case s.Spec.TemplatePatch != nil:
		skip("templatePatch is not evaluated by adopt")
		return nil, skipped
	}
	r := renderer{goTemplate: s.Spec.GoTemplate, options: s.Spec.GoTemplateOptions}
	for i, g := range s.Spec.Generators {
		kind := generatorKind(g)
		switch {
		case g.Git == nil:
			skip("generator %d (%s) is not evaluated: adopt evaluates Git directory and Git file generators only", i+1, kind)
			continue
		case g.Selector != nil:
			skip("generator %d (%s) has a selector, which adopt does not evaluate", i+1, kind)
			continue
		case s.Spec.Template.Spec.Project == "":
			// Argo CD's Git generator reads the template's project first.
			skip("generator %d (%s) generates nothing in Argo CD: the ApplicationSet's template names no project (AppProject \"\" not found)", i+1, kind)
			continue
		}
		tree, err := at(g.Git.RepoURL, g.Git.Revision)
		if err != nil {
			skip("generator %d (%s) is not evaluated: %v", i+1, kind, err)
			continue
		}
		params, where, err := gitParams(g.Git, tree, r)
		if err == nil {
			var gen []Defined
			gen, err = s.render(g.Git.Template, params, where, r)
			apps = append(apps, gen...)
		}
		if err != nil {
			skip("generator %d (%s) is not evaluated: %v", i+1, kind, err)
		}
	}
	return apps, skipped
}

// generatorKind names a generator as the ApplicationSet spells it.
func generatorKind(g v1alpha1.ApplicationSetGenerator) string {
	switch {
	case g.Git != nil && len(g.Git.Directories) > 0:
		return "Git directory"
	case g.Git != nil && len(g.Git.Files) > 0:
		return "Git file"
	case g.Git != nil:
		return "Git"
	case g.List != nil:
		return "list"
	case g.Clusters != nil:
		return "clusters"
	case g.SCMProvider != nil:
		return "scmProvider"
	case g.ClusterDecisionResource != nil:
		return "clusterDecisionResource"
	case g.PullRequest != nil:
		return "pullRequest"
	case g.Matrix != nil:
		return "matrix"
	case g.Merge != nil:
		return "merge"
	case g.Plugin != nil:
		return "plugin"
	}
	return "unknown"
}

// gitParams are the parameter sets of a Git generator, and for each what
// it was made from (a directory or a file).
func gitParams(g *v1alpha1.GitGenerator, tree Tree, r renderer) (params []map[string]any, where []string, err error) {
	switch {
	case len(g.Directories) > 0:
		for _, d := range tree.Dirs() {
			in, out := false, false
			for _, item := range g.Directories {
				// A bad pattern matches nothing, as in Argo CD.
				if ok, err := path.Match(item.Path, d); err == nil && ok {
					in, out = in || !item.Exclude, out || item.Exclude
				}
			}
			if in && !out {
				params = append(params, pathParams(d, "", g.PathParamPrefix, r.goTemplate))
				where = append(where, "Git directory generator, directory "+d)
			}
		}
	case len(g.Files) > 0:
		files := map[string][]byte{}
		for _, item := range g.Files {
			got, err := tree.Files(item.Path)
			if err != nil {
				return nil, nil, err
			}
			maps.Copy(files, got)
		}
		for _, p := range slices.Sorted(maps.Keys(files)) {
			ps, err := fileParams(p, files[p], g.PathParamPrefix, r.goTemplate)
			if err != nil {
				return nil, nil, fmt.Errorf("file %s: %v", p, err)
			}
			params = append(params, ps...)
			for range ps {
				where = append(where, "Git file generator, file "+p)
			}
		}
	default:
		return nil, nil, fmt.Errorf("it has neither directories nor files")
	}
	for _, p := range params {
		if err := r.values(g.Values, p); err != nil {
			return nil, nil, err
		}
	}
	return params, where, nil
}

// pathParams are the path parameters of a directory (file "": the
// directory generator) or of a file in it.
func pathParams(dir, file, prefix string, goTemplate bool) map[string]any {
	params := map[string]any{}
	if goTemplate {
		p := map[string]any{"path": dir, "basename": path.Base(dir), "basenameNormalized": SanitizeName(path.Base(dir)), "segments": strings.Split(dir, "/")}
		if file != "" {
			p["filename"], p["filenameNormalized"] = path.Base(file), SanitizeName(path.Base(file))
		}
		if prefix != "" {
			params[prefix] = map[string]any{"path": p}
		} else {
			params["path"] = p
		}
		return params
	}
	name := "path"
	if prefix != "" {
		name = prefix + ".path"
	}
	params[name], params[name+".basename"], params[name+".basenameNormalized"] = dir, path.Base(dir), SanitizeName(path.Base(dir))
	if file != "" {
		params[name+".filename"], params[name+".filenameNormalized"] = path.Base(file), SanitizeName(path.Base(file))
	}
	for i, seg := range strings.Split(dir, "/") {
		if seg != "" {
			params[name+"["+strconv.Itoa(i)+"]"] = seg
		}
	}
	return params
}

// fileParams are the parameter sets of one file of a Git file generator:
// one per object when it holds a list of objects, else one. Without Go
// templates its keys are flattened ("a.b", "list.0") to strings.
func fileParams(file string, data []byte, prefix string, goTemplate bool) ([]map[string]any, error) {
	var objs []map[string]any
	if err := yaml.Unmarshal(data, &objs); err != nil {
		one := map[string]any{}
		if err := yaml.Unmarshal(data, &one); err != nil {
			return nil, fmt.Errorf("unable to parse file: %v", err)
		}
		objs = []map[string]any{one}
	} else if len(objs) == 0 {
		objs = []map[string]any{{}}
	}
	var out []map[string]any
	for _, o := range objs {
		params := map[string]any{}
		if goTemplate {
			for k, v := range o {
				params[k] = v
			}
		} else {
			flatten("", o, params)
		}
		for k, v := range pathParams(path.Dir(file), file, prefix, goTemplate) {
			params[k] = v
		}
		out = append(out, params)
	}
	return out, nil
}

// flatten puts v's leaves into params under dotted keys, as strings.
func flatten(key string, v any, params map[string]any) {
	join := func(k string) string {
		if key == "" {
			return k
		}
		return key + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(join(k), e, params)
		}
	case []any:
		for i, e := range v {
			flatten(join(strconv.Itoa(i)), e, params)
		}
	default:
		params[key] = fmt.Sprintf("%v", v)
	}
}

// render makes the Applications of one generator's parameter sets: the
// generator's template over the ApplicationSet's, every string (and map
// key) rendered with each set, in the ApplicationSet's namespace.
func (s AppSet) render(own v1alpha1.ApplicationSetTemplate, params []map[string]any, where []string, r renderer) ([]Defined, error) {
	base, err := jsonMap(s.Spec.Template)
	if err != nil {
		return nil, err
	}
	tmpl, err := jsonMap(own)
	if err != nil {
		return nil, err
	}
	fillMissing(tmpl, base)
	var out []Defined
	for i, p := range params {
		v, err := r.deep(tmpl, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where[i], err)
		}
		m, _ := v.(map[string]any)
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		// Generated Applications live in the ApplicationSet's namespace.
		meta["namespace"] = s.Namespace
		obj := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta, "spec": m["spec"]}
		d := Defined{Object: obj, Where: fmt.Sprintf("ApplicationSet %s (%s)", s.Key(), where[i]), AppSet: s.Key(), AppSetInGit: s.InGit}
		if s.InGit != "" {
			d.Where = fmt.Sprintf("ApplicationSet %s at %s (%s)", s.Key(), s.InGit, where[i])
		}
		out = append(out, d)
	}
	return out, nil
}

func jsonMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(b, &m)
}

// fillMissing sets in dst what src has and dst lacks (is empty), maps key
// by key: a Git generator's own template over the ApplicationSet's.
func fillMissing(dst, src map[string]any) {
	for k, sv := range src {
		dv, ok := dst[k]
		dm, dIsMap := dv.(map[string]any)
		sm, sIsMap := sv.(map[string]any)
		switch {
		case dIsMap && sIsMap:
			fillMissing(dm, sm)
		case !ok || empty(dv):
			dst[k] = sv
		}
	}
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case float64:
		return v == 0
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// renderer renders strings of an ApplicationSet's template: with Go's
// text/template when goTemplate is set, else by replacing {{param}}.
type renderer struct {
	goTemplate bool
	options    []string
}

// values adds a Git generator's values, each rendered with params, as
// values.<key> (a values map with Go templates).
func (r renderer) values(values map[string]string, params map[string]any) error {
	out := map[string]string{}
	for k, v := range values {
		s, err := r.replace(v, params)
		if err != nil {
			return fmt.Errorf("values.%s: %v", k, err)
		}
		out[k] = s
	}
	if len(out) == 0 {
		return nil
	}
	if r.goTemplate {
		params["values"] = out
		return nil
	}
	for k, v := range out {
		params["values."+k] = v
	}
	return nil
}

// deep renders every string and map key in v.
func (r renderer) deep(v any, params map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		return r.replace(v, params)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := r.deep(e, params)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := r.deep(e, params)
			if err != nil {
				return nil, err
			}
			key, err := r.replace(k, params)
			if err != nil {
				return nil, err
			}
			out[key] = x
		}
		return out, nil
	}
	return v, nil
}

// templated is what Argo CD checks before replacing parameters: {{ and }}
// on one line.
var templated = regexp.MustCompile(".*{{.*}}.*")

// replace renders one string. Without Go templates each {{ name }} whose
// trimmed name is a parameter is replaced by its value, and any other is
// left as written; a {{ without its }} is an error.
func (r renderer) replace(s string, params map[string]any) (string, error) {
	if r.goTemplate {
		t, err := template.New("").Funcs(templateFuncs()).Parse(s)
		if err != nil {
			return "", fmt.Errorf("failed to parse template %s: %v", s, err)
		}
		for _, o := range r.options {
			t = t.Option(o)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, params); err != nil {
			return "", fmt.Errorf("failed to execute go template %s: %v", s, err)
		}
		return b.String(), nil
	}
	if !templated.MatchString(s) {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		rest = rest[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return "", fmt.Errorf("invalid template %q: a {{ has no }}", s)
		}
		tag := rest[:j]
		rest = rest[j+2:]
		if v, ok := params[strings.TrimSpace(tag)].(string); ok && strings.TrimSpace(tag) != "" {
			b.WriteString(v)
		} else {
			b.WriteString("{{" + tag + "}}")
		}
	}
}

// templateFuncs are the functions Argo CD gives Go templates that adopt
// has: Sprig's text functions but env, expandenv and getHostByName, and
// normalize, toYaml, fromYaml and fromYamlArray. A template calling
// another (slugify) fails to parse, and its generator is reported.
func templateFuncs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	delete(f, "getHostByName")
	f["normalize"] = SanitizeName
	f["toYaml"] = func(v any) string {
		b, err := yaml.Marshal(v)
		if err != nil {
			return "" // as Argo CD's: errors are swallowed in templates
		}
		return strings.TrimSuffix(string(b), "\n")
	}
	f["fromYaml"] = func(s string) (map[string]any, error) {
		m := map[string]any{}
		return m, yaml.Unmarshal([]byte(s), &m)
	}
	f["fromYamlArray"] = func(s string) ([]any, error) {
		var a []any
		return a, yaml.Unmarshal([]byte(s), &a)
	}
	return f
}

var notDNS = regexp.MustCompile("[^-a-z0-9.]")

// SanitizeName is Argo CD's basenameNormalized and normalize: lower case,
// every character but a-z, 0-9, - and . made -, at most 253 characters,
// without - or . at either end.
func SanitizeName(name string) string {
	name = notDNS.ReplaceAllString(strings.ToLower(name), "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

// AddGenerated evaluates every ApplicationSet of a (see Generate) and
// adds the Applications they generate that are not in the cluster as
// pending (AddPending), each with AppSet set; one in the cluster already
// is simply an existing Application. It returns a line per generator it
// could not evaluate.
func (a *Applications) AddGenerated(at TreeAt, argoNS string) (skipped []string) {
	return a.generate(a.AppSets, at, argoNS)
}

// AddAppSetsInGit adds the ApplicationSets defined in Git (defs: their
// manifests and where each is) that are not in the cluster, nor added
// before, to AppSets, evaluates them as AddGenerated does, and adds what
// they generate as pending. The Applications of one not in the cluster
// are pending twice over: the ApplicationSet must be applied (by a root's
// sync, or kubectl apply) before its controller creates them. It does
// nothing when the Applications could not be listed (see AddPending).
func (a *Applications) AddAppSetsInGit(defs []Defined, at TreeAt, argoNS string) (skipped []string) {
	if !a.Installed || !a.Verified {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range a.AppSets {
		seen[s.Key()] = true
	}
	var added []AppSet
	sort.Slice(defs, func(i, j int) bool { return defs[i].Where < defs[j].Where })
	for _, d := range defs {
		s := AppSetOf(d.Object, d.Where, argoNS)
		if s.Name == "" || seen[s.Key()] {
			continue
		}
		seen[s.Key()] = true
		added = append(added, s)
	}
	a.AppSets = append(a.AppSets, added...)
	return a.generate(added, at, argoNS)
}

func (a *Applications) generate(sets []AppSet, at TreeAt, argoNS string) (skipped []string) {
	var defs []Defined
	for _, s := range sets {
		gen, sk := s.Generate(at)
		defs = append(defs, gen...)
		skipped = append(skipped, sk...)
	}
	if len(defs) > 0 {
		a.AddPending(defs, argoNS)
	}
	return skipped
}

// oneDir is a repo tree of one directory (GenerateFor).
type oneDir string

func (d oneDir) Dirs() []string                        { return []string{string(d)} }
func (oneDir) Files(string) (map[string][]byte, error) { return nil, nil }

// GenerateFor is the Application the ApplicationSet's generator i would
// generate, as its controller does (Generate), were dir a directory of
// its repo: a new app's directory placed where the generator picks it
// up. nil when generator i is not a Git directory generator adopt
// evaluates, or dir does not fit its directories (or is excluded).
func (s AppSet) GenerateFor(i int, dir string) *Defined {
	if s.Err != "" || s.Spec.TemplatePatch != nil || i < 0 || i >= len(s.Spec.Generators) {
		return nil
	}
	g := s.Spec.Generators[i]
	if g.Git == nil || len(g.Git.Directories) == 0 || g.Selector != nil {
		return nil
	}
	one := s
	one.Spec.Generators = []v1alpha1.ApplicationSetGenerator{g}
	apps, skipped := one.Generate(func(string, string) (Tree, error) { return oneDir(dir), nil })
	if len(apps) != 1 || len(skipped) > 0 {
		return nil
	}
	return &apps[0]
}
