// Package helmrelease owns everything Helm in adopt, through Helm's own
// library (helm.sh/helm/v3): reading a release's newest deployed revision
// from Helm's storage (the sh.helm.release.v1.<name>.v<N> Secrets, or
// ConfigMaps), finding where its chart comes from (adopt.yaml
// helmRepositories, then the user's Helm repository config and cached
// indexes), replacing secret-like values with placeholders, and rendering the
// chart with Helm's engine to compare it, object by object, with the manifest
// the release recorded.
//
// It only reads: it never changes or deletes a release record, never
// installs, and the only secret-bearing fields it returns (Release.Config and
// Release.Manifest) are for comparison in memory; what goes into a plan is
// Redact's output.
package helmrelease

import (
	"context"
	"fmt"
	"sort"
	"strings"

	rspb "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
)

// Storage drivers Helm keeps release records with.
const (
	StorageSecret    = "Secret"
	StorageConfigMap = "ConfigMap"
)

// Release is the newest deployed revision of one Helm release.
type Release struct {
	Name      string
	Namespace string
	Revision  int
	// Chart and Version are the chart's name and version; AppVersion its
	// appVersion.
	Chart, Version, AppVersion string
	// Config is the user-supplied values (helm install -f/--set), not the
	// computed ones. It may hold secrets: never persist it, use Redact.
	Config map[string]any
	// Manifest is what Helm applied (hooks excluded). It may hold Secret
	// data: never persist it.
	Manifest string
	// HookManifest is what the release's hooks applied, one document a
	// hook. It may hold Secret data: never persist it.
	HookManifest string
	Hooks        []Hook
	// Storage is StorageSecret or StorageConfigMap; Records the names of
	// every record of the release (all revisions), oldest first.
	Storage string
	Records []string
	// Newer says when a revision newer than this one exists that is not
	// deployed (a failed or pending upgrade); "" when none.
	Newer string
}

// Hook is one Helm hook of the release.
type Hook struct {
	Name           string   `json:"name" yaml:"name"`
	Kind           string   `json:"kind" yaml:"kind"`
	Events         []string `json:"events" yaml:"events"`
	DeletePolicies []string `json:"deletePolicies,omitempty" yaml:"deletePolicies,omitempty"`
}

// Key is namespace/name, how releases are looked up.
func Key(namespace, name string) string { return namespace + "/" + name }

// IsRecord reports whether an object is one of Helm's release records (a
// Secret of type helm.sh/release.v1 or a ConfigMap, labelled owner=helm, named
// sh.helm.release.v1.<name>.v<N>). Records are Helm's bookkeeping, never
// workloads to adopt.
func IsRecord(kind string, name string, labels map[string]string) bool {
	return (kind == "Secret" || kind == "ConfigMap") && labels["owner"] == "helm" && strings.HasPrefix(name, "sh.helm.release.v1.")
}

// Read returns the newest deployed revision of every release in namespace
// ("" for all namespaces) from both storage drivers, keyed by Key. A release
// with no deployed revision is left out.
func Read(ctx context.Context, kube kubernetes.Interface, namespace string) (map[string]*Release, error) {
	all := map[string][]*rspb.Release{}
	storage := map[string]string{}
	keep := func(*rspb.Release) bool { return true }
	sec := driver.NewSecrets(kube.CoreV1().Secrets(namespace))
	rels, err := sec.List(keep)
	if err != nil {
		return nil, fmt.Errorf("read Helm release records (Secrets labelled owner=helm) in %s: %w", nsText(namespace), err)
	}
	for _, r := range rels {
		k := Key(r.Namespace, r.Name)
		all[k] = append(all[k], r)
		storage[k] = StorageSecret
	}
	cm := driver.NewConfigMaps(kube.CoreV1().ConfigMaps(namespace))
	if rels, err = cm.List(keep); err != nil {
		return nil, fmt.Errorf("read Helm release records (ConfigMaps labelled owner=helm) in %s: %w", nsText(namespace), err)
	}
	for _, r := range rels {
		k := Key(r.Namespace, r.Name)
		if storage[k] == StorageSecret {
			continue // one release uses one driver; Secrets are the default
		}
		all[k] = append(all[k], r)
		storage[k] = StorageConfigMap
	}
	out := map[string]*Release{}
	for k, revs := range all {
		sort.Slice(revs, func(i, j int) bool { return revs[i].Version < revs[j].Version })
		var dep *rspb.Release
		for _, r := range revs {
			if r.Info != nil && r.Info.Status == rspb.StatusDeployed {
				dep = r
			}
		}
		if dep == nil || dep.Chart == nil || dep.Chart.Metadata == nil {
			continue
		}
		rel := &Release{
			Name: dep.Name, Namespace: dep.Namespace, Revision: dep.Version,
			Chart: dep.Chart.Metadata.Name, Version: dep.Chart.Metadata.Version, AppVersion: dep.Chart.Metadata.AppVersion,
			Config: dep.Config, Manifest: dep.Manifest, Storage: storage[k],
		}
		for _, r := range revs {
			rel.Records = append(rel.Records, RecordName(r.Name, r.Version))
			if r.Version > dep.Version && rel.Newer == "" && r.Info != nil {
				rel.Newer = fmt.Sprintf("revision %d is %s", r.Version, r.Info.Status)
			}
		}
		var hooks []string
		for _, h := range dep.Hooks {
			hooks = append(hooks, h.Manifest)
			hk := Hook{Name: h.Name, Kind: h.Kind}
			for _, e := range h.Events {
				hk.Events = append(hk.Events, string(e))
			}
			for _, p := range h.DeletePolicies {
				hk.DeletePolicies = append(hk.DeletePolicies, string(p))
			}
			rel.Hooks = append(rel.Hooks, hk)
		}
		rel.HookManifest = strings.Join(hooks, "\n---\n")
		sort.Slice(rel.Hooks, func(i, j int) bool {
			return rel.Hooks[i].Kind+"/"+rel.Hooks[i].Name < rel.Hooks[j].Kind+"/"+rel.Hooks[j].Name
		})
		out[k] = rel
	}
	return out, nil
}

// RecordName is the name of a release record: sh.helm.release.v1.<name>.v<N>.
func RecordName(release string, revision int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, revision)
}

// RetireCommands are the commands that remove the release's records by
// hand once Argo CD manages its objects, so that `helm list` no longer shows
// it and `helm uninstall` can no longer delete what Argo CD manages. adopt
// never runs them.
func RetireCommands(namespace, release, storage string) []string {
	res := "secrets"
	if storage == StorageConfigMap {
		res = "configmaps"
	}
	return []string{
		fmt.Sprintf("helm list -n %s --filter '^%s$'", namespace, release),
		fmt.Sprintf("kubectl -n %s get %s -l owner=helm,name=%s", namespace, res, release),
		fmt.Sprintf("kubectl -n %s delete %s -l owner=helm,name=%s", namespace, res, release),
	}
}

func nsText(ns string) string {
	if ns == "" {
		return "all namespaces"
	}
	return "namespace " + ns
}
