package argoapp

import "testing"

// TestSameRepo: Argo CD's URL comparison, plus https and ssh spellings of
// one repository on one host.
func TestSameRepo(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://git.example.com/org/gitops.git", "https://git.example.com/org/gitops", true},
		{"https://git.example.com/org/gitops.git", "https://GIT.example.com/Org/GitOps", true},
		{"git@git.example.com:org/gitops.git", "ssh://git@git.example.com/org/gitops", true},
		{"https://git.example.com/org/gitops.git", "git@git.example.com:org/gitops.git", true},
		{"https://git.example.com/org/gitops", "ssh://git@git.example.com:2222/org/gitops.git", true},
		{"http://127.0.0.1:3000/org/gitops.git", "ssh://git@127.0.0.1:2222/org/gitops.git", true},
		{"https://git.example.com/org/gitops/", "git@git.example.com:org/gitops", true},
		// Not the same repository.
		{"https://git.example.com/org/gitops.git", "https://git.example.com/org/other.git", false},
		{"https://git.example.com/org/gitops.git", "git@git.example.com:other/gitops.git", false},
		{"https://git.example.com/org/gitops.git", "git@git.example.org:org/gitops.git", false},
		{"http://git.example.com:3000/org/gitops.git", "http://git.example.com:4000/org/gitops.git", false},
		{"https://git.example.com/org/gitops.git", "", false},
		{"", "", false},
		{"/srv/git/gitops", "https://git.example.com/srv/git/gitops", false},
		{"oci://registry.example.com/org/gitops", "https://registry.example.com/org/gitops", false},
	} {
		if got := SameRepo(tc.a, tc.b); got != tc.same {
			t.Errorf("SameRepo(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if got := SameRepo(tc.b, tc.a); got != tc.same {
			t.Errorf("SameRepo(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.same)
		}
	}
}
