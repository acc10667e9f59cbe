package helmrelease

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/helmpath"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// Source is where a chart is fetched from: the Application's
// source.repoURL and source.chart.
type Source struct {
	// RepoURL is an http(s) chart repository, or oci://registry/path.
	RepoURL string
	Chart   string
	// From says where RepoURL was found, for reviewers.
	From string
}

// Sources finds chart sources.
type Sources struct {
	// Configured is adopt.yaml helmRepositories: chart name → repo URL.
	Configured map[string]string
	// RepositoryConfig and RepositoryCache are Helm's repositories.yaml and
	// index cache directory (DefaultSources reads them as helm does).
	RepositoryConfig, RepositoryCache string
}

// DefaultSources are the configured repositories plus the user's Helm
// repository config and cache, located as the helm CLI locates them:
// HELM_REPOSITORY_CONFIG and HELM_REPOSITORY_CACHE as getenv reads them
// (nil: the process's environment), else helm's own defaults.
func DefaultSources(configured map[string]string, getenv func(string) string) Sources {
	s := cli.New()
	src := Sources{Configured: configured, RepositoryConfig: s.RepositoryConfig, RepositoryCache: s.RepositoryCache}
	if getenv != nil {
		if v := getenv("HELM_REPOSITORY_CONFIG"); v != "" {
			src.RepositoryConfig = v
		}
		if v := getenv("HELM_REPOSITORY_CACHE"); v != "" {
			src.RepositoryCache = v
		}
	}
	return src
}

// Errors Find returns: no source has the chart, or the one that has it
// carries credentials in its URL.
var (
	ErrUnknownSource    = errors.New("chart source unknown")
	ErrCredentialsInURL = errors.New("chart source refused")
)

// Find returns where chart at version comes from: adopt.yaml first, then
// every repository in Helm's repositories.yaml whose cached index lists that
// name and version (the first by repository name when several do).
func (s Sources) Find(chart, version string) (Source, error) {
	if u := s.Configured[chart]; u != "" {
		return Source{RepoURL: u, Chart: chart, From: "adopt.yaml helmRepositories"}, nil
	}
	if s.RepositoryConfig == "" {
		return Source{}, fmt.Errorf("%w: %s %s is not in adopt.yaml helmRepositories", ErrUnknownSource, chart, version)
	}
	f, err := repo.LoadFile(s.RepositoryConfig)
	if errors.Is(err, os.ErrNotExist) {
		return Source{}, fmt.Errorf("%w: %s %s is not in adopt.yaml helmRepositories and there is no Helm repository config at %s", ErrUnknownSource, chart, version, s.RepositoryConfig)
	}
	if err != nil {
		return Source{}, fmt.Errorf("%w: read Helm repository config %s: %v", ErrUnknownSource, s.RepositoryConfig, err)
	}
	entries := append([]*repo.Entry{}, f.Repositories...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	var looked []string
	for _, e := range entries {
		idx, err := repo.LoadIndexFile(filepath.Join(s.RepositoryCache, helmpath.CacheIndexFile(e.Name)))
		if err != nil {
			looked = append(looked, e.Name+" (no cached index: run helm repo update)")
			continue
		}
		if _, err := idx.Get(chart, version); err == nil {
			u, err := url.Parse(e.URL)
			if err != nil {
				return Source{}, fmt.Errorf("%w: the URL of Helm repository %q in %s does not parse, so adopt cannot tell whether it holds credentials and will not write it into the plan: fix it, or name the chart's repository in adopt.yaml helmRepositories",
					ErrCredentialsInURL, e.Name, s.RepositoryConfig)
			} else if u.User != nil {
				u.User = nil
				return Source{}, fmt.Errorf("%w: Helm repository %q in %s has credentials (user:password@) in its URL, and adopt writes a chart's repository URL into the plan and the Application: "+
					"remove them from the URL (helm repo add --username/--password keeps them apart; Argo CD reads them from a repository Secret), or name %s in adopt.yaml helmRepositories",
					ErrCredentialsInURL, e.Name, s.RepositoryConfig, u.String())
			}
			if redact.URLSecret(e.URL) != "" {
				u.RawQuery = ""
				return Source{}, fmt.Errorf("%w: Helm repository %q in %s has a credential in its URL's query (token, key, signature…), and adopt writes a chart's repository URL into the plan and the Application: "+
					"register the repository without it (Argo CD reads credentials from a repository Secret), or name %s in adopt.yaml helmRepositories",
					ErrCredentialsInURL, e.Name, s.RepositoryConfig, u.String())
			}
			return Source{RepoURL: e.URL, Chart: chart, From: fmt.Sprintf("Helm repository %q (%s)", e.Name, s.RepositoryConfig)}, nil
		}
		looked = append(looked, e.Name)
	}
	where := "none configured"
	if len(looked) > 0 {
		where = strings.Join(looked, ", ")
	}
	return Source{}, fmt.Errorf("%w: %s %s is in neither adopt.yaml helmRepositories nor the cached index of a Helm repository (%s: %s)", ErrUnknownSource, chart, version, s.RepositoryConfig, where)
}
