package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Finding codes of the plan's repo URL.
const (
	// CodeRepoURL: what the plan's repo URL is not (a checkout's remote
	// that could not be read, or one adopt.yaml's repoURL overrides).
	CodeRepoURL = "repo-url"
	// CodeOtherRepo: existing Applications read Git repos adopt cannot tie
	// to the plan's repo, so what they render is not matched.
	CodeOtherRepo = "application-repo-not-tied"
	// CodeNotGitSource: existing Applications whose sources are Helm chart
	// repositories or OCI: adopt renders Git only.
	CodeNotGitSource = "application-source-not-git"
)

// How the plan's repo URL was chosen (Settings.RepoURLFrom).
const (
	RepoURLFromConfig = "adopt.yaml"
	RepoURLFromFlag   = "--repo"
	// RepoURLFromApplications: the existing Applications read the same
	// repo in another form (https, ssh or scp-like), which Argo CD has
	// credentials for; new Applications use it too.
	RepoURLFromApplications = "existing Applications"
)

// repoURL sets the plan's repo URL (Settings.RepoURL and RepoURLFrom):
// adopt.yaml's repoURL, else --repo when it is a URL, else the remote of
// the checkout --repo names; then, unless adopt.yaml set it, the form the
// existing Applications (specs) read that repo by, when most of them use
// another (see RepoURLFromApplications). The findings say what the user
// should know of the choice.
func repoURL(p *Plan, cfg *config.Config, ix *gitindex.Index, specs []argoapp.Spec) []Finding {
	var fs []Finding
	s := &p.Settings
	switch {
	case cfg.RepoURL != "":
		s.RepoURL, s.RepoURLFrom = cfg.RepoURL, RepoURLFromConfig
	case ix == nil:
		return nil
	case gitindex.IsURL(ix.Source):
		s.RepoURL, s.RepoURLFrom = ix.Source, RepoURLFromFlag
	case ix.Remote.URL != "":
		s.RepoURL, s.RepoURLFrom = ix.Remote.URL, ix.Remote.From()
	}
	if ix == nil {
		return nil
	}
	if form := appsForm(specs, s.RepoURL); s.RepoURLFrom != RepoURLFromConfig && form != "" {
		fs = append(fs, Finding{Code: CodeRepoURL, Severity: Info, Message: fmt.Sprintf(
			"the repo is %s (from %s); existing Applications read it as %s, so new Applications do too, with the credentials Argo CD has for that form. Set repoURL in adopt.yaml to choose another", s.RepoURL, s.RepoURLFrom, form)})
		s.RepoURL, s.RepoURLFrom = form, RepoURLFromApplications
	}
	if ix.RemoteErr != "" {
		fs = append(fs, Finding{Code: CodeRepoURL, Severity: Warning, Message: fmt.Sprintf(
			"the repo URL cannot be read from %s: %s. Set repoURL in adopt.yaml to the URL Argo CD reads the repo from, or give --repo as that URL", ix.Source, gitops.Redact(ix.RemoteErr))})
	}
	if cfg.RepoURL != "" && ix.Remote.URL != "" && !argoapp.SameRepo(cfg.RepoURL, ix.Remote.URL) {
		fs = append(fs, Finding{Code: CodeRepoURL, Severity: Info, Message: fmt.Sprintf(
			"adopt.yaml's repoURL %s is used; the checkout's %s is %s", cfg.RepoURL, ix.Remote.From(), ix.Remote.URL)})
	}
	return fs
}

// appsForm is the form of url (the same repo over another transport:
// https against ssh or scp-like, which Argo CD takes for another
// repository with other credentials) that most existing Application
// sources use, when more of them use it than url itself (in any spelling
// Argo CD takes for it: case, .git); "" otherwise. A tie goes to the form
// first in sort order.
func appsForm(specs []argoapp.Spec, url string) string {
	if url == "" {
		return ""
	}
	count := map[string]int{}
	for _, s := range specs {
		for _, src := range s.Sources {
			if src.RepoURL != "" && !notGit(src) && argoapp.SameRepo(src.RepoURL, url) {
				// A spelling Argo CD takes for url itself counts for url.
				f := src.RepoURL
				if argoapp.SameArgoRepo(f, url) {
					f = url
				}
				count[f]++
			}
		}
	}
	best := ""
	for _, f := range slices.Sorted(maps.Keys(count)) {
		if count[f] > count[best] {
			best = f
		}
	}
	if best == url || count[best] <= count[url] {
		return ""
	}
	return best
}

// inRepo says whether the source reads the plan's repo (argoapp.SameRepo).
func inRepo(src v1alpha1.ApplicationSource, repoURL string) bool {
	return src.RepoURL != "" && repoURL != "" && argoapp.SameRepo(src.RepoURL, repoURL)
}

// notGit says whether a source is a Helm chart repository or OCI: not
// Git, so never the plan's repo.
func notGit(src v1alpha1.ApplicationSource) bool {
	return src.Chart != "" || strings.HasPrefix(strings.ToLower(src.RepoURL), "oci://")
}

// otherRepos are the findings that name every existing Application source
// that is not rendered from the plan's repo: Git repos adopt cannot tie to
// it (a warning, with the fix), and Helm chart repositories and OCI (one
// info line). A values-only source (a ref without a path) syncs nothing
// and is left out.
func otherRepos(specs []argoapp.Spec, repoURL, repoFrom string) []Finding {
	var git, other []string
	for _, s := range specs {
		for _, src := range s.Sources {
			switch {
			case src.Path == "" && src.Ref != "" && src.Chart == "":
			case notGit(src):
				what := src.RepoURL
				if src.Chart != "" {
					what = "chart " + src.Chart + " from " + src.RepoURL
				}
				other = append(other, s.Key()+" ("+gitops.Redact(what)+")")
			case !inRepo(src, repoURL):
				git = append(git, s.Key()+" reads "+gitops.Redact(src.RepoURL))
			}
		}
	}
	var fs []Finding
	if len(git) > 0 {
		sort.Strings(git)
		git = slices.Compact(git)
		plan := "the plan has no repo URL (--repo names no remote and adopt.yaml sets no repoURL)"
		if repoURL != "" {
			plan = fmt.Sprintf("the plan's repo is %s, from %s", repoURL, repoFrom)
		}
		fs = append(fs, Finding{Code: CodeOtherRepo, Severity: Warning, Message: fmt.Sprintf(
			"%d Application source%s a Git repo adopt cannot tie to --repo (%s): %s. What %s is not matched, so objects %s from this repo would be proposed again. If %s this repo, set repoURL in adopt.yaml to %s URL, or give --repo as that URL",
			len(git), plural(len(git), " reads", "s read"), plan, strings.Join(git, ", "),
			plural(len(git), "it renders", "they render"), plural(len(git), "it syncs", "they sync"), plural(len(git), "it reads", "they read"), plural(len(git), "its", "their"))})
	}
	if len(other) > 0 {
		sort.Strings(other)
		other = slices.Compact(other)
		fs = append(fs, Finding{Code: CodeNotGitSource, Severity: Info, Message: fmt.Sprintf(
			"%d Application source%s a Helm chart repository or OCI, not Git, and not rendered by adopt: %s",
			len(other), plural(len(other), " is", "s are"), strings.Join(other, ", "))})
	}
	return fs
}
