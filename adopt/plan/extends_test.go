package plan

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/argoapp"
)

// TestExtendExisting (issue 43): a proposed Application that meets one
// that exists, by its name or by syncing its path of the same repository
// to its namespace, extends it, and a finding says so; one of another
// path, namespace or repository does not, nor is an existing one marked.
func TestExtendExisting(t *testing.T) {
	const repo = "https://git.example.invalid/gitops.git"
	spec := func(name, repoURL, path, ns, pending string) argoapp.Spec {
		return argoapp.Spec{Namespace: "argocd", Name: name, Destination: ns, Pending: pending,
			Sources: []v1alpha1.ApplicationSource{{RepoURL: repoURL, Path: path}}}
	}
	for _, tc := range []struct {
		name string
		spec argoapp.Spec
		want string
	}{
		{"same name", spec("adopt-search", repo, "elsewhere", "other", ""), "adopt-search"},
		{"renamed, same path and namespace", spec("search", repo, "adopted/search/", "search", ""), "search"},
		{"defined in Git, not created yet", spec("search", repo, "adopted/search", "search", "argocd/apps/search.yaml:1"), "search"},
		{"same path, another namespace", spec("search", repo, "adopted/search", "search-2", ""), ""},
		{"same path, another repository", spec("search", "https://git.example.invalid/other.git", "adopted/search", "search", ""), ""},
		{"another path", spec("search", repo, "apps/search", "search", ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Settings: Settings{RepoURL: repo}}
			p.Tracking.Namespace = "argocd"
			p.Applications = []Application{
				{Name: "adopt-search", Namespace: "search", Source: "export", SourcePath: "adopted/search", Objects: []string{"ConfigMap search/synonyms"}},
				{Name: "search-existing", Namespace: "search", Source: "existing", SourcePath: "adopted/search", Existing: &Existing{}},
			}
			extendExisting(p, []argoapp.Spec{tc.spec})
			if got := p.Applications[0].Extends; got != tc.want {
				t.Errorf("extends %q, want %q", got, tc.want)
			}
			if p.Applications[1].Extends != "" {
				t.Errorf("an existing Application was marked as extending %s", p.Applications[1].Extends)
			}
			said := len(p.Findings) == 1 && p.Findings[0].Code == CodeExtends && strings.Contains(p.Findings[0].Message, "never replaces it")
			if said != (tc.want != "") {
				t.Errorf("findings %+v", p.Findings)
			}
		})
	}
}
