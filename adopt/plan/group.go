package plan

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/gitindex"
)

// GroupBy is the rule that groups objects into proposed Applications.
type GroupBy string

// Grouping rules. Helm objects always go to their release's Application.
const (
	// GroupAuto groups by Git directory when an object is in Git, else by
	// namespace and app.kubernetes.io label.
	GroupAuto GroupBy = "auto"
	// GroupGitDir is GroupAuto (kept as an explicit name).
	GroupGitDir GroupBy = "git-dir"
	// GroupLabel groups by namespace plus app.kubernetes.io/part-of,
	// instance or name, ignoring Git.
	GroupLabel GroupBy = "label"
	// GroupNamespace proposes one Application per namespace.
	GroupNamespace GroupBy = "namespace"
)

// GroupByValues lists the accepted --group-by values.
var GroupByValues = []string{string(GroupAuto), string(GroupGitDir), string(GroupLabel), string(GroupNamespace)}

type bucket struct {
	app  Application
	dir  string // Git directory, for git-sourced apps
	ns   map[string]bool
	refs []*candidate
}

// group proposes Applications for the candidates and sets Object.App.
func group(cands []*candidate, by GroupBy, cfg *config.Config, ix *gitindex.Index, repoURL string) (apps []Application, clash bool) {
	buckets := map[string]*bucket{}
	get := func(key string, mk func() Application) *bucket {
		b := buckets[key]
		if b == nil {
			b = &bucket{app: mk(), ns: map[string]bool{}}
			buckets[key] = b
		}
		return b
	}
	dest := gitDestinations(cands, by)
	for _, c := range cands {
		o := c.obj
		var b *bucket
		switch {
		case c.shared:
			continue // a critical finding; no Application would end the fight
		case c.existing != nil:
			s := c.existing
			b = get("existing\x00"+s.Namespace+"\x00"+s.Name, func() Application {
				return Application{Source: "existing", Existing: &Existing{Namespace: s.Namespace, Automated: s.Automated, Sync: s.Sync, Pending: s.Pending}}
			})
		case o.HelmRelease != "":
			b = get("helm\x00"+o.Namespace+"\x00"+o.HelmRelease, func() Application {
				return Application{Source: "helm", Helm: &HelmSource{ReleaseName: o.HelmRelease}}
			})
		case len(o.Ambiguous) > 0:
			// The repo holds it more than once and adopt cannot tell which
			// to sync: an export would be another copy (a finding).
			continue
		case (by == GroupAuto || by == GroupGitDir) && c.manifest != nil:
			dir := c.manifest.Dir()
			ns := dest(c)
			b = get("git\x00"+dir+"\x00"+ns, func() Application { return Application{Source: "git", SourcePath: dir, Namespace: ns} })
			b.dir = dir
		case by == GroupNamespace:
			b = get("ns\x00"+o.Namespace, func() Application { return Application{Source: "export"} })
		default:
			key := c.group
			b = get("label\x00"+o.Namespace+"\x00"+key, func() Application { return Application{Source: "export"} })
		}
		b.ns[o.Namespace] = true
		b.refs = append(b.refs, c)
	}
	keys := make([]string, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	used, named := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		b := buckets[k]
		a := b.app
		a.Project = cfg.Project
		a.RepoURL = repoURL
		a.DestinationServer, a.DestinationName = cfg.Destination.Server, cfg.Destination.Name
		if a.Namespace == "" {
			a.Namespace = commonNamespace(b.ns)
		}
		parts := strings.Split(k, "\x00")
		switch a.Source {
		case "existing":
			a.Name = parts[2]
			a.Project, a.DestinationServer, a.DestinationName = "", "", ""
			if c := b.refs[0]; c.existing != nil {
				a.SourcePath = existingPath(c.existing, a.RepoURL)
			}
		case "helm":
			a.Name = cfg.AppName(parts[1], parts[2], "")
			a.Helm.Chart, a.Helm.Version = chartOf(b.refs)
			a.Namespace = parts[1]
		case "git":
			a.Name = cfg.AppName(a.Namespace, path.Base(b.dir), b.dir)
			a.Kustomize = ix.InKustomization(b.dir) == b.dir
			if !a.Kustomize {
				a.Include = include(b, ix)
			}
		default:
			key := ""
			if len(parts) > 2 {
				key = parts[2]
			}
			ns, dir := parts[1], parts[1]
			if ns == "" {
				ns, dir = "cluster", "_cluster"
			}
			a.SourcePath = path.Join(cfg.ExportDir, dir, key)
			a.Name = cfg.Name(config.NameVars{Namespace: ns, Key: key, Env: path.Base(a.SourcePath)})
		}
		if a.Source == "existing" {
			used[a.Name] = true // sorted first: a new one never takes its name
		} else {
			clash = clash || named[a.Name]
			named[a.Name] = true
			a.Name = unique(a.Name, used)
		}
		a.Objects = refs(b.refs, a.Name)
		sort.Strings(a.Objects)
		apps = append(apps, a)
	}
	return apps, clash
}

// gitDestinations returns, for a candidate matched in Git, the destination
// namespace of the Application that syncs its directory, "" when the
// directory's Application needs none. A manifest without a namespace
// lands in the Application's destination namespace, so the same directory
// applied by hand into several namespaces (kubectl apply -n a -f dir;
// kubectl apply -n b -f dir) is one Application per namespace, as Argo CD
// users write it: one over every namespace would have no destination for
// those manifests. Objects whose manifests name their namespace go with the
// directory's first such namespace, as its render holds them too.
func gitDestinations(cands []*candidate, by GroupBy) func(*candidate) string {
	if by != GroupAuto && by != GroupGitDir {
		return func(*candidate) string { return "" }
	}
	first := map[string]string{} // directory -> its first namespace-less destination
	for _, c := range cands {
		if m := c.manifest; m != nil && m.Namespace == "" && c.obj.Namespace != "" {
			if f, ok := first[m.Dir()]; !ok || c.obj.Namespace < f {
				first[m.Dir()] = c.obj.Namespace
			}
		}
	}
	return func(c *candidate) string {
		if m := c.manifest; m.Namespace == "" && c.obj.Namespace != "" {
			return c.obj.Namespace
		}
		return first[c.manifest.Dir()]
	}
}

// refs names cands' objects (Object.Ref) for an Application's list and
// gives them to app. The names are cut from one string: a string per
// object was, at 100,000 objects, 100,000 allocations the collector then
// traced.
func refs(cands []*candidate, app string) []string {
	var slab []byte
	ends := make([]int, len(cands))
	for i, c := range cands {
		c.obj.App = app
		slab = c.obj.Ref.Append(slab)
		ends[i] = len(slab)
	}
	all, start := string(slab), 0
	out := make([]string, len(cands))
	for i, end := range ends {
		out[i], start = all[start:end], end
	}
	return out
}

func commonNamespace(ns map[string]bool) string {
	if len(ns) != 1 {
		return ""
	}
	for n := range ns {
		return n
	}
	return ""
}

func unique(name string, used map[string]bool) string {
	n := name
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s-%d", name, i)
	}
	used[n] = true
	return n
}

// include lists the files of the directory that hold adopted objects, when
// the directory holds other manifests too; nil when it holds only them.
func include(b *bucket, ix *gitindex.Index) []string {
	adopted := map[*gitindex.Manifest]bool{}
	files := map[string]bool{}
	for _, c := range b.refs {
		adopted[c.manifest] = true
		files[path.Base(c.manifest.Path)] = true
	}
	more := false
	for _, ms := range ix.FilesIn(b.dir) {
		for _, m := range ms {
			if !adopted[m] {
				more = true
			}
		}
	}
	if !more {
		return nil
	}
	var out []string
	for f := range files {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// chartOf reads the chart name and version from the helm.sh/chart label
// ("<name>-<version>") of the release's objects. The label is not kept on
// plan objects, so it comes from the evidence the collector saw.
func chartOf(refs []*candidate) (string, string) {
	for _, c := range refs {
		if c.src == nil {
			continue
		}
		v := c.src.Labels["helm.sh/chart"]
		if v == "" {
			continue
		}
		for i := len(v) - 1; i > 0; i-- {
			if v[i] == '-' && i+1 < len(v) && v[i+1] >= '0' && v[i+1] <= '9' {
				return v[:i], v[i+1:]
			}
		}
		return v, ""
	}
	return "", ""
}
