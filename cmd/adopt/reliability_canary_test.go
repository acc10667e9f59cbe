package main

// Canary credentials (issue 8, security): every command runs with secrets
// that must never appear in anything adopt prints or writes. The secrets are
// real: the admin token opens the real API server and the git password opens
// the real git server, so a run that succeeds proves the secret was used.
// Failing runs (a 401 from the real API server, a wrong git password, a
// closed port) make client-go, go-git and the Argo CD client wrap errors
// that carry URLs and credentials.
//
// The scanner (leakScan, forms, refNames) is leakscan_test.go's, shared
// with the leak suite (leak_test.go).

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/internal/testenv"
)

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestNoCredentialInAnyOutput(t *testing.T) {
	const (
		gitPass      = "gitpass-CANARY-a1b2c3d4"
		wrongFlag    = "wrongflag-CANARY-e5f6"
		wrongURLPass = "wrongurl-CANARY-0718"
		userToken    = "usertoken-CANARY-9a9b" // https://<token>@host/..., GitHub style
		badKubeToken = "kubetoken-CANARY-c0ffee"
		deadKube     = "deadkube-CANARY-beef"
		kubeURLPass  = "kubeurl-CANARY-4242"
		giteaToken   = "gitea-CANARY-1357"
		githubToken  = "github-CANARY-2468"
		argoToken    = "argocd-CANARY-8642"
		argoEnvToken = "argocdenv-CANARY-9753"
	)
	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{
		"the admin token": cp.AdminToken, "the git password": gitPass, "--git-token (wrong)": wrongFlag,
		"the URL password (wrong)": wrongURLPass, "the URL token user": userToken, "the rejected kubeconfig token": badKubeToken,
		"the unreachable kubeconfig token": deadKube, "the kubeconfig server URL password": kubeURLPass,
		"GITEA_TOKEN": giteaToken, "GITHUB_TOKEN": githubToken, "--argocd-token": argoToken, "ARGOCD_AUTH_TOKEN": argoEnvToken,
	}}
	// The scan itself must find a planted canary, in each form.
	for _, f := range forms("alice", gitPass) {
		if len(scan.find("x"+f+"x")) == 0 {
			t.Fatalf("the scan cannot find %q", f)
		}
	}

	ns := cp.Namespace(t)
	handApplied(t, ns)
	g, err := testenv.StartGitServer("alice", gitPass)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	repoURL, err := g.CreateRepo("gitops", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	// A provider needs an owner/name path; the git server answers its API
	// calls with 401, a real failure that carries the token's request.
	if _, err := g.CreateRepo("org/estate", map[string]string{"README.md": "gitops\n"}); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(g.URL, "http://")
	withUser := func(userinfo string) string { return "http://" + userinfo + "@" + host + "/gitops.git" }
	prRepo := "http://alice:" + gitPass + "@" + host + "/org/estate.git"

	dir := t.TempDir()
	badKC := filepath.Join(dir, "rejected.kubeconfig")
	deadKC := filepath.Join(dir, "unreachable.kubeconfig")
	urlKC := filepath.Join(dir, "userinfo.kubeconfig")
	for path, args := range map[string][2]string{
		badKC:  {cp.Server, badKubeToken},
		deadKC: {"https://" + closedPort(t), deadKube},
		urlKC:  {strings.Replace(cp.Server, "https://", "https://kube:"+kubeURLPass+"@", 1), cp.AdminToken},
	} {
		if err := testenv.WriteKubeconfig(path, args[0], "mallory", args[1]); err != nil {
			t.Fatal(err)
		}
	}

	type step struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // in stdout+stderr
	}
	planFile := filepath.Join(dir, "plan.yaml")
	repoPlan := filepath.Join(dir, "plan-repo.yaml")
	author := []string{"--author", "T <t@example.invalid>"}
	// run runs one step in a subtest, so that its environment ends with it.
	run := func(s step) (output string) {
		t.Run(s.name, func(t *testing.T) {
			for k, v := range s.env {
				t.Setenv(k, v)
			}
			out, errOut, code := adopt(t, s.args...)
			scan.add(s.name+" (stdout)", out)
			scan.add(s.name+" (stderr)", errOut)
			output = out + errOut
			if code != s.code || !strings.Contains(output, s.want) {
				t.Errorf("exit %d (want %d), want %q in:\n%s", code, s.code, s.want, output)
			}
			if s.code != ExitOK && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("the error is not one line:\n%s", errOut)
			}
		})
		return output
	}
	apply := func(extra ...string) []string {
		return append(append([]string{"apply", "--plan", planFile, "-q"}, author...), extra...)
	}
	steps := []step{
		{name: "plan", args: []string{"plan", "-n", ns, "-q", "--out", planFile}, want: "ConfigMap"},
		{name: "plan --repo with the password in the URL", args: []string{"plan", "-n", ns, "-q", "--out", repoPlan, "--repo", withUser("alice:" + gitPass)}, want: "ConfigMap"},
		{name: "plan --repo with ADOPT_GIT_TOKEN", env: map[string]string{"ADOPT_GIT_USERNAME": "alice", "ADOPT_GIT_TOKEN": gitPass}, args: []string{"plan", "-n", ns, "-q", "--repo", repoURL}, want: "ConfigMap"},
		{name: "plan --repo with a wrong URL password", args: []string{"plan", "-n", ns, "-q", "--repo", withUser("alice:" + wrongURLPass)}, code: ExitError, want: "cannot read repo"},
		{name: "plan --repo with a token as the URL user", args: []string{"plan", "-n", ns, "-q", "--repo", withUser(userToken)}, code: ExitError, want: "cannot read repo"},
		{name: "plan with a rejected kubeconfig token", args: []string{"--kubeconfig", badKC, "plan", "-n", ns}, code: ExitError, want: "401"},
		{name: "plan with an unreachable server", args: []string{"--kubeconfig", deadKC, "plan", "-n", ns}, code: ExitError, want: "cannot reach the API server"},
		{name: "plan with userinfo in the kubeconfig server URL", args: []string{"--kubeconfig", urlKC, "plan", "-n", ns}, code: ExitUsage, want: "credentials"},
		{name: "apply --dry-run with --git-token", args: apply("--repo", repoURL, "--git-user", "alice", "--git-token", gitPass, "--dry-run"), want: "nothing was written"},
		{name: "apply with ADOPT_GIT_TOKEN", env: map[string]string{"ADOPT_GIT_TOKEN": gitPass}, args: apply("--repo", repoURL, "--git-user", "alice"), want: "committed"},
		{name: "apply with the password in the URL", args: apply("--repo", withUser("alice:"+gitPass), "--branch", "adopt/url"), want: "committed"},
		{name: "apply --no-push with the password in the URL", args: apply("--repo", withUser("alice:"+gitPass), "--branch", "adopt/local", "--no-push"), want: "not pushed"},
		{name: "apply with a wrong --git-token", args: apply("--repo", repoURL, "--git-user", "alice", "--git-token", wrongFlag), code: ExitError, want: "authentication"},
		{name: "apply with a wrong URL password", args: apply("--repo", withUser("alice:"+wrongURLPass)), code: ExitError, want: "authentication"},
		{name: "apply with a token as the URL user", args: apply("--repo", withUser(userToken)), code: ExitError, want: "authentication"},
		{name: "apply with a rejected kubeconfig token", args: append([]string{"--kubeconfig", badKC}, apply("--repo", repoURL)...), code: ExitError, want: "401"},
		{name: "apply --open-pr with GITEA_TOKEN", env: map[string]string{"ADOPT_GIT_TOKEN": "", "GITEA_TOKEN": giteaToken},
			args: apply("--repo", prRepo, "--open-pr", "--provider", "gitea", "--api-url", g.URL), code: ExitError, want: "401"},
		{name: "apply --open-pr with GITHUB_TOKEN", env: map[string]string{"ADOPT_GIT_TOKEN": "", "GITHUB_TOKEN": githubToken},
			args: apply("--repo", prRepo, "--open-pr", "--provider", "github", "--api-url", g.URL), code: ExitError, want: "401"},
	}
	var noPushOut string
	for _, s := range steps {
		out := run(s)
		if strings.Contains(s.name, "--no-push") {
			noPushOut = out
		}
	}
	// The --no-push clone is a file tree adopt wrote.
	if m := regexp.MustCompile(`in (\S+), not pushed`).FindStringSubmatch(noPushOut); m != nil {
		defer os.RemoveAll(m[1])
		scan.addTree(t, m[1])
	} else {
		t.Errorf("no clone directory in the --no-push output:\n%s", noPushOut)
	}

	// finalize: a synced Application over a hand-applied ConfigMap.
	fns := cp.Namespace(t)
	app := "adopt-" + fns
	handThenArgo(t, configMap(fns, map[string]string{"a": "1"}), app+":/ConfigMap:"+fns+"/usage-hook")
	finPlan := writePlan(t, cmObject(fns))
	putApplication(t, app, fns, syncedStatus("Healthy"))
	fin := func(extra ...string) []string {
		return append([]string{"finalize", "--plan", finPlan, "--poll-interval", "100ms"}, extra...)
	}
	argoAddr := closedPort(t)
	for _, s := range []step{
		{name: "finalize --dry-run", args: fin("--dry-run"), want: "would-finalize"},
		{name: "finalize with a rejected kubeconfig token", args: append([]string{"--kubeconfig", badKC}, fin()...), code: ExitError, want: "401"},
		{name: "finalize --argocd-token against a closed argocd-server", args: fin("--argocd-server", argoAddr, "--argocd-token", argoToken, "--plaintext", "--timeout", "2s"), code: ExitError, want: argoAddr},
		{name: "finalize with ARGOCD_AUTH_TOKEN against a closed argocd-server", env: map[string]string{"ARGOCD_AUTH_TOKEN": argoEnvToken},
			args: fin("--argocd-server", argoAddr, "--plaintext", "--timeout", "2s"), code: ExitError, want: argoAddr},
		{name: "finalize", args: fin(), want: "finalized"},
	} {
		run(s)
	}

	for _, f := range []string{planFile, repoPlan, finPlan, finPlan + ".journal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%v", err)
		}
		scan.add(f, string(b))
	}
	for _, bare := range []string{g.BarePath("gitops"), g.BarePath("org/estate")} {
		scan.add(bare+": commits, files and messages", everything(t, bare))
		scan.add(bare+": refs", refNames(t, bare))
	}
	scan.check(t)
}
