package plan

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// TestRepoURLChoice: adopt.yaml's repoURL, else --repo as a URL, else the
// checkout's remote; the plan says which, and what it did not take.
func TestRepoURLChoice(t *testing.T) {
	const remote = "https://git.example.invalid/org/gitops.git"
	checkout := &gitindex.Index{Source: "./gitops", Remote: gitops.Remote{Name: "origin", URL: remote, Branch: "main"}}
	const ssh = "git@git.example.invalid:org/gitops"
	reads := func(urls ...string) []argoapp.Spec {
		var out []argoapp.Spec
		for i, u := range urls {
			out = append(out, argoapp.Spec{Namespace: "argocd", Name: string(rune('a' + i)), Sources: []v1alpha1.ApplicationSource{{RepoURL: u, Path: "x"}}})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		cfg       string
		ix        *gitindex.Index
		specs     []argoapp.Spec
		url, from string
		finding   string
	}{
		{"a checkout", "", checkout, nil, remote, "remote origin (the upstream of branch main)", ""},
		{"a URL", "", &gitindex.Index{Source: remote}, nil, remote, "--repo", ""},
		// The Applications read the repo over ssh: new ones do too.
		{"the Applications' form", "", checkout, reads(ssh, ssh, remote, "https://git.example.invalid/org/other.git"), ssh, "existing Applications",
			"the repo is " + remote + " (from remote origin (the upstream of branch main)); existing Applications read it as " + ssh},
		{"most read the checkout's form", "", checkout, reads(ssh, remote, remote), remote, "remote origin (the upstream of branch main)", ""},
		{"adopt.yaml wins over the Applications", remote, checkout, reads(ssh), remote, "adopt.yaml", ""},
		{"adopt.yaml wins", "https://git.example.invalid/org/other.git", checkout, nil, "https://git.example.invalid/org/other.git", "adopt.yaml",
			"adopt.yaml's repoURL https://git.example.invalid/org/other.git is used; the checkout's remote origin (the upstream of branch main) is " + remote},
		{"adopt.yaml, the same repo", "git@git.example.invalid:org/gitops", checkout, nil, "git@git.example.invalid:org/gitops", "adopt.yaml", ""},
		{"no remote", "", &gitindex.Index{Source: "./gitops"}, reads(ssh), "", "", ""},
		{"an unreadable remote", "", &gitindex.Index{Source: "./gitops", RemoteErr: "remote origin: scheme \"ext\" is not supported"}, nil, "", "",
			"the repo URL cannot be read from ./gitops: remote origin: scheme \"ext\" is not supported. Set repoURL in adopt.yaml"},
		{"no repo", "", nil, nil, "", "", ""},
	} {
		p := &Plan{}
		fs := repoURL(p, &config.Config{RepoURL: tc.cfg}, tc.ix, tc.specs)
		if p.Settings.RepoURL != tc.url || p.Settings.RepoURLFrom != tc.from {
			t.Errorf("%s: %q from %q, want %q from %q", tc.name, p.Settings.RepoURL, p.Settings.RepoURLFrom, tc.url, tc.from)
		}
		got := ""
		for _, f := range fs {
			got += f.Message
		}
		if tc.finding == "" && got != "" || !strings.Contains(got, tc.finding) {
			t.Errorf("%s: findings %q, want %q", tc.name, got, tc.finding)
		}
	}
}

// TestOtherRepos: every Application source not read from the plan's repo
// is named: Git ones in a warning with the fix, chart repositories and
// OCI in an info line; a source of the plan's repo (in any spelling) and
// a values-only source are not.
func TestOtherRepos(t *testing.T) {
	const repo = "https://git.example.invalid/org/gitops.git"
	spec := func(name string, srcs ...v1alpha1.ApplicationSource) argoapp.Spec {
		return argoapp.Spec{Namespace: "argocd", Name: name, Sources: srcs}
	}
	specs := []argoapp.Spec{
		spec("same", v1alpha1.ApplicationSource{RepoURL: "https://GIT.example.invalid/org/gitops", Path: "apps/a"}),
		spec("ssh", v1alpha1.ApplicationSource{RepoURL: "git@git.example.invalid:org/gitops.git", Path: "apps/b"}),
		spec("other", v1alpha1.ApplicationSource{RepoURL: "https://bot:s3cret-token@git.example.invalid/team/legacy.git", Path: "deploy"}),
		spec("chart", v1alpha1.ApplicationSource{RepoURL: "https://charts.example.invalid", Chart: "redis", TargetRevision: "1.0.0"}),
		spec("oci", v1alpha1.ApplicationSource{RepoURL: "oci://registry.example.invalid/org/app", Path: "."}),
		spec("values", v1alpha1.ApplicationSource{RepoURL: repo, Path: "apps/c"}, v1alpha1.ApplicationSource{RepoURL: "https://git.example.invalid/org/values.git", Ref: "values"}),
	}
	fs := otherRepos(specs, repo, "--repo")
	if len(fs) != 2 {
		t.Fatalf("%d findings, want a warning and an info line: %+v", len(fs), fs)
	}
	w, i := fs[0], fs[1]
	if w.Code != CodeOtherRepo || w.Severity != Warning || !strings.HasPrefix(w.Message, "1 Application source reads a Git repo adopt cannot tie to --repo (the plan's repo is "+repo+", from --repo): argocd/other reads https://***@git.example.invalid/team/legacy.git.") ||
		!strings.Contains(w.Message, "set repoURL in adopt.yaml") || strings.Contains(w.Message, "s3cret") {
		t.Errorf("warning %+v", w)
	}
	if i.Code != CodeNotGitSource || i.Severity != Info || !strings.Contains(i.Message, "2 Application sources are a Helm chart repository or OCI") ||
		!strings.Contains(i.Message, "argocd/chart (chart redis from https://charts.example.invalid), argocd/oci (oci://registry.example.invalid/org/app)") {
		t.Errorf("info %+v", i)
	}
	for _, f := range fs {
		for _, n := range []string{"argocd/same", "argocd/ssh", "argocd/values"} {
			if strings.Contains(f.Message, n) {
				t.Errorf("%s is named, but reads the plan's repo: %s", n, f.Message)
			}
		}
	}
	if fs := otherRepos(specs[:1], "", ""); len(fs) != 1 || !strings.Contains(fs[0].Message, "the plan has no repo URL") {
		t.Errorf("no repo URL: %+v", fs)
	}
}
