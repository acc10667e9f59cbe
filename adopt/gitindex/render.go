package gitindex

import (
	"fmt"
	"path"
	"strings"

	"github.com/gobwas/glob"
)

// Directory is a directory source's settings, as an Application's
// spec.source.directory sets them.
type Directory struct {
	Recurse          bool
	Include, Exclude string
}

// Render returns what an Argo CD source at dir (relative to the repo root)
// renders from this repo, deciding the source's type as the repo-server
// does: a directory with a kustomization is built with kustomize, one with
// a Chart.yaml is a Helm chart, any other is a directory source whose files
// (below dir with Recurse) are kept when their path relative to dir
// matches Include and does not match Exclude (Argo CD's globs, where *
// also matches /). A source adopt cannot render returns an error saying
// why; it never guesses.
func (ix *Index) Render(dir string, d Directory) ([]*Manifest, error) {
	dir = path.Clean(strings.TrimPrefix(dir, "/"))
	switch {
	case ix.kust[dir]:
		if why := ix.unrenderable[dir]; why != "" {
			return nil, fmt.Errorf("%s", why)
		}
		return ix.renders[dir], nil
	case ix.charts[dir]:
		return nil, fmt.Errorf("%s is a Helm chart in Git: render it with Chart", dir)
	}
	reads, err := d.reader(dir)
	if err != nil {
		return nil, err
	}
	for _, j := range ix.jsonnet {
		if reads(j) {
			return nil, fmt.Errorf("the directory source evaluates Jsonnet (%s): not rendered by adopt", j)
		}
	}
	var out []*Manifest
	for _, m := range ix.docs {
		if reads(m.Path) {
			out = append(out, m)
		}
	}
	return out, nil
}

// Reads says whether a directory source at dir with these settings reads
// file (both relative to the repo root): a YAML, YAML or JSON file in dir,
// or below it with Recurse, whose path relative to dir matches Include and
// not Exclude.
func (d Directory) Reads(dir, file string) (bool, error) {
	reads, err := d.reader(path.Clean(strings.TrimPrefix(dir, "/")))
	if err != nil {
		return false, err
	}
	return IsManifestFile(file) && reads(file), nil
}

func (d Directory) reader(dir string) (func(string) bool, error) {
	var inc, exc glob.Glob
	var err error
	if d.Include != "" {
		if inc, err = glob.Compile(d.Include); err != nil {
			return nil, fmt.Errorf("directory.include %q: %v", d.Include, err)
		}
	}
	if d.Exclude != "" {
		if exc, err = glob.Compile(d.Exclude); err != nil {
			return nil, fmt.Errorf("directory.exclude %q: %v", d.Exclude, err)
		}
	}
	return func(p string) bool {
		rel, ok := below(dir, p)
		switch {
		case !ok || !d.Recurse && strings.Contains(rel, "/"):
			return false
		case exc != nil && exc.Match(rel), inc != nil && !inc.Match(rel):
			return false
		}
		return true
	}, nil
}

// IsChart says whether dir holds a Chart.yaml: Argo CD renders it with
// Helm (see Chart).
func (ix *Index) IsChart(dir string) bool {
	return ix.charts[path.Clean(strings.TrimPrefix(dir, "/"))]
}

// below returns p relative to dir when p lies under dir.
func below(dir, p string) (string, bool) {
	if dir == "." {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, dir+"/")
	return rel, ok
}
