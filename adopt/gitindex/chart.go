package gitindex

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// Chart loads the Helm chart in dir (a directory holding Chart.yaml) from
// the repo's files, as Argo CD's repo-server reads a chart in Git. A
// dependency that Chart.yaml lists and charts/ does not hold is a
// *DependencyError (with the chart as loaded): the repo-server would fetch
// it, adopt does not.
func (ix *Index) Chart(dir string) (*chart.Chart, error) {
	dir = path.Clean(strings.TrimPrefix(dir, "/"))
	if !ix.charts[dir] || ix.fs == nil {
		return nil, fmt.Errorf("%s holds no Chart.yaml", dir)
	}
	var files []*loader.BufferedFile
	err := ix.fs.Walk("/"+dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := ix.fs.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("/"+dir, p)
		files = append(files, &loader.BufferedFile{Name: filepath.ToSlash(rel), Data: b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read chart %s: %v", dir, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %v", dir, err)
	}
	if ch.Metadata != nil {
		de := &DependencyError{Dir: dir}
		for _, d := range ch.Metadata.Dependencies {
			if !hasDependency(ch, d.Name, d.Alias) {
				de.Missing = append(de.Missing, d)
			}
		}
		if len(de.Missing) > 0 {
			return ch, de
		}
	}
	return ch, nil
}

// DependencyError is a chart whose Chart.yaml lists dependencies that its
// charts/ directory does not hold (neither unpacked nor as a .tgz). Argo
// CD's repo-server runs `helm dependency build` itself before it renders
// such a chart; adopt downloads nothing, so it cannot render it.
type DependencyError struct {
	// Dir is the chart directory; Missing the dependencies not vendored.
	Dir     string
	Missing []*chart.Dependency
}

func (e *DependencyError) Error() string {
	var deps []string
	for _, d := range e.Missing {
		s := d.Name + " " + d.Version
		if d.Repository != "" {
			s += " from " + d.Repository
		}
		deps = append(deps, s)
	}
	what := "dependency " + deps[0] + " is"
	if len(deps) > 1 {
		what = "dependencies " + strings.Join(deps, ", ") + " are"
	}
	return fmt.Sprintf("chart %s: %s not vendored in %s/charts, and adopt downloads no dependency, so it cannot render the chart; run `helm dependency build %s` and commit %s/charts",
		e.Dir, what, e.Dir, e.Dir, e.Dir)
}

// ChartDirs returns the chart directories whose Chart.yaml names chart at
// version, in path order. A chart vendored in another chart's charts/
// directory is left out: Helm renders it as part of its parent.
func (ix *Index) ChartDirs(name, version string) []string {
	var out []string
	for dir := range ix.charts {
		if parent := path.Dir(dir); path.Base(parent) == "charts" && ix.charts[path.Dir(parent)] {
			continue
		}
		b, err := ix.ReadFile(path.Join(dir, "Chart.yaml"))
		if err != nil {
			continue
		}
		var md chart.Metadata
		if yaml.Unmarshal(b, &md) != nil || md.Name != name || md.Version != version {
			continue
		}
		out = append(out, dir)
	}
	sort.Strings(out)
	return out
}

// ValuesFiles lists the files of the chart in dir that a release could
// have been installed with (`helm install -f`): every .yaml and .yml file
// below dir except Chart.yaml, Chart.lock, requirements.yaml and what
// templates/, charts/ and crds/ hold; relative to dir, in path order.
func (ix *Index) ValuesFiles(dir string) []string {
	dir = path.Clean(strings.TrimPrefix(dir, "/"))
	if !ix.charts[dir] || ix.fs == nil {
		return nil
	}
	var out []string
	_ = ix.fs.Walk("/"+dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel("/"+dir, p)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			switch rel {
			case "templates", "charts", "crds":
				return filepath.SkipDir
			}
			return nil
		}
		switch rel {
		case "Chart.yaml", "Chart.lock", "requirements.yaml":
			return nil
		}
		if ext := path.Ext(rel); ext == ".yaml" || ext == ".yml" {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func hasDependency(ch *chart.Chart, name, alias string) bool {
	for _, d := range ch.Dependencies() {
		if d.Name() == name || alias != "" && d.Name() == alias {
			return true
		}
	}
	return false
}

// ReadFile returns a file of the repo kept for rendering (a values file).
func (ix *Index) ReadFile(p string) ([]byte, error) {
	if ix.fs == nil {
		return nil, fmt.Errorf("%s: the repo's files were not kept", p)
	}
	return ix.fs.ReadFile("/" + path.Clean(strings.TrimPrefix(p, "/")))
}

// Documents parses a rendered YAML stream into manifests, each with path
// p and the line it starts on. What is not a Kubernetes object is left out.
func Documents(p string, data []byte) ([]*Manifest, error) {
	ix := New()
	ix.fs = nil
	if err := ix.addDocs(p, data); err != nil {
		return nil, err
	}
	return ix.manifests, nil
}
