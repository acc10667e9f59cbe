package config

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
exclusions:
- kinds: [Secret]
  namespaces: ["litellm-*"]
- apiGroups: ["*.example.com"]
destination: {name: prod, server: ""}
project: platform
repoURL: https://git.example.invalid/gitops.git
appsDir: argocd/apps
naming: "adopt-{namespace}-{key}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Project != "platform" || c.Destination.Name != "prod" || c.AppsDir != "argocd/apps" || c.ExportDir != "adopted" {
		t.Fatalf("%+v", c)
	}
	if got := c.Excluded("", "Secret", "litellm-test", "x"); got != "exclusions[0]" {
		t.Fatalf("secret in litellm-test: %q", got)
	}
	if got := c.Excluded("", "Secret", "other", "x"); got != "" {
		t.Fatalf("secret in other: %q", got)
	}
	if got := c.ExcludesType("widgets.example.com", "Widget"); got != "exclusions[1]" {
		t.Fatalf("type rule: %q", got)
	}
	if got := c.ExcludesType("", "Secret"); got != "" {
		t.Fatalf("namespace-narrowed rule excluded a whole type: %q", got)
	}
	if got := c.AppName("Litellm_Test", "usage hook", ""); got != "adopt-litellm-test-usage-hook" {
		t.Fatalf("name %q", got)
	}
	if got := c.AppName("", "", ""); got != "adopt" {
		t.Fatalf("empty name %q", got)
	}
}

func TestParseRejects(t *testing.T) {
	for in, want := range map[string]string{
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nprojekt: x\n":                                "projekt",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\ndestination: {server: a, name: b}\n":         "not both",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions: [{kinds: ['[']}]\n":              "bad glob",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nappsDir: ../x\n":                             "inside the repo",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nnaming: fixed\n":                             "placeholder",
		"apiVersion: v1\nkind: ConfigMap\n":                                                              "want apiVersion",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nhelmRepositories: {web: ftp://x/y}\n":        "helmRepositories[web]",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nhelmRepositories: {web: 'https:///x'}\n":     "has no host",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nhelmRepositories: {web: 'https://u:p@h/'}\n": "carries credentials",
		"apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nhelmRepositories: {'web 1': 'https://h/'}\n": "not a chart name",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line with %q", in, err, want)
		}
	}
}

func TestParseHelmRepositories(t *testing.T) {
	c, err := Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nhelmRepositories:\n  nginx: https://charts.example.com/stable\n  redis: oci://registry.example.com/charts\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.HelmRepositories["nginx"]; got != "https://charts.example.com/stable" {
		t.Fatalf("nginx: %q", got)
	}
	if got := c.HelmRepositories["redis"]; got != "oci://registry.example.com/charts" {
		t.Fatalf("redis: %q", got)
	}
}

func TestSecretForms(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
secrets:
  sealedSecretsController: sealing/sealed-secrets
  forms:
  - {namespaces: ["legacy-*"], form: none}
  - {namespaces: ["vault-*"], form: sops}
  - {namespaces: ["*"], form: sealed}
`))
	if err != nil {
		t.Fatal(err)
	}
	if ns, name := c.SealedSecretsService(); ns != "sealing" || name != "sealed-secrets" {
		t.Errorf("controller %q/%q", ns, name)
	}
	for ns, want := range map[string]string{"legacy-billing": "none secrets.forms[0]", "vault-a": "sops secrets.forms[1]", "shop": "sealed secrets.forms[2]"} {
		if form, entry := c.SecretForm(ns); form+" "+entry != want {
			t.Errorf("%s: %s %s, want %s", ns, form, entry, want)
		}
	}
	if form, _ := Default().SecretForm("shop"); form != "" {
		t.Errorf("the defaults force form %q", form)
	}
	for _, bad := range []string{
		"secrets: {sealedSecretsController: sealed-secrets-controller}",
		"secrets: {forms: [{namespaces: [a], form: eso-typo}]}",
		"secrets: {forms: [{form: sealed}]}",
	} {
		if _, err := Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "secrets.") {
			t.Errorf("%s: %v, want an error naming the field", bad, err)
		}
	}
}

// TestNameTemplate (issue 46): nameTemplate and its older spelling naming
// set the same template, two different ones are refused, and a name never
// doubles a segment (a namespace ending with its directory's name).
func TestNameTemplate(t *testing.T) {
	for doc, want := range map[string]string{
		"nameTemplate: \"{namespace}\"\n":              "{namespace}",
		"naming: \"team-{namespace}\"\n":               "team-{namespace}",
		"naming: \"{key}\"\nnameTemplate: \"{key}\"\n": "{key}",
		"": "",
	} {
		c, err := Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\n" + doc))
		if err != nil || c.NameTemplate != want || want != "" && c.Naming != want {
			t.Errorf("%q: nameTemplate %q naming %q, %v; want %q", doc, c.NameTemplate, c.Naming, err, want)
		}
	}
	if _, err := Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nnaming: \"{key}\"\nnameTemplate: \"{namespace}\"\n")); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Errorf("two templates: %v", err)
	}
	d := Default()
	for _, c := range []struct{ ns, key, want string }{
		{"billing-prod-eu", "prod-eu", "adopt-billing-prod-eu"},
		{"shop", "shop", "adopt-shop"},
		{"web", "api", "adopt-web-api"},
	} {
		if got := d.AppName(c.ns, c.key, ""); got != c.want {
			t.Errorf("AppName(%s, %s) = %s, want %s", c.ns, c.key, got, c.want)
		}
	}
}

// TestNamePlaceholders: {env} is the source path's last segment,
// {cluster} the destination cluster's name (issue 46).
func TestNamePlaceholders(t *testing.T) {
	c := Default()
	c.Naming = "{cluster}-{namespace}-{env}"
	if got := c.AppName("billing", "staging", "apps/billing/envs/staging"); got != "in-cluster-billing-staging" {
		t.Errorf("in-cluster: %s", got)
	}
	c.Destination = Destination{Name: "prod"}
	if got := c.Name(NameVars{Namespace: "billing-prod", Env: "prod"}); got != "prod-billing-prod" {
		t.Errorf("named cluster, doubled env: %s", got)
	}
	c.Destination = Destination{Server: "https://10.0.0.1:6443"}
	if c.Cluster() != "" {
		t.Errorf("a server URL's cluster name is not known here: %q", c.Cluster())
	}
}

// TestSecretFormESO: form eso may name its store per namespace; only eso
// names one, as "SecretStore <name>" or "ClusterSecretStore <name>".
func TestSecretFormESO(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
secrets:
  forms:
  - {namespaces: ["shop"], form: eso, store: SecretStore vault}
  - {namespaces: ["*"], form: eso}
`))
	if err != nil {
		t.Fatal(err)
	}
	if form, entry := c.SecretForm("shop"); form != SecretFormESO || entry != "secrets.forms[0]" {
		t.Errorf("shop: %s %s", form, entry)
	}
	if store, entry := c.SecretStore("shop"); store != "SecretStore vault" || entry != "secrets.forms[0].store" {
		t.Errorf("shop's store: %q %q", store, entry)
	}
	if store, _ := c.SecretStore("billing"); store != "" {
		t.Errorf("billing's store: %q, want none named", store)
	}
	for _, bad := range []string{
		"secrets: {forms: [{namespaces: [a], form: sealed, store: SecretStore vault}]}",
		"secrets: {forms: [{namespaces: [a], form: eso, store: vault}]}",
		"secrets: {forms: [{namespaces: [a], form: eso, store: Vault x}]}",
	} {
		if _, err := Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "secrets.forms[0]: store") {
			t.Errorf("%s: %v, want an error naming the store", bad, err)
		}
	}
}
