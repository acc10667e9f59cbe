package plan

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestNamesFollowTheRepoPatterns (issue 46): the repo's <app>-<env>,
// <env>-<app> and prefixed names are learned with {namespace}, {cluster}
// and {env}; no majority gives no template; a new name never doubles a
// segment.
func TestNamesFollowTheRepoPatterns(t *testing.T) {
	app := func(name, ns, cluster, srcPath string) argoapp.Spec {
		return argoapp.Spec{Namespace: "argocd", Name: name, Destination: ns, Cluster: cluster,
			Sources: []v1alpha1.ApplicationSource{{RepoURL: "https://git.example/r.git", Path: srcPath}}}
	}
	prod := &config.Config{Destination: config.Destination{Name: "prod"}}
	for _, c := range []struct {
		name     string
		specs    []argoapp.Spec
		cfg      *config.Config
		want     string // the template; "" for none
		ns, dir  string // a new Application's namespace and source dir
		wantName string
	}{
		{name: "<app>-<env>", specs: []argoapp.Spec{
			app("billing-staging", "billing", "in-cluster", "apps/billing/envs/staging"),
			app("web-staging", "web", "in-cluster", "apps/web/envs/staging"),
			app("root", "argocd", "in-cluster", "apps"),
		}, want: "{namespace}-{env}", ns: "coupons", dir: "apps/coupons/envs/staging", wantName: "coupons-staging"},
		{name: "<env>-<app>", specs: []argoapp.Spec{
			app("prod-billing", "billing", "prod", "apps/billing"),
			app("prod-web", "web", "prod", "apps/web"),
		}, cfg: prod, want: "{cluster}-{namespace}", ns: "coupons", dir: "apps/coupons", wantName: "prod-coupons"},
		{name: "<env>-<app>, the new Applications' cluster unnamed", specs: []argoapp.Spec{
			app("prod-billing", "billing", "prod", "apps/billing"),
			app("prod-web", "web", "prod", "apps/web"),
		}, cfg: &config.Config{Destination: config.Destination{Server: "https://10.0.0.1:6443"}}, want: ""},
		{name: "prefix", specs: []argoapp.Spec{
			app("team-billing", "billing", "in-cluster", "apps/billing"),
			app("team-web", "web", "in-cluster", "apps/web"),
			app("team-ledger", "ledger", "in-cluster", "apps/ledger"),
			app("other", "other", "in-cluster", "other"),
		}, want: "team-{namespace}", ns: "coupons", dir: "apps/coupons", wantName: "team-coupons"},
		{name: "<app>-<env> into <app>-<env>", specs: []argoapp.Spec{
			app("ledger-qa", "ledger-qa", "in-cluster", "apps/ledger/envs/qa"),
			app("ledger-prod-eu", "ledger-prod-eu", "in-cluster", "apps/ledger/envs/prod-eu"),
		}, want: "{namespace}", ns: "coupons-qa", dir: "apps/coupons/envs/qa", wantName: "coupons-qa"},
		{name: "mixed: no majority", specs: []argoapp.Spec{
			app("billing", "billing", "prod", "apps/billing"),
			app("web", "web", "prod", "apps/web"),
			app("prod-ledger", "ledger", "prod", "apps/ledger"),
			app("prod-shop", "shop", "prod", "apps/shop"),
		}, cfg: prod, want: ""},
		{name: "no namespace in the names", specs: []argoapp.Spec{
			app("prod-staging", "billing", "prod", "apps/billing/envs/staging"),
			app("prod-staging-2", "web", "prod", "apps/web/envs/staging"),
		}, cfg: prod, want: ""},
		{name: "doubled segment avoided", specs: []argoapp.Spec{
			app("billing-prod", "billing", "in-cluster", "apps/billing/envs/prod"),
			app("web-prod", "web", "in-cluster", "apps/web/envs/prod"),
		}, want: "{namespace}-{env}", ns: "coupons-prod", dir: "apps/coupons/envs/prod", wantName: "coupons-prod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg == nil {
				cfg = config.Default()
			} else {
				cfg.Naming = config.Default().Naming
			}
			var s Settings
			got, fs := naming(cfg, c.specs, false, &s)
			if c.want == "" {
				if got.Naming != cfg.Naming || len(fs) != 0 {
					t.Fatalf("want no template, got %q, %+v", got.Naming, fs)
				}
				return
			}
			if got.Naming != c.want || len(fs) != 1 || !strings.Contains(fs[0].Message, "follow "+c.want) || !strings.Contains(fs[0].Message, c.specs[0].Name) {
				t.Fatalf("template %q, findings %+v; want %q", got.Naming, fs, c.want)
			}
			if n := got.AppName(c.ns, "x", c.dir); n != c.wantName {
				t.Errorf("a new Application in %s from %s is %s, want %s", c.ns, c.dir, n, c.wantName)
			}
		})
	}
}
