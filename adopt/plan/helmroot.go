package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/argoapp"
)

// HelmValuesRoot is a root whose source is a Helm chart in the plan's
// repo that turns the items of a list in its values file into
// Applications (argocd.root.helmValues): apply appends Items to that list
// and writes no Application file; the root's chart creates them on sync.
type HelmValuesRoot struct {
	// Chart is the chart's directory; ValuesFile the values file (a repo
	// path) that holds the list under the top-level key Key.
	Chart      string `json:"chart" yaml:"chart"`
	ValuesFile string `json:"valuesFile" yaml:"valuesFile"`
	Key        string `json:"key" yaml:"key"`
	// Digest is the values file's sha256 when the plan was made: apply
	// refuses a file changed since.
	Digest string `json:"digest" yaml:"digest"`
	// Items are the items apply appends, one per new Application, as the
	// render proof used them.
	Items []HelmValuesItem `json:"items" yaml:"items"`
}

// HelmValuesItem is the item of the values list for one new Application.
type HelmValuesItem struct {
	Application string         `json:"application" yaml:"application"`
	Values      map[string]any `json:"values" yaml:"values"`
}

// Item is the item for Application name, nil when there is none.
func (h *HelmValuesRoot) Item(name string) *HelmValuesItem {
	if h == nil {
		return nil
	}
	for i := range h.Items {
		if h.Items[i].Application == name {
			return &h.Items[i]
		}
	}
	return nil
}

// rootHelmValues finds, when no other root reads the new Applications, a
// running Application of the plan's repo at the plan's revision whose
// source is a chart of the repo with a values file (the last of its
// valueFiles, else the chart's values.yaml) holding a top-level list of
// mappings, such that the chart rendered with one item per new
// Application appended (the first item's shape, values taken from the
// Application) renders exactly those Applications more, each equal in
// name, source (repo, path, revision) and destination to the planned one,
// and the rest of its render unchanged. Why each candidate was refused is
// an info finding.
func rootHelmValues(p *Plan, specs []argoapp.Spec, ix *gitindex.Index, r helmrelease.Renderer, same map[string]bool) (*Root, []Finding) {
	repoURL := p.Settings.RepoURL
	if ix == nil || repoURL == "" {
		return nil, nil
	}
	var news []Application
	for _, a := range p.Applications {
		if a.Existing != nil || a.Generator != nil {
			continue
		}
		if a.Helm != nil || a.Extends != "" || a.SourcePath == "" {
			return nil, nil // not a directory of the repo an item can name
		}
		news = append(news, a)
	}
	if len(news) == 0 {
		return nil, nil
	}
	var fs []Finding
	for _, s := range specs {
		for _, src := range rootSources(s, repoURL) {
			dir := path.Clean(strings.TrimPrefix(src.Path, "/"))
			if !same[src.TargetRevision] || !ix.IsChart(dir) {
				continue
			}
			h, err := helmValuesFor(p, s, src, dir, ix, r, same, news)
			if err != nil {
				if err != errNoList {
					fs = append(fs, Finding{Code: CodePlacement, Severity: Info, Message: fmt.Sprintf("root Application %s renders chart %s, whose values list Applications, but the new Applications are not added there: %v", s.Key(), dir, err)})
				}
				continue
			}
			var names []string
			for _, a := range news {
				names = append(names, a.Name)
			}
			fs = append(fs, Finding{Code: CodePlacement, Severity: Info, Message: fmt.Sprintf("new Application %s: root Application %s creates it from chart %s, rendered with an item appended to %s in %s (proven: the render gains exactly that Application); apply appends the item and writes no Application file", strings.Join(names, ", "), s.Key(), dir, h.Key, h.ValuesFile)})
			return &Root{Application: s.Key(), Automated: s.Automated, HelmValues: h}, fs
		}
	}
	return nil, fs
}

var errNoList = fmt.Errorf("no list of Applications in its values")

// helmValuesFor proves the helm values form of root s's chart source src
// for the new Applications, as rootHelmValues says.
func helmValuesFor(p *Plan, s argoapp.Spec, src v1alpha1.ApplicationSource, dir string, ix *gitindex.Index, r helmrelease.Renderer, same map[string]bool, news []Application) (*HelmValuesRoot, error) {
	h := src.Helm
	if h == nil {
		h = &v1alpha1.ApplicationSourceHelm{}
	}
	vf := path.Join(dir, "values.yaml")
	if n := len(h.ValueFiles); n > 0 {
		var err error
		if vf, _, err = valuesFile(h.ValueFiles[n-1], dir, s.Sources, p.Settings.RepoURL, appEnv(s, src, ix.Revision)); err != nil || strings.HasPrefix(h.ValueFiles[n-1], "$") {
			return nil, errNoList
		}
	}
	data, err := ix.ReadFile(vf)
	if err != nil {
		return nil, errNoList
	}
	var values map[string]any
	if yaml.Unmarshal(data, &values) != nil {
		return nil, errNoList
	}
	inline := map[string]any{}
	if b := h.ValuesYAML(); len(b) > 0 {
		if yaml.Unmarshal(b, &inline) != nil {
			return nil, errNoList
		}
	}
	base, err := renderChart(ix, Revisions{}, r, s, src, p.Settings.RepoURL)
	if err != nil {
		return nil, errNoList
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var why error = errNoList
	for _, key := range keys {
		list, ok := values[key].([]any)
		if !ok || len(list) == 0 || inline[key] != nil || paramUnder(h.Parameters, key) {
			continue
		}
		first, ok := list[0].(map[string]any)
		if !ok || !rendersApplications(base, list) {
			continue
		}
		var items []HelmValuesItem
		var more []any
		for _, a := range news {
			v, err := itemFor(p, a, first, list, src.TargetRevision, same)
			if err != nil {
				return nil, fmt.Errorf("%s in %s: %v", key, vf, err)
			}
			items = append(items, HelmValuesItem{Application: a.Name, Values: v})
			more = append(more, v)
		}
		if err := proveItems(p, s, src, ix, r, same, base, inline, key, append(append([]any{}, list...), more...), news); err != nil {
			why = fmt.Errorf("%s in %s: %v", key, vf, err)
			continue
		}
		sum := sha256.Sum256(data)
		return &HelmValuesRoot{Chart: dir, ValuesFile: vf, Key: key, Digest: hex.EncodeToString(sum[:]), Items: items}, nil
	}
	return nil, why
}

// paramUnder says whether a helm parameter sets key or below it.
func paramUnder(ps []v1alpha1.HelmParameter, key string) bool {
	for _, p := range ps {
		if p.Name == key || strings.HasPrefix(p.Name, key+".") || strings.HasPrefix(p.Name, key+"[") {
			return true
		}
	}
	return false
}

// rendersApplications says whether the render holds an Application named
// after an item of list (its name value).
func rendersApplications(ms []*gitindex.Manifest, list []any) bool {
	names := map[string]bool{}
	for _, m := range ms {
		if isApplication(m) {
			names[m.Name] = true
		}
	}
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			for _, v := range m {
				if s, ok := v.(string); ok && names[s] {
					return true
				}
			}
		}
	}
	return false
}

// itemFor is the item for new Application a in the shape of first: each
// key a field of the Application names (name, path, namespace, project,
// repoURL, targetRevision, server, destination name; nested mappings
// alike) takes a's value; any other key is copied from first only when
// it is not app-specific (the same in every item, and no string holding
// the first item's name, path or namespace). Else an error.
func itemFor(p *Plan, a Application, first map[string]any, list []any, rev string, same map[string]bool) (map[string]any, error) {
	server, name := plannedDestination(p, a)
	project := a.Project
	if project == "" {
		project = p.Settings.Project
	}
	if project == "" {
		project = "default"
	}
	repoURL := a.RepoURL
	if repoURL == "" {
		repoURL = p.Settings.RepoURL
	}
	ids := idValues(first)
	var fill func(m map[string]any, at []string) (map[string]any, error)
	fill = func(m map[string]any, at []string) (map[string]any, error) {
		out := map[string]any{}
		for k, v := range m {
			here := append(append([]string{}, at...), k)
			if sub, ok := v.(map[string]any); ok {
				f, err := fill(sub, here)
				if err != nil {
					return nil, err
				}
				out[k] = f
				continue
			}
			switch itemKey(k) {
			case "name", "appname", "app", "application", "applicationname":
				out[k] = a.Name
			case "path", "sourcepath", "apppath", "srcpath":
				out[k] = a.SourcePath
			case "namespace", "destnamespace", "destinationnamespace", "targetnamespace":
				out[k] = a.Namespace
			case "project", "appproject":
				out[k] = project
			case "repourl", "repo", "repository", "sourcerepo", "sourcerepourl":
				out[k] = repoURL
			case "targetrevision", "revision":
				if s, ok := v.(string); ok && same[s] {
					out[k] = s
				} else {
					out[k] = rev
				}
			case "server", "destserver", "destinationserver", "clusterurl":
				if server == "" {
					return nil, fmt.Errorf("key %s is a destination server, and the Application's destination is cluster name %s", strings.Join(here, "."), name)
				}
				out[k] = server
			case "destname", "destinationname", "clustername":
				if name == "" {
					return nil, fmt.Errorf("key %s is a destination name, and the Application's destination is server %s", strings.Join(here, "."), server)
				}
				out[k] = name
			default:
				if why := appSpecific(v, here, list, ids); why != "" {
					return nil, fmt.Errorf("key %s is app-specific (%s) and adopt cannot fill it", strings.Join(here, "."), why)
				}
				out[k] = v
			}
		}
		return out, nil
	}
	return fill(first, nil)
}

func itemKey(k string) string {
	return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(k))
}

// idValues are the first item's string values of the keys that identify
// its app (name, path, namespace), at any depth.
func idValues(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			out = append(out, idValues(sub)...)
			continue
		}
		switch itemKey(k) {
		case "name", "appname", "app", "application", "applicationname", "path", "sourcepath", "apppath", "srcpath", "namespace", "destnamespace", "destinationnamespace", "targetnamespace":
			if s, ok := v.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// appSpecific says why the first item's value v at key path at is
// specific to its app ("" when it is not).
func appSpecific(v any, at []string, list []any, ids []string) string {
	for _, it := range list[1:] {
		if !reflect.DeepEqual(lookup(it, at), v) {
			return "the items differ"
		}
	}
	b, _ := json.Marshal(v)
	for _, id := range ids {
		if strings.Contains(string(b), id) {
			return fmt.Sprintf("it holds %q", id)
		}
	}
	return ""
}

func lookup(v any, at []string) any {
	for _, k := range at {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// plannedDestination is the destination apply gives a: its own, else the
// plan's ("name:<cluster>" or a server, "" the in-cluster server).
func plannedDestination(p *Plan, a Application) (server, name string) {
	switch {
	case a.DestinationName != "":
		return "", a.DestinationName
	case a.DestinationServer != "":
		return a.DestinationServer, ""
	}
	if n, ok := strings.CutPrefix(p.Settings.Destination, "name:"); ok {
		return "", n
	}
	if p.Settings.Destination == "" {
		return argoapp.InClusterServer, ""
	}
	return p.Settings.Destination, ""
}

// proveItems renders the chart with key set to list and checks that the
// render is base and one Application more per new Application, equal to
// it in name, source and destination.
func proveItems(p *Plan, s argoapp.Spec, src v1alpha1.ApplicationSource, ix *gitindex.Index, r helmrelease.Renderer, same map[string]bool, base []*gitindex.Manifest, inline map[string]any, key string, list []any, news []Application) error {
	obj := map[string]any{}
	for k, v := range inline {
		obj[k] = v
	}
	obj[key] = list
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	src = *src.DeepCopy()
	if src.Helm == nil {
		src.Helm = &v1alpha1.ApplicationSourceHelm{}
	}
	src.Helm.Values, src.Helm.ValuesObject = "", &runtime.RawExtension{Raw: b}
	got, err := renderChart(ix, Revisions{}, r, s, src, p.Settings.RepoURL)
	if err != nil {
		return fmt.Errorf("the chart does not render with the new items: %v", err)
	}
	before := map[gitindex.Key]*gitindex.Manifest{}
	for _, m := range base {
		before[m.Key] = m
	}
	gained := map[string]*gitindex.Manifest{}
	for _, m := range got {
		if o := before[m.Key]; o != nil {
			if !reflect.DeepEqual(o.Object, m.Object) {
				return fmt.Errorf("the new items change %s %s of the render", m.Kind, m.Name)
			}
			delete(before, m.Key)
			continue
		}
		if !isApplication(m) {
			return fmt.Errorf("the new items add %s %s to the render, not only Applications", m.Kind, m.Name)
		}
		gained[m.Name] = m
	}
	if len(before) > 0 || len(gained) != len(news) {
		return fmt.Errorf("the render with the new items gains %d Applications and loses %d objects, want %d Applications more", len(gained), len(before), len(news))
	}
	for _, a := range news {
		m := gained[a.Name]
		if m == nil {
			return fmt.Errorf("the render with the new items has no Application %s", a.Name)
		}
		if why := sameApplication(p, a, m.Object, same); why != "" {
			return fmt.Errorf("the chart's Application %s %s", a.Name, why)
		}
	}
	return nil
}

// sameApplication says how the rendered Application obj differs from a
// in source (repo, path, revision) and destination ("" when it does not).
func sameApplication(p *Plan, a Application, obj map[string]any, same map[string]bool) string {
	spec, _ := obj["spec"].(map[string]any)
	src, _ := spec["source"].(map[string]any)
	dest, _ := spec["destination"].(map[string]any)
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	repoURL := a.RepoURL
	if repoURL == "" {
		repoURL = p.Settings.RepoURL
	}
	server, name := plannedDestination(p, a)
	switch {
	case src == nil || spec["sources"] != nil || str(src, "chart") != "":
		return "has not one source of the repo"
	case !argoapp.SameRepo(str(src, "repoURL"), repoURL):
		return fmt.Sprintf("reads repository %q, not %s", str(src, "repoURL"), repoURL)
	case path.Clean(strings.TrimPrefix(str(src, "path"), "/")) != path.Clean(a.SourcePath):
		return fmt.Sprintf("reads path %q, not %s", str(src, "path"), a.SourcePath)
	case !same[str(src, "targetRevision")]:
		return fmt.Sprintf("reads revision %q, not the plan's", str(src, "targetRevision"))
	case str(dest, "namespace") != a.Namespace:
		return fmt.Sprintf("deploys to namespace %q, not %s", str(dest, "namespace"), a.Namespace)
	case name != "" && str(dest, "name") != name:
		return fmt.Sprintf("deploys to cluster %q, not %s", str(dest, "name"), name)
	case name == "" && !argoapp.SameServer(str(dest, "server"), server) && !(argoapp.SameServer(server, argoapp.InClusterServer) && str(dest, "name") == argoapp.InClusterName):
		return fmt.Sprintf("deploys to server %q, not %s", str(dest, "server"), server)
	}
	return ""
}
