package plan

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	jsonpatch "github.com/evanphx/json-patch"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/argoapp"
)

// RenderSource renders one source of an existing Application from the
// plan's repo (ix, at the source's revision) as Argo CD's repo-server
// would: the parameter override files merged in (withOverrides), then the
// tool sourceType chooses: a chart with Helm (see renderChart), a
// kustomization or a directory with gitindex. A chart's values from a ref
// source are read at its targetRevision through revs. A source adopt
// cannot render returns an error saying why.
func RenderSource(ix *gitindex.Index, revs Revisions, charts helmrelease.Renderer, s argoapp.Spec, src v1alpha1.ApplicationSource, repoURL string) ([]*gitindex.Manifest, error) {
	src, err := withOverrides(ix, s, src)
	if err != nil {
		return nil, err
	}
	t, err := sourceType(ix, src)
	if err != nil {
		return nil, err
	}
	dir := path.Clean(strings.TrimPrefix(src.Path, "/"))
	switch t {
	case v1alpha1.ApplicationSourceTypePlugin:
		return nil, fmt.Errorf("a config management plugin source: not rendered by adopt")
	case v1alpha1.ApplicationSourceTypeHelm:
		if !ix.IsChart(dir) {
			return nil, fmt.Errorf("a Helm source at %s, which holds no Chart.yaml: Argo CD cannot render it either", src.Path)
		}
		return renderChart(ix, revs, charts, s, src, repoURL)
	case v1alpha1.ApplicationSourceTypeKustomize:
		if !src.Kustomize.IsZero() {
			return nil, fmt.Errorf("kustomize settings in the Application (namePrefix, images, patches, …): not rendered by adopt")
		}
		if ix.InKustomization(dir) == "" {
			return nil, fmt.Errorf("a Kustomize source at %s, which holds no kustomization: Argo CD cannot render it either", src.Path)
		}
		return ix.Render(dir, gitindex.Directory{})
	}
	// A directory source named in the Application reads the files of a
	// kustomization or chart directory as plain manifests (the
	// kustomization file and templates included), which adopt does not.
	if ix.InKustomization(dir) != "" || ix.IsChart(dir) {
		return nil, fmt.Errorf("a directory source over the kustomization or chart at %s: not rendered by adopt", src.Path)
	}
	return ix.Render(dir, directoryOf(src))
}

// sourceType is the tool the repo-server renders src with
// (GetAppSourceType): the one the source names (helm, kustomize,
// directory or plugin; naming two is Argo CD's error too), else a
// kustomization in the path, else a Chart.yaml (with both, kustomize
// wins: the repo-server's discovery sees the kustomization last), else a
// directory.
func sourceType(ix *gitindex.Index, src v1alpha1.ApplicationSource) (v1alpha1.ApplicationSourceType, error) {
	t, err := src.ExplicitType()
	switch {
	case err != nil:
		return "", err
	case t != nil:
		return *t, nil
	}
	dir := path.Clean(strings.TrimPrefix(src.Path, "/"))
	switch {
	case ix.InKustomization(dir) != "":
		return v1alpha1.ApplicationSourceTypeKustomize, nil
	case ix.IsChart(dir):
		return v1alpha1.ApplicationSourceTypeHelm, nil
	}
	return v1alpha1.ApplicationSourceTypeDirectory, nil
}

// withOverrides is src with the parameter override files in its path
// merged in as JSON merge patches, as the repo-server merges them
// (mergeSourceParameters): .argocd-source.yaml, then
// .argocd-source-<instance>.yaml. Only the tool's settings change: the
// repo, path, chart and revision stay.
func withOverrides(ix *gitindex.Index, s argoapp.Spec, src v1alpha1.ApplicationSource) (v1alpha1.ApplicationSource, error) {
	instance := s.Instance
	if instance == "" {
		instance = s.Name
	}
	merged := *src.DeepCopy()
	for _, o := range ix.SourceOverrides(src.Path, instance) {
		data, err := json.Marshal(merged)
		if err == nil {
			var patch []byte
			if patch, err = yaml.YAMLToJSON(o.Data); err == nil {
				data, err = jsonpatch.MergePatch(data, patch)
			}
		}
		if err == nil {
			merged = v1alpha1.ApplicationSource{}
			err = json.Unmarshal(data, &merged)
		}
		if err != nil {
			return src, fmt.Errorf("parameter override file %s: %v", o.Path, err)
		}
	}
	merged.Chart, merged.Path, merged.RepoURL, merged.TargetRevision = src.Chart, src.Path, src.RepoURL, src.TargetRevision
	return merged, nil
}

// appEnv is the build environment the repo-server substitutes in value
// file paths and parameter values ($ARGOCD_APP_NAME and the rest, newEnv
// in its repository.go), for source src of s read at commit revision.
func appEnv(s argoapp.Spec, src v1alpha1.ApplicationSource, revision string) v1alpha1.Env {
	instance := s.Instance
	if instance == "" {
		instance = s.Name
	}
	short := func(n int) string { return revision[:min(n, len(revision))] }
	return v1alpha1.Env{
		{Name: "ARGOCD_APP_NAME", Value: instance},
		{Name: "ARGOCD_APP_NAMESPACE", Value: s.Destination},
		{Name: "ARGOCD_APP_REVISION", Value: revision},
		{Name: "ARGOCD_APP_REVISION_SHORT", Value: short(7)},
		{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: short(8)},
		{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: src.RepoURL},
		{Name: "ARGOCD_APP_SOURCE_PATH", Value: src.Path},
		{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: src.TargetRevision},
	}
}
