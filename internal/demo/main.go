// Command demo is the built-in local demo behind `make demo`: it starts the
// real local control plane from internal/testenv, seeds it with the
// incident's estate using the real kubectl, runs the adopt binary against it
// and narrates. It stops everything on exit, Ctrl-C included.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/adopt-dev/adopt/internal/testenv"
)

func main() {
	adoptBin := flag.String("adopt", "bin/adopt", "path to the adopt binary")
	flag.Parse()
	if err := run(*adoptBin); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func say(format string, a ...any) {
	if _, noColor := os.LookupEnv("NO_COLOR"); noColor {
		fmt.Printf("\n==> "+format+"\n", a...)
		return
	}
	fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", a...)
}

func run(adoptBin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	say("Starting a real kube-apiserver and etcd on loopback (built once, cached in ~/.cache/adopt)")
	start := time.Now()
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Printf("control plane %s ready in %s\n", cp.Server, time.Since(start).Round(time.Millisecond))

	say("Seeding the incident's estate with the real kubectl, the way the runbook did")
	if err := Seed(ctx, cp, os.Stdout); err != nil {
		return err
	}

	work, err := os.MkdirTemp("", "adopt-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "gitops")
	say("A local GitOps repo where Git is ahead of the cluster (%s)", repo)
	if err := testenv.InitRepo(repo, GitOpsRepo()); err != nil {
		return err
	}
	fmt.Println("k8s/system/litellm-test-usage-hook-cm.yaml is 8,126 B ahead of the live ConfigMap; k8s/system/README.md still says kubectl apply")

	adopt := func(args ...string) error {
		fmt.Printf("$ adopt %s\n\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, adoptBin, append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("adopt %s: %w", args[0], err)
		}
		return nil
	}
	planFile := filepath.Join(work, "plan.yaml")
	say("adopt plan: what is untracked, how close to the cap, and where it lives in Git")
	if err := adopt("plan", "--repo", repo, "--out", planFile); err != nil {
		return err
	}
	say("adopt apply: the Applications, on a branch of the GitOps repo (nothing in the cluster changes)")
	if err := adopt("apply", "--plan", planFile, "--repo", repo, "--repo-url", "https://git.example.invalid/platform/gitops.git"); err != nil {
		return err
	}
	if os.Getenv("PR") != "" {
		if err := pullRequest(ctx, adopt, repo, planFile); err != nil {
			return err
		}
	}
	say("What apply wrote")
	git := exec.CommandContext(ctx, "git", "-C", repo, "log", "--all", "--stat", "--format=%n%C(auto)%d %s%n%b", "-1", "--exclude=refs/heads/main", "--branches=adopt/*")
	git.Stdout, git.Stderr = os.Stdout, os.Stderr
	if err := git.Run(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	fmt.Println("\nNext, after review and merge, and Argo CD's first sync:  adopt finalize --plan plan.yaml")

	say("On your own cluster")
	fmt.Println(strings.TrimPrefix(`
  adopt plan                          # uses your current kubectl context
  adopt plan --context prod -n litellm-test -o yaml
  adopt plan --out plan.yaml          # the reviewable plan file
adopt only reads the cluster during plan. It needs list and get on the types it
scans; see examples/rbac for a read-only ClusterRole.`, "\n"))
	if os.Getenv("DEMO_KEEP") != "" {
		say("DEMO_KEEP is set: the control plane stays up until Ctrl-C. KUBECONFIG=%s", cp.Kubeconfig)
		<-ctx.Done()
	}
	say("Stopping the control plane")
	return nil
}

// pullRequest starts a real Gitea on loopback, copies the demo repo into it
// and runs `adopt apply --open-pr` against it (make demo PR=1).
func pullRequest(ctx context.Context, adopt func(...string) error, repo, planFile string) error {
	say("PR=1: starting a real Gitea on loopback (built once, cached in ~/.cache/adopt)")
	g, err := testenv.StartGitea(ctx)
	if err != nil {
		return err
	}
	defer g.Stop()
	url, err := g.CreateRepo(ctx, "gitops")
	if err != nil {
		return err
	}
	if err := g.PushRepo(ctx, repo, url, "main"); err != nil {
		return err
	}
	say("adopt apply --open-pr against %s", url)
	os.Setenv("ADOPT_GIT_TOKEN", g.Token) // for the push; the PR step reads it too
	if err := adopt("apply", "--plan", planFile, "--repo", url, "--git-user", g.User, "--open-pr", "--provider", "gitea", "--pr-label", "adopt"); err != nil {
		return err
	}
	fmt.Printf("Log in at %s as %s / %s to read the pull request while the demo waits 5 seconds.\n", g.URL, g.User, g.Password)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	return nil
}
