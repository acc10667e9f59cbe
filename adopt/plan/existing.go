package plan

import (
	"fmt"
	"path"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/argoapp"
)

// Finding codes of existing Applications.
const (
	// CodeInApplication: an existing Application renders the object; it
	// is adopted when that Application syncs, and no new one is proposed.
	CodeInApplication = "in-existing-application"
	// CodeSharedResource: two existing Applications render the object.
	CodeSharedResource = "rendered-by-two-applications"
	// CodeSourceNotRendered: an existing Application's source from the
	// repo could not be rendered, so what it syncs is not known.
	CodeSourceNotRendered = "application-source-not-rendered"
	// CodeAppNotRun: an Application in a namespace Argo CD does not watch
	// (application.namespaces), so it never syncs.
	CodeAppNotRun = "application-not-run"
)

// Existing is an Application that already exists and renders objects of
// the plan from the repo: apply writes nothing for it, and finalize
// treats its next sync as the first.
type Existing struct {
	// Namespace is the Application's own namespace.
	Namespace string `json:"namespace" yaml:"namespace"`
	// Automated is set when it syncs by itself.
	Automated bool `json:"automated,omitempty" yaml:"automated,omitempty"`
	// Sync is its sync status when the plan was made.
	Sync string `json:"sync,omitempty" yaml:"sync,omitempty"`
	// Pending is where in Git it is defined when it was not in the
	// cluster yet ("file:line", or the ApplicationSet and generator that
	// would generate it); "" when it was.
	Pending string `json:"pending,omitempty" yaml:"pending,omitempty"`
}

// ArgoRef is how Argo CD's readers and syncers name the Application
// (argoapp.SplitName): "namespace/name" for an existing Application, which
// may live in any namespace Argo CD watches (application.namespaces); its
// name for one adopt proposes, created in the plan's Argo CD namespace.
func (a Application) ArgoRef() string {
	if a.Existing != nil && a.Existing.Namespace != "" {
		return a.Existing.Namespace + "/" + a.Name
	}
	return a.Name
}

// directoryOf is the source's directory settings (none when unset).
func directoryOf(src v1alpha1.ApplicationSource) gitindex.Directory {
	if src.Directory == nil {
		return gitindex.Directory{}
	}
	return gitindex.Directory{Recurse: src.Directory.Recurse, Include: src.Directory.Include, Exclude: src.Directory.Exclude}
}

// appRenders is what existing Applications render from the plan's repo: each
// object identity with the Applications (by index into specs) whose
// sources hold it, and the manifest each renders.
type appRenders struct {
	specs []argoapp.Spec
	by    map[gitindex.Key][]owner
}

type owner struct {
	spec     int
	manifest *gitindex.Manifest
	// ix is the repo at the source's targetRevision.
	ix *gitindex.Index
}

// notRun is a finding for each Application deploying here that Argo CD
// does not run, because its namespace is not watched.
func notRun(apps argoapp.Applications, tr argoapp.Tracking) []Finding {
	var fs []Finding
	for _, s := range apps.Specs {
		if s.Pending == "" && !tr.Runs(s.Namespace) {
			fs = append(fs, Finding{Code: CodeAppNotRun, Severity: Warning, Message: tr.NotRun(s.Key()) + "; what it would sync counts as untracked"})
		}
	}
	return fs
}

// existingRenders renders every source of every existing Application that
// reads the plan's repo (its repoURL and where that came from; compared
// as argoapp.SameRepo compares them). A source adopt cannot render is a
// finding naming the Application and why, and so are the sources that
// read other repos (otherRepos).
// Each source is read at its targetRevision through revs. The
// Applications and ApplicationSets a chart renders (a root built with
// Helm) are added to apps as pending, and what they generate rendered in
// turn.
func existingRenders(apps *argoapp.Applications, ix *gitindex.Index, repoURL, repoFrom string, tr argoapp.Tracking, charts helmrelease.Renderer, revs Revisions) (appRenders, []Finding) {
	argoNS := tr.Namespace
	specs := apps.Specs
	r := appRenders{specs: specs, by: map[gitindex.Key][]owner{}}
	if ix == nil {
		return r, nil
	}
	fs := otherRepos(specs, repoURL, repoFrom)
	if repoURL == "" {
		return r, fs
	}
	// Pending Applications a chart renders (a root built with Helm) are
	// appended as they are found, and rendered in turn.
	for i := 0; i < len(r.specs); i++ {
		s := r.specs[i]
		if s.Err != "" {
			fs = append(fs, Finding{Code: CodeSourceNotRendered, Severity: Warning,
				Message: fmt.Sprintf("Application %s could not be read (%s): objects it syncs may be proposed again", s.Key(), s.Err)})
			continue
		}
		if s.Pending == "" && !tr.Runs(s.Namespace) {
			continue // never syncs (notRun says so)
		}
		s.Instance = s.InstanceName(argoNS)
		for _, src := range s.Sources {
			if !inRepo(src, repoURL) || notGit(src) {
				continue
			}
			if src.Path == "" && src.Ref != "" {
				continue // a values source of a multi-source Application
			}
			// Argo CD renders each source at its own targetRevision.
			at, err := revs.at(ix, src.TargetRevision)
			var ms []*gitindex.Manifest
			if err == nil {
				ms, err = RenderSource(at, revs, charts, s, src, repoURL)
			}
			if err != nil {
				fs = append(fs, Finding{Code: CodeSourceNotRendered, Severity: Warning,
					Message: fmt.Sprintf("Application %s, source %s: %v; objects it syncs from there may be proposed again", s.Key(), src.Path, err)})
				continue
			}
			var defs, sets []argoapp.Defined
			for _, m := range ms {
				r.add(m, i, s.Destination, at)
				if m.Group != "argoproj.io" || !at.IsChart(path.Clean(src.Path)) {
					continue // a directory's or kustomization's are in the index's manifests
				}
				d := argoapp.Defined{Object: m.Object, Where: fmt.Sprintf("%s (rendered for Application %s)", m.Path, s.Key())}
				switch m.Kind {
				case "Application":
					defs = append(defs, d)
				case "ApplicationSet":
					sets = append(sets, d)
				}
			}
			if len(defs)+len(sets) > 0 {
				apps.Specs = r.specs
				apps.AddPending(defs, argoNS)
				fs = append(fs, notEvaluated(apps.AddAppSetsInGit(sets, treeAt(ix, repoURL, revs), argoNS))...)
				r.specs = apps.Specs
			}
		}
	}
	return r, fs
}

func (r *appRenders) add(m *gitindex.Manifest, spec int, dest string, ix *gitindex.Index) {
	keys := []gitindex.Key{m.Key}
	if m.Namespace == "" && dest != "" {
		// Namespaced, it goes to the destination; cluster-scoped, it has
		// none.
		k := m.Key
		k.Namespace = dest
		keys = append(keys, k)
	}
	for _, k := range keys {
		if !hasSpec(r.by[k], spec) {
			r.by[k] = append(r.by[k], owner{spec: spec, manifest: m, ix: ix})
		}
	}
}

func hasSpec(owners []owner, spec int) bool {
	for _, o := range owners {
		if o.spec == spec {
			return true
		}
	}
	return false
}

// ownersOf returns the existing Applications that render the object.
func (r *appRenders) ownersOf(o *Object) []owner {
	return r.by[gitindex.Key{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}]
}

// claim decides an object rendered by existing Applications: one makes it
// that Application's (its render is the object's manifest); two or more
// are a critical finding, and the object gets no Application.
func (r *appRenders) claim(c *candidate, ix *gitindex.Index) {
	owners := r.ownersOf(c.obj)
	switch len(owners) {
	case 0:
		return
	case 1:
		s := r.specs[owners[0].spec]
		c.existing = &r.specs[owners[0].spec]
		c.ambiguous, c.obj.Ambiguous = nil, nil
		c.match(owners[0].manifest, owners[0].ix)
		if at := owners[0].ix; at != ix {
			c.obj.Git.Revision = at.Revision
		}
		msg := fmt.Sprintf("in Git under Application %s: adopted when %s syncs; no new Application", s.Key(), s.Name)
		switch {
		case s.AppSetInGit != "":
			msg = fmt.Sprintf("in Git under Application %s, generated by %s; neither is in the cluster yet: adopted once the ApplicationSet is applied (by its root Application's sync, or kubectl apply -f %s), its controller creates the Application and it syncs; no new Application", s.Key(), s.Pending, fileOf(s.AppSetInGit))
		case s.AppSet != "":
			msg = fmt.Sprintf("in Git under Application %s, generated by %s but not in the cluster yet: adopted once the ApplicationSet controller creates it and it syncs; no new Application", s.Key(), s.Pending)
		case s.Pending != "":
			msg = fmt.Sprintf("in Git under Application %s, defined at %s but not in the cluster yet: adopted once it is created (by its root Application's sync, or kubectl apply -f) and syncs; no new Application", s.Key(), s.Pending)
		case s.Sync == "OutOfSync" && !s.Automated:
			msg += fmt.Sprintf(" (%s is OutOfSync and does not sync by itself: sync it)", s.Name)
		case s.Sync == "OutOfSync":
			msg += fmt.Sprintf(" (%s is OutOfSync and syncs by itself)", s.Name)
		case !s.Automated:
			msg += fmt.Sprintf(" (%s does not sync by itself: sync it)", s.Name)
		}
		c.obj.Findings = append(c.obj.Findings, Finding{Code: CodeInApplication, Severity: Info, Message: msg})
	default:
		var names []string
		for _, o := range owners {
			names = append(names, r.specs[o.spec].Key())
		}
		c.shared = true
		c.obj.Findings = append(c.obj.Findings, Finding{Code: CodeSharedResource, Severity: Critical, Message: fmt.Sprintf(
			"rendered by %d existing Applications (%s): Argo CD reports a shared resource and they fight over the tracking mark; keep it in one of them, then plan again",
			len(owners), strings.Join(names, ", "))})
	}
}

// existingPath is the path of the Application's first source that reads
// the plan's repo.
func existingPath(s *argoapp.Spec, repoURL string) string {
	for _, src := range s.Sources {
		if inRepo(src, repoURL) && src.Path != "" {
			return src.Path
		}
	}
	return ""
}

// Root is the existing Application that reads the new Applications'
// files (an app of apps): a directory source over the apps directory, or
// over another directory of Applications, or a kustomization listing
// them (rootElsewhere), or a chart whose values list them
// (rootHelmValues). It creates the new Applications when it next
// syncs.
type Root struct {
	// Application is its namespace/name.
	Application string `json:"application" yaml:"application"`
	// Automated is set when it syncs by itself.
	Automated bool `json:"automated,omitempty" yaml:"automated,omitempty"`
	// Dir is the directory apply writes the new Applications' files into
	// when the root reads another than the apps directory (a directory of
	// Applications, or a kustomization's); "" for the apps directory.
	Dir string `json:"dir,omitempty" yaml:"dir,omitempty"`
	// Kustomization is the kustomization file (in Dir) whose resources
	// apply appends the new files to; "" for a directory source.
	Kustomization string `json:"kustomization,omitempty" yaml:"kustomization,omitempty"`
	// HelmValues is set when the root renders a chart whose values list
	// Applications (rootHelmValues): apply appends the new Applications'
	// items to that list and writes no Application file.
	HelmValues *HelmValuesRoot `json:"helmValues,omitempty" yaml:"helmValues,omitempty"`
}

// rootSources are the sources of s that may read the apps directory: from
// the plan's repo, with a path and no chart, of an Application running.
func rootSources(s argoapp.Spec, repoURL string) []v1alpha1.ApplicationSource {
	if s.Pending != "" {
		return nil // not running: it creates nothing yet
	}
	var out []v1alpha1.ApplicationSource
	for _, src := range s.Sources {
		if inRepo(src, repoURL) && src.Chart == "" && src.Path != "" {
			out = append(out, src)
		}
	}
	return out
}

// appsRoot finds the existing Application whose directory source reads
// every new Application's file (<appsDir>/<name>.yaml); nil when none does.
// A kustomization reads only the files it lists, so it never counts. same
// says which targetRevisions are the plan's (Renders.same).
func appsRoot(specs []argoapp.Spec, ix *gitindex.Index, repoURL, appsDir string, apps []Application, same map[string]bool) *Root {
	if ix == nil || repoURL == "" || appsDir == "" {
		return nil
	}
	for _, s := range specs {
		for _, src := range rootSources(s, repoURL) {
			// The new Applications' files are written at the plan's
			// revision: a root pinned elsewhere never reads them.
			if !same[src.TargetRevision] || ix.IsChart(src.Path) || ix.InKustomization(path.Clean(src.Path)) != "" {
				continue
			}
			d := directoryOf(src)
			all, some := true, false
			for _, a := range apps {
				if a.Existing != nil || a.Generator != nil {
					continue
				}
				ok, err := d.Reads(src.Path, path.Join(appsDir, a.Name+".yaml"))
				all, some = all && ok && err == nil, true
			}
			if all && some {
				return &Root{Application: s.Key(), Automated: s.Automated}
			}
		}
	}
	return nil
}

// fileOf is the file of a "file:line" place in Git.
func fileOf(where string) string {
	if i := strings.LastIndexByte(where, ':'); i > 0 && !strings.Contains(where, " ") {
		return where[:i]
	}
	return where
}
