package helmrelease

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"k8s.io/client-go/discovery"
)

// Renderer fetches charts and renders them with Helm's engine as Argo CD's
// repo-server does (`helm template` of the chart at a version, with the
// release name, namespace and values).
type Renderer struct {
	// KubeVersion is the cluster's version (for .Capabilities); "" for
	// Helm's default.
	KubeVersion string
	// APIVersions are the cluster's group/versions and group/version/kinds
	// (for .Capabilities.APIVersions.Has).
	APIVersions []string
	// SkipCRDs leaves the chart's crds/ out, as helm template does
	// without --include-crds (Argo CD's helm.skipCrds).
	SkipCRDs bool
}

// Fetch downloads chart at version from src: an http(s) chart repository
// (its index.yaml, then the chart archive) or an OCI registry. It writes
// only to a temporary directory, removed before it returns.
func Fetch(ctx context.Context, src Source, version string) (*chart.Chart, error) {
	settings := cli.New()
	tmp, err := os.MkdirTemp("", "adopt-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var ref string
	var g getter.Getter
	if strings.HasPrefix(src.RepoURL, "oci://") {
		rc, err := registry.NewClient(registry.ClientOptCredentialsFile(settings.RegistryConfig))
		if err != nil {
			return nil, fmt.Errorf("OCI registry client for %s: %w", src.RepoURL, err)
		}
		if g, err = getter.NewOCIGetter(getter.WithRegistryClient(rc)); err != nil {
			return nil, err
		}
		ref = strings.TrimSuffix(src.RepoURL, "/") + "/" + src.Chart + ":" + version
	} else {
		providers := getter.All(settings)
		cr, err := repo.NewChartRepository(&repo.Entry{Name: "adopt", URL: src.RepoURL}, providers)
		if err != nil {
			return nil, fmt.Errorf("chart repository %s: %w", src.RepoURL, err)
		}
		cr.CachePath = tmp
		idxPath, err := cr.DownloadIndexFile()
		if err != nil {
			return nil, fmt.Errorf("read the index of chart repository %s: %w", src.RepoURL, err)
		}
		idx, err := repo.LoadIndexFile(idxPath)
		if err != nil {
			return nil, fmt.Errorf("chart repository %s: %w", src.RepoURL, err)
		}
		cv, err := idx.Get(src.Chart, version)
		if err != nil || len(cv.URLs) == 0 {
			return nil, fmt.Errorf("chart %s %s is not in the index of %s", src.Chart, version, src.RepoURL)
		}
		if ref, err = repo.ResolveReferenceURL(src.RepoURL, cv.URLs[0]); err != nil {
			return nil, err
		}
		u, err := url.Parse(ref)
		if err != nil {
			return nil, err
		}
		if g, err = providers.ByScheme(u.Scheme); err != nil {
			return nil, fmt.Errorf("chart %s: %w", ref, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf, err := g.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("download chart %s: %w", ref, err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", ref, err)
	}
	if ch.Metadata == nil || ch.Metadata.Version != version {
		return nil, fmt.Errorf("chart %s is not version %s", ref, version)
	}
	return ch, nil
}

// Rendered is a chart rendered for one release.
type Rendered struct {
	// Manifest is the non-hook objects, as a release stores them.
	Manifest string
	Hooks    []Hook
}

// Render renders ch as release name in namespace with values, client-side
// only: nothing is sent to the cluster.
func (r Renderer) Render(ch *chart.Chart, name, namespace string, values map[string]any) (Rendered, error) {
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = name, namespace
	inst.IncludeCRDs = !r.SkipCRDs
	inst.DisableHooks = false
	if r.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(r.KubeVersion)
		if err != nil {
			return Rendered{}, fmt.Errorf("kube version %q: %w", r.KubeVersion, err)
		}
		inst.KubeVersion = kv
	}
	inst.APIVersions = r.APIVersions
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return Rendered{}, fmt.Errorf("render chart %s %s as release %s: %w", ch.Metadata.Name, ch.Metadata.Version, name, err)
	}
	out := Rendered{Manifest: rel.Manifest}
	for _, h := range rel.Hooks {
		hk := Hook{Name: h.Name, Kind: h.Kind}
		for _, e := range h.Events {
			hk.Events = append(hk.Events, string(e))
		}
		out.Hooks = append(out.Hooks, hk)
	}
	return out, nil
}

// APIVersions lists what the cluster serves as Argo CD passes it to helm
// template (--api-versions, from its cluster cache): every group/version
// and group/version/Kind of a resource that can be listed and watched,
// subresources left out (Argo CD's resource exclusions, which can drop
// more, are not read). A group/version that cannot be read is left out too, as
// discovery's partial answer leaves it.
func APIVersions(d discovery.DiscoveryInterface) []string {
	_, lists, _ := d.ServerGroupsAndResources()
	seen := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") {
				continue
			}
			seen[l.GroupVersion] = true
			seen[l.GroupVersion+"/"+r.Kind] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
