// Command demo is the built-in local demo behind `make demo`: it starts the
// real local control plane from internal/testenv with a real scheduler, seeds
// it with the incident's estate (internal/demo/estate) using the real
// kubectl, starts the real Sealed Secrets controller, runs the adopt binary
// against it and narrates. By default it also runs a real Argo CD and tells
// the whole story: plan, apply, merge, the Applications, finalize --sync
// (the hand-applied Secret taken over in place by its SealedSecret), a key
// deleted in Git, and reconcile finding 0 untracked objects. ARGOCD=0 stops
// after apply; ARGOCD=v2.14.21 picks the other tested version. It stops
// everything on exit, Ctrl-C included.
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

	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/atomicfile"
	"github.com/adopt-dev/adopt/internal/demo/estate"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// defaultArgoCD is the Argo CD version the demo runs unless ARGOCD says
// otherwise: a v3 inside the client-side-apply migration trap (issue 10).
const defaultArgoCD = "v3.2.6"

func main() {
	adoptBin := flag.String("adopt", "bin/adopt", "path to the adopt binary")
	flag.Parse()
	version := defaultArgoCD
	switch v := os.Getenv("ARGOCD"); v {
	case "", "1":
	case "0":
		version = ""
	default:
		version = v
	}
	if err := run(*adoptBin, version); err != nil {
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

// demo holds what the steps share.
type demo struct {
	cp       *testenv.ControlPlane
	adoptBin string
	work     string
	timings  []string
	last     time.Time
}

// phase records how long the phase that just ended took.
func (d *demo) phase(name string) {
	d.timings = append(d.timings, fmt.Sprintf("  %-32s %s", name, time.Since(d.last).Round(100*time.Millisecond)))
	d.last = time.Now()
}

// adopt runs the adopt binary with extra environment variables; it returns
// the exit code, and an error only when the binary could not run.
func (d *demo) adopt(ctx context.Context, env []string, args ...string) (int, error) {
	fmt.Printf("$ adopt %s\n\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.adoptBin, append([]string{"--kubeconfig", d.cp.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// mustAdopt is adopt that wants exit code 0.
func (d *demo) mustAdopt(ctx context.Context, env []string, args ...string) error {
	code, err := d.adopt(ctx, env, args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d", code)
	}
	if err != nil {
		return fmt.Errorf("adopt %s: %w", args[0], err)
	}
	return nil
}

// kubectl runs the real kubectl, echoing the command and its output.
func (d *demo) kubectl(ctx context.Context, args ...string) error {
	fmt.Printf("$ kubectl %s\n", strings.Join(args, " "))
	out, err := d.cp.Kubectl(ctx, nil, args...)
	fmt.Print(out)
	return err
}

// git runs the git CLI in dir, echoing the command.
func (d *demo) git(ctx context.Context, dir string, args ...string) (string, error) {
	fmt.Printf("$ git %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func run(adoptBin, version string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{adoptBin: adoptBin, last: time.Now()}

	say("Starting a real kube-apiserver and etcd on loopback (built once, cached in ~/.cache/adopt)")
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	d.cp = cp
	fmt.Printf("control plane %s ready\n", cp.Server)
	d.phase("control plane")

	say("A real kube-scheduler and kube-controller-manager, and an e2-small-like node at %.0f%% of its memory", estate.NodeFull*100)
	sched, err := estate.StartCapacity(ctx, cp)
	if err != nil {
		return err
	}
	defer sched.Stop()
	fmt.Printf("node %s: %s CPU, %s allocatable, a filler pod requests %.0f%% of it\n", estate.Node, estate.NodeCPU, estate.NodeMemory, estate.NodeFull*100)
	d.phase("scheduler")

	if d.work, err = os.MkdirTemp("", "adopt-demo-"); err != nil {
		return err
	}
	defer os.RemoveAll(d.work)
	if version == "" {
		err = d.withoutArgoCD(ctx)
	} else {
		err = d.withArgoCD(ctx, version)
	}
	if err != nil {
		return err
	}

	say("On your own cluster")
	fmt.Println(strings.TrimPrefix(`
  adopt plan                          # uses your current kubectl context
  adopt plan --context prod -n litellm-test -o yaml
  adopt plan --out plan.yaml          # the reviewable plan file
adopt only reads the cluster during plan. It needs list and get on the types it
scans; see examples/rbac for a read-only ClusterRole.`, "\n"))
	say("How long each phase took")
	fmt.Println(strings.Join(d.timings, "\n"))
	if os.Getenv("DEMO_KEEP") != "" {
		say("DEMO_KEEP is set: the control plane stays up until Ctrl-C. KUBECONFIG=%s", cp.Kubeconfig)
		<-ctx.Done()
	}
	say("Stopping everything")
	return nil
}

// seed seeds the estate and shows the Deployment that cannot fit.
func (d *demo) seed(ctx context.Context) error {
	say("Seeding the incident's estate with the real kubectl, the way the runbook did")
	if err := estate.Seed(ctx, d.cp, os.Stdout); err != nil {
		return err
	}
	reason, err := d.cp.WaitUnschedulable(ctx, "litellm-test", "app=litellm")
	if err != nil {
		return err
	}
	fmt.Printf("the litellm pod is Pending; the scheduler says: %s\n", reason)
	d.phase("seed")
	return nil
}

// withoutArgoCD is ARGOCD=0: plan and apply against a local GitOps repo.
func (d *demo) withoutArgoCD(ctx context.Context) error {
	if err := d.seed(ctx); err != nil {
		return err
	}
	ss, adoptConfig, err := d.sealedSecrets(ctx)
	if err != nil {
		return err
	}
	defer ss.Stop()
	repo := filepath.Join(d.work, "gitops")
	say("A local GitOps repo where Git is ahead of the cluster (%s)", repo)
	if err := testenv.InitRepo(repo, estate.GitOpsRepo("https://git.example.invalid/platform/gitops.git")); err != nil {
		return err
	}
	fmt.Println("k8s/system/litellm-test-usage-hook-cm.yaml is 8,126 B ahead of the live ConfigMap; k8s/system/README.md still says kubectl apply")
	cfg := filepath.Join(d.work, "adopt.yaml")
	if err := atomicfile.WriteFile(cfg, []byte(adoptConfig), 0o644); err != nil {
		return err
	}
	planFile := filepath.Join(d.work, "plan.yaml")
	say("adopt plan: what is untracked, how close to the cap, and where it lives in Git")
	if err := d.mustAdopt(ctx, nil, "plan", "--repo", repo, "--config", cfg, "--out", planFile); err != nil {
		return err
	}
	d.phase("plan")
	say("adopt apply: the Applications, on a branch of the GitOps repo (nothing in the cluster changes)")
	say("Without an Argo CD to ask, the version is unknown: apply refuses to guess whether the first sync of the 98% ConfigMap needs ClientSideApplyMigration=false")
	if code, err := d.adopt(ctx, nil, "apply", "--plan", planFile, "--repo", repo, "--repo-url", "https://git.example.invalid/platform/gitops.git"); err != nil || code != 2 {
		return fmt.Errorf("apply with the Argo CD version unknown: exit %d (%v), want 2 (refused)", code, err)
	}
	say("So name the remedy: --csa-migration=disable is safe on every Argo CD version")
	if err := d.mustAdopt(ctx, nil, "apply", "--plan", planFile, "--repo", repo, "--repo-url", "https://git.example.invalid/platform/gitops.git", "--csa-migration", "disable"); err != nil {
		return err
	}
	d.phase("apply")
	if os.Getenv("PR") != "" {
		if err := d.pullRequest(ctx, repo, planFile); err != nil {
			return err
		}
	}
	say("What apply wrote")
	git := exec.CommandContext(ctx, "git", "-C", repo, "log", "--all", "--stat", "--format=%n%C(auto)%d %s%n%b", "-1", "--exclude=refs/heads/main", "--branches=adopt/*")
	git.Stdout, git.Stderr = os.Stdout, os.Stderr
	if err := git.Run(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	say("What happens to the Secret %s/%s without Argo CD", estate.SecretNamespace, estate.SecretName)
	fmt.Println(strings.TrimPrefix(`
It is in the commit as a SealedSecret, sealed with the controller's key and
verified by the controller: ciphertext only, no value in Git, the plan or this
output. Nothing in the cluster changed: the live Secret stays as it was, hand-
applied, and stays yours until the takeover. That needs Argo CD's first sync,
which adopt finalize --sync starts after marking the Secret
sealedsecrets.bitnami.com/managed=true; the controller then takes it over in
place and finalize proves it. make demo without ARGOCD=0 shows that part.`, "\n"))
	fmt.Println("\nNext, after review and merge:  adopt finalize --plan plan.yaml --sync")
	fmt.Println("(make demo without ARGOCD=0 runs that part too, on a real Argo CD)")
	return d.status(ctx, nil, planFile, repo, "--config", cfg)
}

// status ends the demo: adopt status over the plan, and its HTML report
// written where it outlives the demo's work directory.
func (d *demo) status(ctx context.Context, env []string, planFile, repo string, extra ...string) error {
	say("adopt status: where every object stands, and the report for the team")
	dir, err := os.MkdirTemp("", "adopt-demo-status-")
	if err != nil {
		return err
	}
	html := filepath.Join(dir, "status.html")
	args := append([]string{"status", "--plan", planFile, "--repo", repo, "--record", filepath.Join(dir, "history"), "--html", html}, extra...)
	if err := d.mustAdopt(ctx, env, args...); err != nil {
		return err
	}
	d.phase("status")
	fmt.Printf("\nThe status report (self-contained, works offline): %s\n", html)
	return nil
}

// withArgoCD tells the whole story on a real Argo CD.
func (d *demo) withArgoCD(ctx context.Context, version string) error {
	say("A real Argo CD %s out of cluster on loopback (built once, cached in ~/.cache/adopt; the first build takes minutes)", version)
	argo, err := testenv.StartArgoCD(ctx, d.cp, version)
	if err != nil {
		return err
	}
	defer argo.Stop()
	for _, tm := range argo.Timings {
		fmt.Printf("  %-48s %s\n", tm.Step, tm.Took.Round(time.Millisecond))
	}
	if err := argo.SetConfig(ctx, map[string]string{"application.resourceTrackingMethod": "annotation"}); err != nil {
		return err
	}
	fmt.Printf("argocd-server at %s; tracking by annotation (argocd-cm)\n", argo.Address)
	d.phase("argo cd")

	say("The GitOps repo on a local git server (smart HTTP, basic auth), where Git is ahead of the cluster")
	password := fmt.Sprintf("demo-%d", time.Now().UnixNano())
	gs, err := testenv.StartGitServer("adopt", password)
	if err != nil {
		return err
	}
	defer gs.Close()
	repoURL := gs.URL + "/gitops.git"
	if _, err := gs.CreateRepo("gitops", estate.GitOpsRepo(repoURL)); err != nil {
		return err
	}
	repoSecret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: repo-gitops
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: git, url: %q, username: %q, password: %q}
`, repoURL, gs.User, gs.Password)
	if err := argo.CreateApplication(ctx, []byte(repoSecret)); err != nil {
		return err
	}
	fmt.Printf("%s: k8s/system/litellm-test-usage-hook-cm.yaml is 8,126 B ahead of the live ConfigMap; Argo CD has its credentials (Secret argocd/repo-gitops)\n", repoURL)
	checkout := filepath.Join(d.work, "checkout")
	if _, err := d.git(ctx, "", "clone", "-q", gs.BarePath("gitops"), checkout); err != nil {
		return err
	}
	if err := d.seed(ctx); err != nil {
		return err
	}
	ss, adoptConfig, err := d.sealedSecrets(ctx)
	if err != nil {
		return err
	}
	defer ss.Stop()
	secret, err := d.secretBefore(ctx)
	if err != nil {
		return err
	}
	say("The payments service is already managed by Argo CD")
	if err := d.kubectl(ctx, "apply", "-n", argo.Namespace, "-f", filepath.Join(checkout, estate.PaymentsApp)); err != nil {
		return err
	}

	cfg := filepath.Join(d.work, "adopt.yaml")
	if err := atomicfile.WriteFile(cfg, []byte(adoptConfig), 0o644); err != nil {
		return err
	}
	fmt.Printf("adopt.yaml leaves Argo CD's and the Sealed Secrets controller's own installations out:\n%s", adoptConfig)
	planFile := filepath.Join(d.work, "plan.yaml")
	gitEnv := []string{"ADOPT_GIT_USERNAME=" + gs.User, "ADOPT_GIT_TOKEN=" + gs.Password}
	say("adopt plan: what is untracked, how close to the cap, and where it lives in Git")
	if err := d.mustAdopt(ctx, gitEnv, "plan", "--repo", repoURL, "--config", cfg, "--argocd-version", version, "--out", planFile); err != nil {
		return err
	}
	d.phase("plan")
	say("adopt apply: the Applications, on a branch of the GitOps repo (nothing in the cluster changes)")
	if err := d.mustAdopt(ctx, gitEnv, "apply", "--plan", planFile, "--repo", repoURL, "--git-user", gs.User); err != nil {
		return err
	}
	d.phase("apply")
	if os.Getenv("PR") != "" {
		if err := d.pullRequest(ctx, checkout, planFile); err != nil {
			return err
		}
	}

	say("Review and merge (here: fast-forward main to the adoption branch)")
	bare := gs.BarePath("gitops")
	branch, err := d.git(ctx, bare, "for-each-ref", "--format=%(refname)", "refs/heads/adopt/")
	if err != nil {
		return err
	}
	old, err := d.git(ctx, bare, "rev-parse", "refs/heads/main")
	if err != nil {
		return err
	}
	if _, err := d.git(ctx, bare, "merge-base", "--is-ancestor", old, branch); err != nil {
		return err
	}
	if _, err := d.git(ctx, bare, "update-ref", "refs/heads/main", branch, old); err != nil {
		return err
	}
	if _, err := d.git(ctx, checkout, "pull", "-q", "--ff-only", "origin", "main"); err != nil {
		return err
	}
	say("Create the Applications from the repo (or let an app-of-apps pick up argocd/apps/)")
	if err := d.kubectl(ctx, "apply", "-n", argo.Namespace, "-f", filepath.Join(checkout, "argocd", "apps")); err != nil {
		return err
	}
	d.phase("merge + Applications")

	say("adopt finalize --sync, Kubernetes mode: first sync of adopt-system, then clean up the hooks")
	if err := d.mustAdopt(ctx, nil, "finalize", "--plan", planFile, "--sync", "--app", "adopt-system", "--timeout", "5m", "--poll-interval", "1s"); err != nil {
		return err
	}
	d.phase("finalize (kubernetes mode)")
	say("adopt finalize --sync, Argo CD API mode: log in as admin with the initial admin password, then adopt-cluster")
	token, err := argo.Token(ctx)
	if err != nil {
		return err
	}
	tokenEnv := []string{"ARGOCD_AUTH_TOKEN=" + token}
	api := []string{"--argocd-server", argo.Address, "--plaintext", "--poll-interval", "1s"}
	fmt.Println("(the token is in $ARGOCD_AUTH_TOKEN; adopt never prints it)")
	if err := d.mustAdopt(ctx, tokenEnv, append([]string{"finalize", "--plan", planFile, "--sync", "--app", "adopt-cluster", "--timeout", "5m"}, api...)...); err != nil {
		return err
	}
	say("adopt-litellm-test: finalize marks its Secret for the Sealed Secrets controller, then starts the first sync; its Deployment cannot fit, so finalize explains why and leaves the Application alone (exit code 4)")
	code, err := d.adopt(ctx, tokenEnv, append([]string{"finalize", "--plan", planFile, "--sync", "--app", "adopt-litellm-test", "--timeout", "30s"}, api...)...)
	if err != nil {
		return err
	}
	if code != 4 {
		return fmt.Errorf("adopt finalize --app adopt-litellm-test: exit code %d, want 4 (not finalized)", code)
	}
	fmt.Println("exit code 4: some objects could not be finalized, as expected")
	d.phase("finalize (api mode)")

	say("Room on the node is the team's call; the rest of adopt-litellm-test need not wait for it. With --allow-health Progressing (the Deployment's rollout waits): its objects finalized, and the Secret's takeover by the controller proven")
	if err := d.mustAdopt(ctx, tokenEnv, append([]string{"finalize", "--plan", planFile, "--app", "adopt-litellm-test", "--allow-health", "Progressing", "--timeout", "2m"}, api...)...); err != nil {
		return err
	}
	if err := d.proveTakeover(ctx, secret); err != nil {
		return err
	}
	d.phase("finalize (sealed secret)")

	say("Git deletes %s from %s; the next sync deletes it from the cluster", estate.DeletedKey, estate.ProxyConfigName)
	if err := atomicfile.WriteFile(filepath.Join(checkout, estate.ProxyConfigPath), []byte(estate.ProxyConfigManifest(false)), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"add", estate.ProxyConfigPath},
		{"-c", "user.name=demo", "-c", "user.email=demo@example.invalid", "commit", "-q", "-m", "drop " + estate.DeletedKey},
		{"push", "-q", "origin", "HEAD:main"},
	} {
		if _, err := d.git(ctx, checkout, args...); err != nil {
			return err
		}
	}
	rev, err := d.git(ctx, checkout, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	fmt.Printf("sync adopt-system at %s (its own sync options, no prune)\n", rev[:12])
	if err := argoapp.TriggerSync(ctx, dynamic.NewForConfigOrDie(d.cp.RESTConfig()), argo.Namespace, "adopt-system", rev); err != nil {
		return err
	}
	st, err := argo.WaitApplication(ctx, "adopt-system", func(s testenv.AppStatus) bool {
		return s.Revision == rev && s.OperationPhase == "Succeeded" && testenv.SyncedHealthy(s)
	})
	if err != nil {
		return err
	}
	fmt.Printf("adopt-system: %s at %s\n", st.Sync+"/"+st.Health, rev[:12])
	if err := d.kubectl(ctx, "get", "configmap", "-n", estate.ProxyConfigNamespace, estate.ProxyConfigName, "-o", "jsonpath={.data}{\"\\n\"}"); err != nil {
		return err
	}
	fmt.Printf("%s is gone. Without finalize, kubectl's co-ownership from the runbook's --server-side apply would have kept it.\n", estate.DeletedKey)
	d.phase("key deleted in git, synced")
	if err := d.status(ctx, gitEnv, planFile, repoURL, "--config", cfg); err != nil {
		return err
	}
	say("adopt reconcile, as a CronJob would run it: the estate is adopted, the Secret included, so there is nothing to do")
	out, err := d.adoptCapture(ctx, gitEnv, "reconcile", "--repo", repoURL, "--config", cfg, "--argocd-version", version, "--journal-dir", d.work)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "nothing to do") || strings.Contains(out, "untracked Secret") {
		return fmt.Errorf("adopt reconcile still finds untracked objects:\n%s", out)
	}
	fmt.Println("0 untracked objects: every hand-applied object is Argo CD's, the Secret through its SealedSecret")
	d.phase("reconcile")
	return nil
}

// pullRequest starts a real Gitea on loopback, copies the demo repo into it
// and runs `adopt apply --open-pr` against it (make demo PR=1).
func (d *demo) pullRequest(ctx context.Context, repo, planFile string) error {
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
	env := []string{"ADOPT_GIT_TOKEN=" + g.Token} // for the push; the PR step reads it too
	if err := d.mustAdopt(ctx, env, "apply", "--plan", planFile, "--repo", url, "--git-user", g.User, "--open-pr", "--provider", "gitea", "--pr-label", "adopt"); err != nil {
		return err
	}
	fmt.Printf("Log in at %s as %s / %s to read the pull request while the demo waits 5 seconds.\n", g.URL, g.User, g.Password)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	return nil
}
