package status

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// TestProviderOfACheckout: with --repo a local checkout, the pull requests
// are looked up on the host of the repo URL the plan records (the
// checkout's remote when it was planned), not derived again; a plan that
// records no URL on a host says there is no host to ask.
func TestProviderOfACheckout(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	repo, err := gitops.Clone(context.Background(), gitops.CloneOptions{URL: dir, History: true})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	for _, tc := range []struct {
		recorded string
		owner    string
		note     string
	}{
		{"https://github.com/shop/gitops.git", "shop", ""},
		{"", "", "--repo is a local path and the plan records no repo URL on a host"},
		{"/srv/git/gitops.git", "", "--repo is a local path and the plan records no repo URL on a host"},
	} {
		o := Options{Inputs: []Input{{Plan: &plan.Plan{Settings: plan.Settings{RepoURL: tc.recorded}}}}, Auth: gitops.Auth{Token: "t0ken-for-the-test"}}
		var src Sources
		if err := o.provider(&src, repo); err != nil {
			t.Fatalf("%q: %v", tc.recorded, err)
		}
		if src.PRRepo.Owner != tc.owner || (tc.owner != "") != (src.PRs != nil) || !strings.Contains(src.PRNote, tc.note) || tc.note == "" && src.PRNote != "" {
			t.Errorf("plan's repoURL %q: pull requests on %+v (reader %v), note %q; want owner %q, note %q", tc.recorded, src.PRRepo, src.PRs != nil, src.PRNote, tc.owner, tc.note)
		}
	}
}
