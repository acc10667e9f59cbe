package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
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

// prInput is a pull request for one critical ConfigMap in Git.
func prInput() apply.PRInput {
	hook := plan.Object{Ref: objref.Ref{Kind: "ConfigMap", Version: "v1", Namespace: "litellm-test", Name: "litellm-test-usage-hook"},
		Budget: budget.Budget{AnnotationBytes: 257270, PercentOfCap: 98.1, Headroom: 4874}, Level: budget.LevelCritical,
		App: "litellm-test", Git: &plan.GitMatch{Path: "k8s/system/litellm-test-usage-hook-cm.yaml", Line: 1}}
	p := &plan.Plan{Cluster: plan.Cluster{Server: "https://127.0.0.1:6443", Context: "prod-eu"}, Objects: []plan.Object{hook},
		Applications: []plan.Application{{Name: "litellm-test", Namespace: "litellm-test", SourcePath: "k8s/system", Objects: []string{hook.Ref.String()}}}}
	return apply.PRInput{Head: "adopt/litellm-test", Base: "main", Plan: p, PlanPath: "plans/prod-eu.yaml",
		Drift: map[string]string{hook.Ref.String(): "live 8,126 B behind Git"}}
}

func TestOpenPRNeedsProviderAndToken(t *testing.T) {
	o := parsePRFlags(t, "--open-pr")
	o.getenv = func(string) string { return "" }
	in := prInput()
	in.RepoURL = "https://git.example.invalid/acme/gitops.git"
	if _, err := o.Open(context.Background(), in, "", "", nil); err == nil || !strings.Contains(err.Error(), "cannot tell which provider hosts git.example.invalid: pass --provider gitea|github|gitlab") {
		t.Errorf("no provider: %v", err)
	}
	in.RepoURL = "https://gitlab.example.invalid/acme/gitops.git"
	if _, err := o.Open(context.Background(), in, "", "", nil); err == nil || !strings.Contains(err.Error(), "no pull-request token for acme/gitops (gitlab): pass --git-token or set ADOPT_GIT_TOKEN or GITLAB_TOKEN") {
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
	g := giteaInBackground(ctx, t)()
	repo := giteaName(t, "gitops")
	cloneURL, err := g.CreateRepo(ctx, repo)
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
	url, err := o.Open(ctx, in, "", "", &out)
	if err != nil {
		t.Fatalf("Open: %v\n%s", err, g.LogTail(2000))
	}
	if !strings.Contains(out.String(), "provider gitea (--provider)") || !strings.Contains(out.String(), "token from $GITEA_TOKEN") || !strings.Contains(out.String(), "Opened pull request #1: "+url) {
		t.Errorf("output:\n%s", out.String())
	}
	if strings.Contains(out.String(), g.Token) {
		t.Errorf("output leaks the token")
	}
	wantTitle, wantBody, _ := apply.RenderPR(in, "")
	prs, err := g.PullRequests(ctx, repo)
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
	url2, err := o.Open(ctx, in, "", "", &out)
	if err != nil || url2 != url || !strings.Contains(out.String(), "Updated pull request #1") {
		t.Fatalf("second Open = %s, %v; output %s", url2, err, out.String())
	}
	prs, _ = g.PullRequests(ctx, repo)
	if len(prs) != 1 || !strings.Contains(prs[0].Body, "| identical |") {
		t.Fatalf("after the second run: %d pull requests, body updated %v", len(prs), len(prs) == 1 && strings.Contains(prs[0].Body, "| identical |"))
	}

	// A read-only token given as --git-token: the one-line error.
	ro, err := g.CreateToken(ctx, giteaName(t, "read-only"), "read:repository")
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Open(ctx, in, ro, "--git-token", nil)
	if err == nil {
		t.Fatal("a read-only token opened or updated a pull request")
	}
	var stderr bytes.Buffer
	code := report(&stderr, err)
	line := stderr.String()
	t.Logf("read-only token: %s", strings.TrimSpace(line))
	if code != ExitError || strings.Count(line, "\n") != 1 || strings.Contains(line, ro) || !errors.Is(err, gitops.ErrForbidden) ||
		!strings.HasPrefix(line, "error: token lacks pull-request write permission on "+g.User+"/"+repo+" (403") {
		t.Errorf("exit %d, line %q", code, line)
	}

	// reconcile's autoclose (gitops.PRCloser) on the real Gitea: one
	// comment, the pull request closed, its title, body and labels as
	// they were.
	prov, err := gitops.NewProvider("gitea", gitops.ProviderOptions{APIURL: g.URL, Token: g.Token})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := g.PullRequests(ctx, repo)
	const why = "Closed by adopt reconcile: the objects are gone or tracked now."
	if err := prov.(gitops.PRCloser).ClosePR(ctx, gitops.ClosePROptions{Repo: gitops.RepoRef{Host: "gitea", Owner: g.User, Name: repo}, Number: 1, Comment: why}); err != nil {
		t.Fatal(err)
	}
	after, err := g.PullRequests(ctx, repo)
	if err != nil || len(after) != 1 || len(before) != 1 {
		t.Fatalf("pull requests after ClosePR: %v, %v", after, err)
	}
	if a, b := after[0], before[0]; a.State != "closed" || a.Title != b.Title || a.Body != b.Body || strings.Join(a.LabelNames(), ",") != strings.Join(b.LabelNames(), ",") {
		t.Errorf("after ClosePR: state %q, title %q, labels %v, body kept %v; want closed and the rest as before (%q, %v)", a.State, a.Title, a.LabelNames(), a.Body == b.Body, b.Title, b.LabelNames())
	}
	if comments, err := g.Comments(ctx, repo, 1); err != nil || len(comments) != 1 || comments[0] != why {
		t.Errorf("comments after ClosePR: %q, %v; want the one comment", comments, err)
	}
}
