package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/argoapp"
)

// renderChart renders an existing Application's Helm chart in Git the way
// Argo CD's repo-server runs `helm template`: release name (the
// Application's name unless helm.releaseName), the destination namespace
// (unless helm.namespace), values files in order (relative to the chart,
// or $<ref>/… from a multi-source Application's ref source), then
// valuesObject or values, then parameters (--set, or --set-string with
// forceString). Hooks are left out, as Argo CD runs them as its own hooks.
// A ref source is read at its targetRevision through revs.
func renderChart(ix *gitindex.Index, revs Revisions, r helmrelease.Renderer, s argoapp.Spec, src v1alpha1.ApplicationSource, repoURL string) ([]*gitindex.Manifest, error) {
	out, err := renderGitChart(ix, revs, r, s, src, repoURL)
	if err != nil {
		return nil, err
	}
	ms, err := gitindex.Documents(path.Join(path.Clean(src.Path), "Chart.yaml"), []byte(out.Manifest))
	if err != nil {
		return nil, fmt.Errorf("chart %s rendered YAML that does not parse: %v", src.Path, err)
	}
	for _, m := range ms {
		m.Line, m.Render = 0, path.Clean(src.Path)
	}
	return ms, nil
}

// renderGitChart renders the chart in Git at src.Path as renderChart says.
func renderGitChart(ix *gitindex.Index, revs Revisions, r helmrelease.Renderer, s argoapp.Spec, src v1alpha1.ApplicationSource, repoURL string) (helmrelease.Rendered, error) {
	ch, err := ix.Chart(src.Path)
	if err != nil {
		return helmrelease.Rendered{}, err
	}
	h := src.Helm
	if h == nil {
		h = &v1alpha1.ApplicationSourceHelm{}
	}
	if len(h.FileParameters) > 0 {
		return helmrelease.Rendered{}, fmt.Errorf("helm.fileParameters: not rendered by adopt")
	}
	env := appEnv(s, src, ix.Revision)
	values := map[string]any{}
	for _, vf := range h.ValueFiles {
		p, ref, err := valuesFile(vf, src.Path, s.Sources, repoURL, env)
		if err != nil {
			return helmrelease.Rendered{}, err
		}
		vix := ix
		if ref != nil {
			// A ref source is read at its own targetRevision.
			if vix, err = revs.at(ix, ref.TargetRevision); err != nil {
				return helmrelease.Rendered{}, fmt.Errorf("values file %s: %v", vf, err)
			}
		}
		b, err := vix.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) && h.IgnoreMissingValueFiles {
			continue
		}
		if err != nil {
			return helmrelease.Rendered{}, fmt.Errorf("values file %s: %v", vf, err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(b, &m); err != nil {
			return helmrelease.Rendered{}, fmt.Errorf("values file %s: %v", p, err)
		}
		mergeValues(values, m)
	}
	if b := h.ValuesYAML(); len(b) > 0 {
		m := map[string]any{}
		if err := yaml.Unmarshal(b, &m); err != nil {
			return helmrelease.Rendered{}, fmt.Errorf("helm values: %v", err)
		}
		mergeValues(values, m)
	}
	for _, p := range h.Parameters {
		set := strvals.ParseInto
		if p.ForceString {
			set = strvals.ParseIntoString
		}
		if err := set(p.Name+"="+escapeCommas(env.Envsubst(p.Value)), values); err != nil {
			return helmrelease.Rendered{}, fmt.Errorf("helm parameter %s: %v", p.Name, err)
		}
	}
	release, ns := s.Name, s.Destination
	if h.ReleaseName != "" {
		release = h.ReleaseName
	}
	if h.Namespace != "" {
		ns = h.Namespace
	}
	if h.KubeVersion != "" {
		r.KubeVersion = h.KubeVersion
	}
	if len(h.APIVersions) > 0 {
		r.APIVersions = h.APIVersions
	}
	r.SkipCRDs = h.SkipCrds
	return r.Render(ch, release, ns, values)
}

// escapeCommas escapes a parameter value's commas as Argo CD does before
// --set (cleanSetParameters in its util/helm): a comma not already
// escaped with a backslash is part of the value, not a separator, unless
// the value is a {…} list.
func escapeCommas(v string) string {
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return v
	}
	var b strings.Builder
	var prev rune
	for _, r := range v {
		if r == ',' && prev != '\\' {
			b.WriteString(`\,`)
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// valuesFile is the repo path of a values file as the repo-server resolves
// it: $ARGOCD_APP_* substituted (env), then relative to the chart, or to
// the repo's root when it starts with /, or $<ref>/<path> in the repo of
// the source whose ref is <ref> (returned), substituted after the ref is
// taken off. A path that leaves the repo is refused, as Argo CD refuses it.
func valuesFile(vf, chartDir string, sources []v1alpha1.ApplicationSource, repoURL string, env v1alpha1.Env) (string, *v1alpha1.ApplicationSource, error) {
	if ref, rest, _ := strings.Cut(vf, "/"); strings.HasPrefix(ref, "$") {
		for i, s := range sources {
			if s.Ref == "" || "$"+s.Ref != ref {
				continue
			}
			if !inRepo(s, repoURL) {
				return "", nil, fmt.Errorf("values file %s is in %s, not the plan's repo: not rendered by adopt", vf, s.RepoURL)
			}
			p, err := inRepoPath(vf, strings.TrimPrefix(env.Envsubst("/"+rest), "/"))
			return p, &sources[i], err
		}
	}
	// Not a ref source's: $… is a variable like any other.
	p := env.Envsubst(vf)
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		return "", nil, fmt.Errorf("values file %s is a URL: not rendered by adopt", vf)
	}
	if path.IsAbs(p) {
		p = strings.TrimPrefix(p, "/")
	} else {
		p = path.Join(chartDir, p)
	}
	p, err := inRepoPath(vf, p)
	return p, nil, err
}

// inRepoPath is rel (a path from the repo's root, with no leading /)
// cleaned, or an error when it leaves the repo.
func inRepoPath(vf, rel string) (string, error) {
	rel = path.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("values file %s is outside the repository: Argo CD refuses it", vf)
	}
	return rel, nil
}

// mergeValues merges src into dst as Helm merges values files: maps merge
// key by key, anything else replaces.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
