package apply

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// renderApp places one Application's objects and renders its manifest into
// files, with every setting as the plan records it.
func (a *Applier) renderApp(t Tree, app plan.Application, files map[string][]byte) (AppSummary, error) {
	if app.Source == "helm" {
		return a.renderHelm(app, files)
	}
	p := a.o.Plan
	s := AppSummary{Name: app.Name, Namespace: app.Namespace, Path: app.SourcePath}
	var inGit, exportedHere []*exported
	for _, ref := range app.Objects {
		e := a.objs[ref]
		if e.obj.Git != nil {
			inGit = append(inGit, e)
		} else {
			exportedHere = append(exportedHere, e)
		}
	}
	// An Application whose objects are all in Git points at their directory.
	srcPath := strings.TrimSuffix(app.SourcePath, "/")
	if len(exportedHere) == 0 && len(inGit) > 0 {
		dirs := map[string]bool{}
		for _, e := range inGit {
			dirs[path.Dir(e.file)] = true
		}
		if len(dirs) == 1 {
			srcPath = path.Dir(inGit[0].file)
		}
	}
	if srcPath == "" || srcPath == "." {
		return s, &ContractError{msg: fmt.Sprintf("plan %s: Application %s has no source path: it would sync the repository's root. Re-run adopt plan", p.ID, app.Name)}
	}
	s.Path = srcPath
	var adoptedFiles, exclude []string
	for _, e := range exportedHere {
		name := export.FileName(e.obj.Group, e.obj.Kind, e.obj.Name)
		switch e.secret {
		case export.SecretsSkip:
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "left out (Secret: needs SealedSecret, ExternalSecret or SOPS)"})
			continue
		case export.SecretsPlaceholder:
			e.file = path.Join(srcPath, name)
			files[e.file] = e.data
			exclude = append(exclude, name)
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "placeholder " + e.file + " (keys only, excluded from sync)"})
			continue
		}
		e.file = path.Join(srcPath, name)
		files[e.file] = e.data
		adoptedFiles = append(adoptedFiles, name)
		s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "exported to " + e.file})
	}
	for _, e := range inGit {
		if path.Dir(e.file) != srcPath {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is in Git at %s, outside the Application's path %s; it is not covered", e.obj.Ref(), e.file, srcPath))
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "in Git at " + e.file + " (NOT covered: outside " + srcPath + ")"})
			continue
		}
		if e.secret != "" {
			exclude = append(exclude, path.Base(e.file))
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "in Git at " + e.file + ", excluded (Secret)"})
			continue
		}
		adoptedFiles = append(adoptedFiles, path.Base(e.file))
		s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref(), "in Git at " + e.file})
	}
	include := app.Include
	if len(include) == 0 {
		others, err := otherManifests(t, srcPath, adoptedFiles, exclude, files)
		if err != nil {
			return s, err
		}
		if others {
			include = adoptedFiles
		}
	}
	sort.Strings(include)
	sort.Strings(exclude)
	opts := []string{argoapp.SyncOptionServerSideApply}
	add, why, err := a.csaMigration(app)
	if err != nil {
		return s, err
	}
	if add {
		opts = append(opts, argoapp.SyncOptionNoCSAMigration)
		s.CSAMigration = why
	} else if why != "" {
		s.Notes = append(s.Notes, why)
	}
	d := argoapp.ApplicationData{
		RepoURL: a.repoURL(app), Path: srcPath, TargetRevision: a.o.TargetRevision,
		Include: argoapp.Glob(include), Exclude: argoapp.Glob(exclude), SyncOptions: opts,
	}
	return s, a.writeApplication(app, d, &s, files)
}

// writeApplication completes d with what every Application takes from the
// plan (name, Argo CD namespace, project, destination, its objects) and
// the sync policy, renders it, and files it under the plan's apps
// directory.
func (a *Applier) writeApplication(app plan.Application, d argoapp.ApplicationData, s *AppSummary, files map[string][]byte) error {
	p := a.o.Plan
	appsDir, argoNS := Settings(p)
	d.Name, d.Namespace, d.Project, d.PlanID, d.Objects = app.Name, argoNS, project(p, app), a.id, app.Objects
	d.DestinationServer, d.DestinationName = destination(p, app)
	d.DestinationNamespace = app.Namespace
	d.AutoSync, d.Prune = a.o.AutoSync, a.o.Prune
	out, err := argoapp.RenderApplication(a.appTpl, d)
	if err != nil {
		return err
	}
	s.Application = d
	s.File = path.Join(appsDir, app.Name+".yaml")
	files[s.File] = out
	return nil
}

// repoURL is the Application's repoURL: as the plan records it, else the
// repository apply writes to.
func (a *Applier) repoURL(app plan.Application) string {
	for _, u := range []string{app.RepoURL, a.o.Plan.Settings.RepoURL} {
		if u != "" {
			return u
		}
	}
	return a.o.RepoURL
}

// RepoURL is the repoURL the plan records ("" when none).
func RepoURL(p *plan.Plan) string {
	for _, app := range p.Applications {
		if app.RepoURL != "" {
			return app.RepoURL
		}
	}
	return p.Settings.RepoURL
}

// destination is the Application's destination server or name, as the plan
// records it (per Application, else the plan's setting).
func destination(p *plan.Plan, app plan.Application) (server, name string) {
	switch {
	case app.DestinationName != "":
		return "", app.DestinationName
	case app.DestinationServer != "":
		return app.DestinationServer, ""
	}
	return ParseDestination(p.Settings.Destination)
}

// ParseDestination reads Settings.Destination: "name:<cluster>" or a
// server URL ("" means the in-cluster server).
func ParseDestination(s string) (server, name string) {
	if n, ok := strings.CutPrefix(s, "name:"); ok {
		return "", n
	}
	if s == "" {
		return argoapp.InClusterServer, ""
	}
	return s, ""
}

func project(p *plan.Plan, app plan.Application) string {
	for _, v := range []string{app.Project, p.Settings.Project} {
		if v != "" {
			return v
		}
	}
	return "default"
}

// otherManifests reports whether dir holds manifests besides the adopted
// and excluded ones, counting files already in the repo and files being
// written now.
func otherManifests(t Tree, dir string, adopted, excluded []string, files map[string][]byte) (bool, error) {
	known := map[string]bool{}
	for _, n := range adopted {
		known[n] = true
	}
	for _, n := range excluded {
		known[n] = true
	}
	other := func(f string) bool {
		base, ok := strings.CutPrefix(f, dir+"/")
		if !ok || strings.Contains(base, "/") || known[base] {
			return false
		}
		switch strings.ToLower(path.Ext(base)) {
		case ".yaml", ".yml", ".json":
			return true
		}
		return false
	}
	inRepo, err := t.Files()
	if err != nil {
		return false, err
	}
	for _, f := range inRepo {
		if other(f) {
			return true, nil
		}
	}
	for f := range files {
		if other(f) {
			return true, nil
		}
	}
	return false, nil
}

// listedTree lists a Tree's files once (Build and Fleet.Build wrap the
// tree they are given): a build renders every Application
// against the same tree, and listing a large repository for each of them
// was most of a 500-Application build.
type listedTree struct {
	Tree
	files []string
	err   error
	done  bool
}

func (l *listedTree) Files() ([]string, error) {
	if !l.done {
		l.files, l.err = l.Tree.Files()
		l.done = true
	}
	return l.files, l.err
}
