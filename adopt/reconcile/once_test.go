package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/gitops"
)

// TestSettingsKeepTheirSpelling: the settings string is part of every
// group's recorded digest (PlanDigest), so its spelling is fixed: a
// change would make every open pull request look new and push to each.
// This is the string adopt reconcile wrote before RunOnce built it.
func TestSettingsKeepTheirSpelling(t *testing.T) {
	ro := apply.RunOptions{ArgoCDVersion: "v3.2.6", Render: apply.RenderOptions{Secrets: export.SecretsPlaceholder, AutoSync: true, CSAMigration: apply.CSAAuto}}
	ov := apply.Overrides{ArgoCDNamespace: "argocd", AppsDir: "apps"}
	got := Settings("v1.2.3 abc1234", ro, ov)
	want := "adopt v1.2.3 abc1234; secrets placeholder; auto-sync true; prune false; csa-migration auto; argocd-version v3.2.6; {ArgoCDNamespace:argocd AppsDir:apps RepoURL: DestServer: DestName:}"
	if got != want {
		t.Errorf("Settings:\n got %s\nwant %s", got, want)
	}
	if Settings("dev ", ro, ov) == got {
		t.Error("another build gives the same settings")
	}
}

// TestSeamsRefuseBadInput: what the command reports as bad input (exit
// 2) reaches it as an InputError from the pull requests RunOnce builds,
// asked for the first time: a repository URL with no owner, a host whose
// provider cannot be told, and a provider with no token. Nothing is asked
// of the network.
func TestSeamsRefuseBadInput(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		url, provider, want string
	}{
		{"https://git.example.invalid/gitops.git", "gitea", "--repo: "},
		{"https://git.example.invalid/org/gitops.git", "", "cannot tell which provider hosts git.example.invalid"},
		{"https://git.example.invalid/org/gitops.git", "gitea", "pass --git-token"},
	} {
		o := RunOptions{Apply: apply.RunOptions{Checkout: apply.CheckoutOptions{URL: tc.url, Base: "main"}}, PR: apply.OpenPROptions{Provider: tc.provider, Getenv: noEnv}}
		_, repoErr := gitops.ParseRepoURL(tc.url)
		s := o.seams(repoErr, Store{})
		_, err := s.PRs.ListOpenPRs(context.Background(), gitops.RepoRef{}, "", BranchPrefix("c"))
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s (provider %q): %v, want an InputError saying %q", tc.url, tc.provider, err, tc.want)
		}
	}
}
