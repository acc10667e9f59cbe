package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
)

func parsePRFlags(t *testing.T, args ...string) *prOptions {
	t.Helper()
	o := &prOptions{}
	fs := pflag.NewFlagSet("apply", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return o
}

func TestPROptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" means valid
	}{
		{nil, ""},
		{[]string{"--open-pr", "--provider", "gitlab", "--api-url", "https://git.example.invalid/api/v4", "--pr-label", "a", "--pr-label", "b", "--pr-reviewer", "alice", "--draft"}, ""},
		{[]string{"--pr-label", "a"}, "need --open-pr"},
		{[]string{"--open-pr", "--provider", "bitbucket"}, `--provider "bitbucket" is not supported: use one of gitea, github, gitlab`},
		{[]string{"--open-pr", "--api-url", "git.example.invalid"}, "is not an http(s) URL"},
		{[]string{"--open-pr", "--api-url", "https://u:p4ssw0rd@git.example.invalid/"}, "must not hold credentials"},
		{[]string{"--open-pr", "--pr-label", "a,b"}, "without commas"},
		{[]string{"--open-pr", "--pr-reviewer", "@alice"}, "without @"},
		{[]string{"--open-pr", "--pr-title", "two\nlines"}, "must be one line"},
	} {
		err := parsePRFlags(t, tc.args...).Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
			continue
		}
		var ee *exitError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ee) || ee.code != ExitUsage {
			t.Errorf("%v: error %v, want a usage error saying %q", tc.args, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "p4ssw0rd") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

// prPlan is a plan with the incident's ConfigMap (in Git, critical), one
// exported object and a Secret left out.
func prPlan() *plan.Plan {
	hook := plan.Object{Kind: "ConfigMap", Version: "v1", Namespace: "litellm-test", Name: "litellm-test-usage-hook",
		Budget: budget.Budget{AnnotationBytes: 257270, LastAppliedBytes: 257149, PercentOfCap: 98.1, Headroom: 4874, HasLastApplied: true},
		Level:  budget.LevelCritical, App: "litellm-test", Git: &plan.GitMatch{Path: "k8s/system/litellm-test-usage-hook-cm.yaml", Line: 1}}
	svc := plan.Object{Kind: "Service", Version: "v1", Namespace: "litellm-test", Name: "litellm",
		Budget: budget.Budget{AnnotationBytes: 900, PercentOfCap: 0.3, Headroom: 261244}, Level: budget.LevelOK, App: "litellm-test"}
	return &plan.Plan{
		Cluster: plan.Cluster{Server: "https://127.0.0.1:6443", Context: "prod-eu"},
		Applications: []plan.Application{{Name: "litellm-test", Namespace: "litellm-test", SourcePath: "k8s/system",
			Objects: []string{hook.Ref(), svc.Ref()}}},
		Objects: []plan.Object{hook, svc},
		Skipped: []plan.Skipped{{Kind: "Secret", Namespace: "litellm-test", Name: "litellm-keys", Reason: "Secrets are never exported to Git"}},
	}
}

func prInput() PRInput {
	return PRInput{
		Head: "adopt/litellm-test", Base: "main", Plan: prPlan(), PlanPath: "plans/prod-eu.yaml",
		Exported: map[string]string{"Service litellm-test/litellm": "adopted/litellm-test/service-litellm.yaml"},
		Drift:    map[string]string{"ConfigMap litellm-test/litellm-test-usage-hook": "live 8,126 B behind Git"},
		Secrets:  map[string]string{"Secret litellm-test/api-token": "--secrets=skip"},
		Runbooks: []string{"k8s/system/README.md line 12 runs `kubectl apply -f` on an adopted file; change it to --server-side or remove it."},
	}
}

func TestPRBodyFromPlan(t *testing.T) {
	title, body, err := renderPR(prInput(), "")
	if err != nil {
		t.Fatal(err)
	}
	if title != "adopt: 1 Argo CD Application for 2 hand-applied objects on prod-eu" {
		t.Errorf("title = %q", title)
	}
	for _, want := range []string{
		"### Application `litellm-test` (namespace `litellm-test`)",
		"| `ConfigMap litellm-test/litellm-test-usage-hook` | 257270 B | 98.1% (critical) | in Git at `k8s/system/litellm-test-usage-hook-cm.yaml:1` | live 8,126 B behind Git |",
		"| `Service litellm-test/litellm` | 900 B | 0.3% | exported to `adopted/litellm-test/service-litellm.yaml` | n/a (exported from the cluster) |",
		"98.1% of the 262,144 B cap (critical); 4874 B of headroom",
		"carries a 257149 B last-applied-configuration annotation",
		"`Service litellm-test/litellm`: no source in Git",
		"k8s/system/README.md line 12 runs `kubectl apply -f`",
		"- `Secret litellm-test/api-token`: --secrets=skip\n- `Secret litellm-test/litellm-keys`: Secrets are never exported to Git",
		"adopt finalize --plan plans/prod-eu.yaml",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q\n%s", want, body)
		}
	}
	// --pr-title wins over the template.
	if title, _, _ := renderPR(prInput(), "mine"); title != "mine" {
		t.Errorf("--pr-title ignored: %q", title)
	}
	// A --templates directory overrides the title template only.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, prTitleTemplate), []byte("custom {{ .Objects }} on {{ .Cluster }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := prInput()
	in.TemplatesDir = dir
	title, body2, err := renderPR(in, "")
	if err != nil || title != "custom 2 on prod-eu" || body2 != body {
		t.Errorf("override: title %q, err %v, body changed %v", title, err, body2 != body)
	}
}

// TestPRBodyUsesPlanDriftAndFindings: with no drift from apply, the
// plan's own drift and findings fill the table and the risks.
func TestPRBodyUsesPlanDriftAndFindings(t *testing.T) {
	in := prInput()
	in.Drift = nil
	in.Plan.Objects[0].Drift = &gitindex.Drift{Fields: []string{"data.usage_hook.py"}, BytesBehind: 8126}
	in.Plan.Objects[0].Findings = []plan.Finding{{Code: plan.CodeStaleVsGit, Severity: plan.Warning, Message: "live is 8126 B behind Git"}}
	_, body, err := renderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| live 8126 B behind Git: data.usage_hook.py |",
		"- `ConfigMap litellm-test/litellm-test-usage-hook` (warning): live is 8126 B behind Git",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q\n%s", want, body)
		}
	}
}

func TestOpenPRNeedsProviderAndToken(t *testing.T) {
	o := parsePRFlags(t, "--open-pr")
	o.getenv = func(string) string { return "" }
	in := prInput()
	in.RepoURL = "https://git.example.invalid/acme/gitops.git"
	if _, err := o.Open(context.Background(), in); err == nil || !strings.Contains(err.Error(), "cannot tell which provider hosts git.example.invalid: pass --provider gitea|github|gitlab") {
		t.Errorf("no provider: %v", err)
	}
	in.RepoURL = "https://gitlab.example.invalid/acme/gitops.git"
	if _, err := o.Open(context.Background(), in); err == nil || !strings.Contains(err.Error(), "needs a token: pass --git-token or set ADOPT_GIT_TOKEN or GITLAB_TOKEN") {
		t.Errorf("no token: %v", err)
	}
}

// TestOpenPROnGitea drives what `adopt apply --open-pr` runs after the
// push, against the real Gitea: open, read back, run again, read-only token.
func TestOpenPROnGitea(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: skipping the real Gitea")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	g, err := testenv.StartGitea(ctx)
	if err != nil {
		t.Fatalf("the real Gitea did not start: %v", err)
	}
	defer g.Stop()
	cloneURL, err := g.CreateRepo(ctx, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	in := prInput()
	in.RepoURL = cloneURL
	if err := g.PushBranch(ctx, cloneURL, in.Head, map[string]string{"apps/litellm-test.yaml": "kind: Application\n"}); err != nil {
		t.Fatal(err)
	}
	o := parsePRFlags(t, "--open-pr", "--provider", "gitea", "--pr-label", "adopt", "--pr-label", "annotation-budget")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o.getenv = func(k string) string {
		if k == "GITEA_TOKEN" {
			return g.Token
		}
		return ""
	}
	var out bytes.Buffer
	in.Out = &out
	url, err := o.Open(ctx, in)
	if err != nil {
		t.Fatalf("Open: %v\n%s", err, g.LogTail(2000))
	}
	if !strings.Contains(out.String(), "provider gitea (--provider)") || !strings.Contains(out.String(), "token from GITEA_TOKEN") || !strings.Contains(out.String(), "Opened pull request #1: "+url) {
		t.Errorf("output:\n%s", out.String())
	}
	if strings.Contains(out.String(), g.Token) {
		t.Errorf("output leaks the token")
	}
	wantTitle, wantBody, _ := renderPR(in, "")
	prs, err := g.PullRequests(ctx, "gitops")
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || prs[0].Title != wantTitle || prs[0].Body != wantBody || prs[0].Head.Ref != in.Head || prs[0].Base.Ref != "main" || prs[0].HTMLURL != url {
		t.Fatalf("read back %d pull requests: %+v", len(prs), prs)
	}
	if l := prs[0].LabelNames(); !slices.Contains(l, "adopt") || !slices.Contains(l, "annotation-budget") {
		t.Errorf("labels = %v", l)
	}
	if !strings.Contains(prs[0].Body, "adopt finalize --plan plans/prod-eu.yaml") || !strings.Contains(prs[0].Body, "98.1% (critical)") {
		t.Errorf("body lacks the next step or the budget:\n%s", prs[0].Body)
	}

	// Run again after the plan changed: one pull request, body updated.
	in.Drift["ConfigMap litellm-test/litellm-test-usage-hook"] = "identical"
	out.Reset()
	url2, err := o.Open(ctx, in)
	if err != nil || url2 != url || !strings.Contains(out.String(), "Updated pull request #1") {
		t.Fatalf("second Open = %s, %v; output %s", url2, err, out.String())
	}
	prs, _ = g.PullRequests(ctx, "gitops")
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "| identical |") {
		t.Fatalf("after the second run: %d pull requests, body updated %v", len(prs), len(prs) == 1 && strings.Contains(prs[0].Body, "| identical |"))
	}

	// A read-only token given as --git-token: the one-line error.
	ro, err := g.CreateToken(ctx, "read-only", "read:repository")
	if err != nil {
		t.Fatal(err)
	}
	in.Token = ro
	_, err = o.Open(ctx, in)
	if err == nil {
		t.Fatal("a read-only token opened or updated a pull request")
	}
	var stderr bytes.Buffer
	code := report(&stderr, err)
	line := stderr.String()
	t.Logf("read-only token: %s", strings.TrimSpace(line))
	if code != ExitError || strings.Count(line, "\n") != 1 || strings.Contains(line, ro) || !errors.Is(err, gitops.ErrForbidden) ||
		!strings.HasPrefix(line, "error: token lacks pull-request write permission on "+g.User+"/gitops (403") {
		t.Errorf("exit %d, line %q", code, line)
	}
}
