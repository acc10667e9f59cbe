package main

// The leak suite over the SOPS form (issue 45): the paths a Secret
// encrypted with SOPS opens, scanned by the suite's collector and scanner
// (leakscan_test.go).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestLeakSuiteSops: on a real Argo CD (the current GA, the package's
// shared plane), the real Gitea and the real sops CLI (v3.13.3) with age,
// fresh random canaries in a Secret hand-applied client-side (so
// last-applied-configuration holds them too), then server-side: a
// password, a multi-line value and a binary one. The Gitea repo's .sops.yaml has a rule with an
// age recipient for the path apply writes the Secret to. Then plan
// --preview --out; apply --open-pr without sops on PATH (refused, naming
// the Secret; no pull request); apply --open-pr with sops and the age
// identity (the file encrypted by the real sops and decrypted again); the
// merge; Argo CD's first sync through finalize --sync, the plugin
// simulated (below), finalize checking the data against the last-applied
// copy and removing it (journaled); status --record --html; and
// reconcile --metrics-file. No canary, nor the age identity, in any form
// the suite knows, is in any plan file, stdout, stderr, Git object (the
// SOPS file holds ENC[...] values), ref, commit message, pull request,
// journal, status history, HTML report or metrics file. The file in Git,
// decrypted by the real sops, equals the live Secret; after finalize the
// Secret has the same uid and data and no last-applied-configuration.
//
// Simulated: Argo CD's side of SOPS (a config management plugin that
// decrypts; KSOPS is not served by the Go module proxy, so none can be
// built here). Argo CD reads the merged tree from a second repository
// where the SOPS file is replaced by its decryption (what the plugin's
// generate prints), the Application otherwise as adopt wrote it. That
// mirror is the plugin's output, not adopt's, and is not scanned as such;
// it is the suite's proof that it fails on a leak: scanned like Gitea's
// repository, it must report every canary of the Secret in a Git object
// (the SOPS file committed unencrypted is the leak the suite must catch).
func TestLeakSuiteSops(t *testing.T) {
	began := time.Now()
	defer func() { t.Logf("TestLeakSuiteSops: %s", time.Since(began).Round(time.Second)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	sopsDir, err := testenv.SopsBinaries()
	if err != nil {
		t.Fatal(err)
	}
	g := giteaUp()
	ns := c.Namespace(t)

	plants := &leakPlants{}
	plants.external("Gitea's admin token", g.Token)
	keyFile, identity, recipient := ageKey(t)
	plants.external("the age identity", identity)
	s := plantSecret(t, plants, "the SOPS Secret's", "So")
	// Applied again server-side (the runbook's way): a Secret applied
	// client-side only loses last-applied-configuration in Argo CD's
	// server-side first sync, so finalize would find it already finalized
	// and journal nothing; this way finalize checks its data against that
	// copy, removes it and takes kubectl's fields back, journaled.
	s.ServerSide = true
	handApplySecret(ctx, t, c, ns, s)
	live, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The repo keeps its Secrets encrypted: a .sops.yaml on main.
	repo := giteaName(t, "sops")
	cloneURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	seed := t.TempDir()
	sopsYAML := "creation_rules:\n- path_regex: /secret-[^/]*\\.yaml$\n  encrypted_regex: ^(data|stringData)$\n  age: " + recipient + "\n"
	if err := testenv.InitRepo(seed, map[string]string{"README.md": "gitops\n", ".sops.yaml": sopsYAML}); err != nil {
		t.Fatal(err)
	}
	if err := g.PushRepo(ctx, seed, cloneURL, "main"); err != nil {
		t.Fatal(err)
	}

	col := newLeakCollector()
	r := &leakRunner{col: col}
	kc := c.Kubeconfig
	must := func(name string, res leakRun, codes ...int) leakRun {
		t.Helper()
		for _, code := range codes {
			if res.code == code {
				return res
			}
		}
		t.Fatalf("%s: exit %d, want %v:\n%s\n%s", name, res.code, codes, plants.hide(res.out), plants.hide(res.errOut))
		return res
	}
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.yaml")
	must("plan", r.run(t, "plan --preview", kc, map[string]string{"ADOPT_GIT_TOKEN": g.Token}, "plan", "-n", ns, "--repo", cloneURL, "--git-user", g.User,
		"--preview", "--out", planFile, "-o", "yaml"), 0, ExitFindings)
	p := readPlan(t, planFile)
	ob := p.Object("Secret " + ns + "/db")
	if ob == nil || !ob.Sops() {
		t.Fatalf("the plan does not propose Secret %s/db in the SOPS form: %+v", ns, ob)
	}
	sopsFile := ob.SecretForm.Sops.File

	// apply without sops on PATH (git only: apply clones with it): refused,
	// naming the Secret; nothing opened.
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	onlyGit := t.TempDir()
	if err := os.Symlink(gitBin, filepath.Join(onlyGit, "git")); err != nil {
		t.Fatal(err)
	}
	applyArgs := []string{"apply", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--author", "Leak Suite <leak@example.invalid>",
		"--open-pr", "--provider", "gitea", "--pr-label", "adopt"}
	res := r.run(t, "apply without sops on PATH", kc, map[string]string{"ADOPT_GIT_TOKEN": g.Token, "PATH": onlyGit}, applyArgs...)
	if all := res.out + res.errOut; res.code == 0 || !strings.Contains(all, sopsform.ErrNoSops.Error()) || !strings.Contains(all, "Secret "+ns+"/db") {
		t.Errorf("apply without sops on PATH: exit %d, want an error naming Secret %s/db and saying to install sops:\n%s", res.code, ns, plants.hide(res.errOut))
	}
	if prs, err := g.PullRequests(ctx, repo); err != nil || len(prs) != 0 {
		t.Fatalf("apply without sops opened %d pull request(s) (%v)", len(prs), err)
	}

	// apply with sops on PATH and the age identity: encrypted, decrypted
	// again, committed, the pull request opened.
	withSops := map[string]string{"ADOPT_GIT_TOKEN": g.Token, "PATH": sopsDir + string(os.PathListSeparator) + os.Getenv("PATH"), "SOPS_AGE_KEY_FILE": keyFile}
	res = must("apply --open-pr", r.run(t, "apply --open-pr", kc, withSops, applyArgs...), 0)
	if !strings.Contains(res.out, "decrypted again with the age identity of SOPS_AGE_KEY_FILE") {
		t.Errorf("apply does not say the SOPS file was decrypted again:\n%s", plants.hide(res.out))
	}
	prs, err := g.PullRequests(ctx, repo)
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests %d, %v; want one", len(prs), err)
	}
	if !strings.Contains(prs[0].Body, "Secrets encrypted with SOPS") || !strings.Contains(prs[0].Body, sopsFile) {
		t.Errorf("the pull request's body does not list %s under Secrets encrypted with SOPS:\n%s", sopsFile, plants.hide(prs[0].Body))
	}
	mergePR(ctx, t, g, repo, prs[0].Head.Ref)
	giteaDir := giteaRepoDir(g, repo)
	tip := tipOf(t, giteaDir, "main")
	enc := fileText(t, tip, sopsFile)
	if !strings.Contains(enc, "ENC[AES256_GCM,") || !strings.Contains(enc, "sops:") {
		t.Fatalf("%s in Git is not a SOPS-encrypted file", sopsFile)
	}
	dec, err := testenv.SopsDecrypt(ctx, keyFile, []byte(enc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sopsform.Same(dec, sopsform.Values(live)); err != nil {
		t.Fatalf("%s decrypted by the real sops: %v", sopsFile, err)
	}

	// Argo CD's plugin, simulated: the merged tree with the SOPS file
	// decrypted, in a repository of its own.
	mirror := map[string]string{}
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	_ = files.ForEach(func(f *gitobject.File) error {
		text, err := f.Contents()
		mirror[f.Name] = text
		return err
	})
	mirror[sopsFile] = string(dec)
	mg, mirrorURL := gitRepo(t, "decrypted", mirror)
	appYAML := fileText(t, tip, p.Settings.AppsDir+"/"+ob.App+".yaml")
	if !strings.Contains(appYAML, cloneURL) {
		t.Fatalf("the Application in Git does not name %s", cloneURL)
	}
	if err := a.CreateApplication(ctx, []byte(strings.ReplaceAll(appYAML, cloneURL, mirrorURL))); err != nil {
		t.Fatal(err)
	}
	res = must("finalize --sync", r.run(t, "finalize --sync", kc, nil, "finalize", "--plan", planFile, "--sync", "--timeout", "3m", "--poll-interval", "500ms"), 0)
	if journal, err := os.ReadFile(planFile + ".journal"); err != nil || strings.Count(string(journal), `"result":"finalized"`) != 2 {
		t.Errorf("finalize's journal does not record the Secret and the ConfigMap finalized (%v):\n%s", err, plants.hide(res.out))
	}
	after, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != live.UID || !reflect.DeepEqual(after.Data, live.Data) {
		t.Errorf("Secret %s/db: replaced (uid %s, was %s) or its data changed by the sync (values not printed)", ns, after.UID, live.UID)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration after finalize:\n%s", ns, plants.hide(res.out))
	}
	must("status", r.run(t, "status --record --html", kc, map[string]string{"ADOPT_GIT_TOKEN": g.Token}, "status", "--plan", planFile, "--repo", cloneURL,
		"--git-user", g.User, "--provider", "gitea", "--record", filepath.Join(dir, "history"), "--html", filepath.Join(dir, "status.html")), 0)
	must("reconcile", r.run(t, "reconcile --metrics-file", kc, withSops, "reconcile", "-n", ns, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
		"--author", "Leak Suite <leak@example.invalid>", "--lock-namespace", c.Namespace(t), "--cluster-name", "sops",
		"--journal-dir", filepath.Join(dir, "journals"), "--metrics-file", filepath.Join(dir, "adopt.prom")), 0)

	col.collectFiles(t)
	col.addGitRepo(t, giteaDir)
	col.addGiteaPRs(ctx, t, g, repo)
	chans := col.channels()
	for _, ch := range []leakChannel{chPlanFile, chStdout, chStderr, chGitObject, chCommitMessage, chPullRequest, chJournal, chStatusHistory, chHTML, chMetrics} {
		if chans[ch] == 0 {
			t.Errorf("nothing was collected from the %s channel: the suite cannot prove it clean", ch)
		}
	}
	for _, f := range col.scan(plants.list) {
		t.Errorf("LEAK: %s", f)
	}

	// The suite fails on a leak: the plugin's mirror holds the Secret in
	// plaintext, as a SOPS file committed unencrypted would.
	leaky := newLeakCollector()
	leaky.addGitRepo(t, mg.BarePath("decrypted"))
	caught := map[string]bool{}
	for _, f := range leaky.scan(plants.list) {
		if f.channel == chGitObject {
			caught[f.canary] = true
		}
	}
	for _, name := range []string{"the SOPS Secret's password", "the SOPS Secret's multi-line value", "the SOPS Secret's binary value"} {
		if !caught[name] {
			t.Errorf("the scan did not catch %s in the decrypted SOPS file", name)
		}
	}
}
