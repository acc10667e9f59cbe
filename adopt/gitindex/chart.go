package gitindex

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Chart loads the Helm chart in dir (a directory holding Chart.yaml) from
// the repo's files, as Argo CD's repo-server reads a chart in Git. A
// dependency that Chart.yaml lists and charts/ does not hold is an error:
// the repo-server would fetch it, adopt does not.
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
		for _, d := range ch.Metadata.Dependencies {
			if !hasDependency(ch, d.Name, d.Alias) {
				return nil, fmt.Errorf("chart %s: dependency %s %s is not vendored in %s/charts; run `helm dependency build` and commit it, or adopt cannot render the chart", dir, d.Name, d.Version, dir)
			}
		}
	}
	return ch, nil
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
