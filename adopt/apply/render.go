package apply

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// placed is one Application whose objects have their files: what it
// writes, and its Application, complete but not yet rendered.
type placed struct {
	s AppSummary
	d argoapp.ApplicationData
	// writes are its exports, in order; file is its manifest's path.
	writes []write
	file   string
	// out and err are the rendered manifest, or why it failed.
	out []byte
	err error
	// generated is set when the repo's ApplicationSet generates the
	// Application (plan.Generator): no manifest is rendered or written.
	generated bool
}

type write struct {
	path string
	data []byte
}

// renderApp places one Application's objects and renders its manifest into
// out, with every setting as the plan records it.
func (a *Applier) renderApp(t *listedTree, app plan.Application, out *output) (AppSummary, error) {
	pl, err := a.place(t, app, out)
	if err != nil {
		return pl.s, err
	}
	pl.out, pl.err = argoapp.RenderApplication(a.appTpl, pl.d)
	return pl.write(out)
}

// write files the exports and the rendered manifest of pl into out.
func (pl *placed) write(out *output) (AppSummary, error) {
	if pl.err != nil {
		return pl.s, pl.err
	}
	for _, w := range pl.writes {
		out.files[w.path] = w.data
	}
	pl.s.Application, pl.s.File = pl.d, pl.file
	if !pl.generated {
		out.files[pl.file] = pl.out
	}
	return pl.s, nil
}

// renderAll renders the placed Applications, GOMAXPROCS at a time: each is
// a template execution and a strict decode, most of a build's CPU.
func (a *Applier) renderAll(pls []*placed) {
	next := make(chan *placed)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pls)) {
		wg.Go(func() {
			for pl := range next {
				if !pl.generated {
					pl.out, pl.err = argoapp.RenderApplication(a.appTpl, pl.d)
				}
			}
		})
	}
	for _, pl := range pls {
		next <- pl
	}
	close(next)
	wg.Wait()
}

// place chooses the files of one Application's objects and completes its
// Application, naming in out what it will write.
func (a *Applier) place(t *listedTree, app plan.Application, out *output) (*placed, error) {
	if app.Source == "helm" {
		return a.placeHelm(app, out)
	}
	p := a.o.Plan
	pl := &placed{s: AppSummary{Name: app.Name, Namespace: app.Namespace, Path: app.SourcePath}}
	s := &pl.s
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
		return pl, &ContractError{msg: fmt.Sprintf("plan %s: Application %s has no source path: it would sync the repository's root. Re-run adopt plan", p.ID, app.Name)}
	}
	s.Path = srcPath
	var adoptedFiles, exclude []string
	sealedHere, esoHere := false, false
	var sopsHere []string
	for _, e := range exportedHere {
		name := export.FileName(e.obj.Group, e.obj.Kind, e.obj.Name)
		if e.sops != nil {
			e.file = e.obj.SecretForm.Sops.File
			if path.Dir(e.file) != srcPath {
				return pl, &ContractError{msg: fmt.Sprintf("plan %s encrypts %s to %s, outside Application %s's path %s; re-run adopt plan", p.ID, e.obj.Ref.String(), e.file, app.Name, srcPath)}
			}
			if err := a.encrypt(t, e); err != nil {
				return pl, err
			}
			pl.writes = append(pl.writes, write{e.file, e.data})
			adoptedFiles = append(adoptedFiles, path.Base(e.file))
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), e.sops.Where()})
			sopsHere = append(sopsHere, e.file)
			continue
		}
		if e.sealed {
			name = sealedFile(e.obj.Name)
			e.file = path.Join(srcPath, name)
			pl.writes = append(pl.writes, write{e.file, e.data})
			adoptedFiles = append(adoptedFiles, name)
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "sealed to " + e.file + " (a SealedSecret the controller at Service " + e.obj.SecretForm.Controller + " verified it decrypts; no value in Git)"})
			sealedHere = true
			continue
		}
		if e.eso {
			name = esoFile(e.obj.Name)
			e.file = path.Join(srcPath, name)
			pl.writes = append(pl.writes, write{e.file, e.data})
			adoptedFiles = append(adoptedFiles, name)
			how := "finalize --sync pushes the live value there and proves it reads back equal before the first sync"
			if e.pushed != nil {
				how = "apply --push-secrets proved, key by key, that the store gives back the live value; finalize --sync reads it back again before the first sync"
			}
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "as an ExternalSecret in " + e.file + " (reads key " + e.obj.SecretForm.RemoteKey + " of " + e.obj.SecretForm.Store + " back into the Secret; " + how + "; no value in Git)"})
			esoHere = true
			continue
		}
		switch e.secret {
		case export.SecretsSkip:
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "left out (Secret: needs SealedSecret, ExternalSecret or SOPS)"})
			continue
		case export.SecretsPlaceholder:
			e.file = path.Join(srcPath, name)
			pl.writes = append(pl.writes, write{e.file, e.data})
			exclude = append(exclude, name)
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "placeholder " + e.file + " (keys only, excluded from sync)"})
			continue
		}
		e.file = path.Join(srcPath, name)
		pl.writes = append(pl.writes, write{e.file, e.data})
		adoptedFiles = append(adoptedFiles, name)
		s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "exported to " + e.file})
	}
	for _, e := range inGit {
		if path.Dir(e.file) != srcPath {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is in Git at %s, outside the Application's path %s; it is not covered", e.obj.Ref.String(), e.file, srcPath))
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "in Git at " + e.file + " (NOT covered: outside " + srcPath + ")"})
			continue
		}
		if e.secret != "" {
			exclude = append(exclude, path.Base(e.file))
			s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "in Git at " + e.file + ", excluded (Secret)"})
			continue
		}
		adoptedFiles = append(adoptedFiles, path.Base(e.file))
		s.Objects = append(s.Objects, ObjectSummary{e.obj.Ref.String(), "in Git at " + e.file})
	}
	if app.Generator != nil {
		return pl, a.placeGenerated(t, app, pl, adoptedFiles, exclude, out)
	}
	if r := p.ArgoCD.Root; r != nil && r.HelmValues.Item(app.Name) != nil {
		return pl, a.placeByChart(t, app, pl, adoptedFiles, exclude, out)
	}
	for _, w := range pl.writes {
		out.names.add(w.path)
	}
	include := app.Include
	if app.Kustomize {
		// Argo CD builds the kustomization from the files it lists. A
		// directory include or exclude makes the source a plain directory:
		// Argo CD would then apply kustomization.yaml itself as an object.
		include, exclude = nil, nil
	} else if len(include) == 0 {
		others, err := otherManifests(t, srcPath, adoptedFiles, exclude, out)
		if err != nil {
			return pl, err
		}
		if others {
			include = adoptedFiles
		}
	}
	// An Application of this name that adopt wrote before (an earlier
	// adoption of the same group, merged) is extended, never replaced:
	// what it adopted stays in its objects and its include.
	prev, err := a.previous(t, app, srcPath)
	if err != nil {
		return pl, err
	}
	if prev == nil && app.Extends != "" {
		appsDir, _ := Settings(a.o.Plan)
		return pl, &ContractError{msg: fmt.Sprintf("the plan extends Application %s with %s (finding %s), and %s holds no file of it that adopt wrote syncing %s to %s: apply never writes a second Application over one that exists; add the objects to %s by hand, or remove it, then plan again",
			app.Extends, app.Name, plan.CodeExtends, appsDir, srcPath, app.Namespace, app.Extends)}
	}
	if prev != nil {
		include = prev.extend(include)
		renamed := ""
		if prev.name != app.Name {
			renamed = " (the plan's " + app.Name + ", renamed when it was merged)"
		}
		s.Notes = append(s.Notes, fmt.Sprintf("extends Application %s%s, which %s already defines: it keeps adopting %s", prev.name, renamed, prev.file, strings.Join(prev.objects, ", ")))
	}
	sort.Strings(include)
	sort.Strings(exclude)
	ignore, opts := ignoreDifferences(app, s, nil, []string{argoapp.SyncOptionServerSideApply})
	if opts, err = a.csaOption(app, s, opts); err != nil {
		return pl, err
	}
	d := argoapp.ApplicationData{
		RepoURL: a.repoURL(app), Path: srcPath, TargetRevision: a.o.TargetRevision,
		Include: argoapp.Glob(include), Exclude: argoapp.Glob(exclude), SyncOptions: opts, IgnoreDifferences: ignore,
	}
	a.complete(pl, app, d, out)
	if sealedHere && pl.d.AutoSync {
		// The controller takes a Secret over only if the mark is on it
		// before it unseals: the first sync must wait for finalize.
		pl.d.AutoSync, pl.d.Prune = false, false
		s.Notes = append(s.Notes, "written without automated sync, though --auto-sync was given: it holds a SealedSecret, and the Secret must be marked managed before the first sync applies it (or the controller refuses to take the Secret over). Run adopt finalize --sync after the merge: it marks, syncs, and proves the takeover; turn automated sync on afterwards")
	}
	if len(sopsHere) > 0 {
		s.Notes = append(s.Notes, sopsNote(sopsHere))
	}
	if esoHere && pl.d.AutoSync {
		// The store must hold the value before the ExternalSecret reads
		// it: the first sync must wait for finalize's push.
		pl.d.AutoSync, pl.d.Prune = false, false
		s.Notes = append(s.Notes, "written without automated sync, though --auto-sync was given: it holds an ExternalSecret, and before the first sync applies it the store must hold the Secret's value, proven equal to the live one as it is then (the sync writes the store's value over the Secret). Run adopt finalize --sync after the merge: it pushes the value (or finds it there, pushed by apply --push-secrets, and refuses a Secret changed since the plan), proves it reads back equal, syncs, and proves the takeover; turn automated sync on afterwards")
	}
	if prev != nil {
		pl.d.Objects = union(prev.objects, app.Objects)
		pl.d.Name, pl.file = prev.name, prev.file
		pl.d.PlanIDs = append(slices.DeleteFunc(slices.Clone(prev.planIDs), func(id string) bool { return id == a.id }), a.id)
		out.names.add(prev.file)
	}
	return pl, nil
}

// baseReader is a Tree that reads a file of another branch: a
// gitops.Repo reads the base branch's.
type baseReader interface {
	BranchFile(branch, p string) ([]byte, bool, error)
}

// previousApp is an Application file adopt wrote before for a plan's
// Application: its name, the objects it adopts and the files its
// directory include names (none: it reads its whole path).
type previousApp struct {
	file, name string
	objects    []string
	include    []string
	// planIDs are the adoptions' ids its annotation lists.
	planIDs []string
}

// previous reads the Application file adopt wrote before (adopt.dev/objects)
// for app, as merged: the file of app's name, else (renamed in review, the
// file or the Application) the one of the apps directory that syncs the
// same repository and path to app's namespace. A file of app's name that
// reads another repository or path, or is not adopt's, is never replaced:
// that is a refusal naming the file.
func (a *Applier) previous(t *listedTree, app plan.Application, srcPath string) (*previousApp, error) {
	appsDir := AppFilesDir(a.o.Plan)
	names, err := t.inDir(appsDir)
	if err != nil {
		return nil, err
	}
	own := app.Name + ".yaml"
	if slices.Contains(names, own) {
		return a.previousIn(t, app, srcPath, path.Join(appsDir, own), true)
	}
	for _, n := range names {
		if ext := strings.ToLower(path.Ext(n)); ext != ".yaml" && ext != ".yml" {
			continue
		}
		if p, err := a.previousIn(t, app, srcPath, path.Join(appsDir, n), false); err != nil || p != nil {
			return p, err
		}
	}
	return nil, nil
}

// previousIn reads file as previous does. With strict, a file that is not
// app's previous Application is refused; without, it is none (nil).
func (a *Applier) previousIn(t *listedTree, app plan.Application, srcPath, file string, strict bool) (*previousApp, error) {
	b, err := t.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// What was merged is what the base branch holds: a file only the
	// group's own branch holds is this pull request's earlier version,
	// which an update replaces.
	if br, ok := t.Tree.(baseReader); ok && a.o.TargetRevision != "" {
		onBase, merged, err := br.BranchFile(a.o.TargetRevision, file)
		if err != nil {
			return nil, err
		}
		if !merged {
			return nil, nil
		}
		b = onBase
	}
	prev, err := argoapp.DecodeApplication(b)
	refuse := func(why string) error {
		if !strict {
			return nil
		}
		return &ContractError{msg: fmt.Sprintf("%s already defines Application %s, %s; apply never replaces an Application (what it adopts would no longer be tracked, and with prune deleted): name this group otherwise (adopt.yaml naming) or add its objects to %s by hand", file, app.Name, why, file)}
	}
	if !strict && err == nil && prev.Spec.Destination.Namespace != app.Namespace {
		return nil, nil
	}
	switch {
	case err != nil:
		return nil, refuse("which does not decode (" + err.Error() + ")")
	case prev.Annotations["adopt.dev/objects"] == "":
		return nil, refuse("which adopt did not write")
	case prev.Spec.Source == nil || prev.Spec.Source.Chart != "" || strings.TrimSuffix(prev.Spec.Source.Path, "/") != srcPath:
		return nil, refuse("which syncs another source than " + srcPath)
	case !argoapp.SameRepo(prev.Spec.Source.RepoURL, a.repoURL(app)):
		return nil, refuse("which reads repository " + prev.Spec.Source.RepoURL)
	}
	p := &previousApp{file: file, name: prev.Name, objects: strings.Split(prev.Annotations["adopt.dev/objects"], ", ")}
	for _, id := range strings.Split(prev.Annotations[argoapp.PlanIDLabel], ",") {
		if id = strings.TrimSpace(id); id != "" {
			p.planIDs = append(p.planIDs, id)
		}
	}
	if d := prev.Spec.Source.Directory; d != nil {
		p.include = argoapp.GlobNames(d.Include)
	}
	return p, nil
}

// extend is the include of the extended Application: none when either
// reads its whole path, else both lists' files.
func (p *previousApp) extend(include []string) []string {
	if len(p.include) == 0 || len(include) == 0 {
		return nil
	}
	return union(p.include, include)
}

// union is a's and b's strings, each once, sorted.
func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// complete sets pl's Application to d with what every Application takes
// from the plan (name, Argo CD namespace, project, destination, its
// objects) and the sync policy, filed under the plan's apps directory.
func (a *Applier) complete(pl *placed, app plan.Application, d argoapp.ApplicationData, out *output) {
	p := a.o.Plan
	_, argoNS := Settings(p)
	appsDir := AppFilesDir(p)
	d.Name, d.Namespace, d.Project, d.PlanID, d.Objects = app.Name, argoNS, project(p, app), a.id, app.Objects
	d.DestinationServer, d.DestinationName = destination(p, app)
	d.DestinationNamespace = app.Namespace
	d.AutoSync, d.Prune = a.o.AutoSync, a.o.Prune
	pl.d, pl.file = d, path.Join(appsDir, app.Name+".yaml")
	pl.s.Reach = reach(p, app, pl.file, argoNS)
	out.names.add(pl.file)
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
// written now (out's names).
func otherManifests(t *listedTree, dir string, adopted, excluded []string, out *output) (bool, error) {
	known := map[string]bool{}
	for _, n := range adopted {
		known[n] = true
	}
	for _, n := range excluded {
		known[n] = true
	}
	inRepo, err := t.inDir(dir)
	if err != nil {
		return false, err
	}
	for _, names := range [][]string{inRepo, out.names[dir]} {
		for _, n := range names {
			if known[n] {
				continue
			}
			switch strings.ToLower(path.Ext(n)) {
			case ".yaml", ".yml", ".json":
				return true, nil
			}
		}
	}
	return false, nil
}

// dirIndex holds file names by the directory they are directly in: the
// part of the path before its last slash (paths without one are left out).
type dirIndex map[string][]string

func (x dirIndex) add(f string) {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		x[f[:i]] = append(x[f[:i]], f[i+1:])
	}
}

// output is the files a build writes and, as soon as they are placed
// (before they are rendered), their names by directory.
type output struct {
	files map[string][]byte
	names dirIndex
}

func newOutput(files map[string][]byte) *output {
	o := &output{files: files, names: dirIndex{}}
	for f := range files {
		o.names.add(f)
	}
	return o
}

// listedTree lists a Tree's files once (Build and Fleet.Build wrap the
// tree they are given) and indexes them by directory: a build renders
// every Application against the same tree, and listing a large repository
// for each of them, or scanning its list, was most of a 500-Application
// build.
type listedTree struct {
	Tree
	files []string
	dirs  dirIndex
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

// inDir is the names of the tree's files directly in dir.
func (l *listedTree) inDir(dir string) ([]string, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	if l.dirs == nil {
		l.dirs = dirIndex{}
		for _, f := range files {
			l.dirs.add(f)
		}
	}
	return l.dirs[dir], nil
}
