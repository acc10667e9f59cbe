package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestApplyOpenPRCommand runs the whole `adopt apply --open-pr` against the
// real control plane and a real Gitea: push, open, read back; run again
// (the token now from $ADOPT_GIT_TOKEN, and said so) and still one pull
// request.
func TestApplyOpenPRCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	g := giteaInBackground(ctx, t)()
	repo := giteaName(t, "estate")
	cloneURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	m := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  namespace: %s\ndata:\n  hook.py: %q\n", ns, strings.Repeat("x", 1000))
	if _, err := cp.Kubectl(ctx, []byte(m), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "-n", ns, "-q", "--repo", cloneURL, "--git-user", g.User,
		"--open-pr", "--provider", "gitea", "--pr-label", "adopt", "--author", "adopt <adopt@example.invalid>"}
	for run := 1; run <= 2; run++ {
		runArgs, from := append(args, "--git-token", g.Token), "--git-token"
		if run == 2 {
			t.Setenv("ADOPT_GIT_TOKEN", g.Token)
			runArgs, from = args, "$ADOPT_GIT_TOKEN"
		}
		out, errOut, code := adopt(t, runArgs...)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s\n%s", run, code, errOut, out)
		}
		if !strings.Contains(out, "token from "+from+"\n") {
			t.Errorf("run %d: the output does not say the token came from %s:\n%s", run, from, out)
		}
		if strings.Contains(out+errOut, g.Token) {
			t.Fatalf("run %d: output leaks the token", run)
		}
		prs, err := g.PullRequests(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		if len(prs) != 1 {
			t.Fatalf("run %d: %d pull requests, want exactly 1", run, len(prs))
		}
		pr := prs[0]
		if !strings.HasPrefix(pr.Head.Ref, "adopt/") || pr.Base.Ref != "main" || pr.State != "open" {
			t.Fatalf("run %d: head %q base %q state %q", run, pr.Head.Ref, pr.Base.Ref, pr.State)
		}
		if !strings.Contains(pr.Body, "ConfigMap "+ns+"/hook") || !strings.Contains(pr.Body, "adopt finalize") {
			t.Fatalf("run %d: body lacks the object or the next step:\n%s", run, pr.Body)
		}
		if l := pr.LabelNames(); len(l) != 1 || l[0] != "adopt" {
			t.Fatalf("run %d: labels %v", run, l)
		}
	}
}
