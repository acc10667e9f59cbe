package main

// The leak suite over the Sealed Secrets form (issue 45): the paths a
// sealed Secret opens, scanned by the suite's collector and scanner
// (leakscan_test.go), and the proof that the scan fails when a value does
// leak through one of them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestLeakSuiteSealed: on a real Argo CD (the current GA), the real
// Sealed Secrets controller and the real Gitea, fresh random canaries in
// hand-applied Secrets (client-side, so last-applied holds them too) of
// three namespaces: a string, a multi-line value and a binary one. Then
// plan --preview --out, apply --open-pr (the SealedSecrets committed, the
// pull request's body), the merge, finalize --sync (the journal: marked,
// taken over) where one Secret takes over, one changed after plan is
// refused its mark, and one whose SealedSecret was applied before the mark
// is refused by the controller (its message quoted in finalize's report),
// status --record --html, and reconcile --metrics-file. No canary, in any
// form the suite knows, is in any plan file, stdout, stderr, Git object,
// ref, commit message, pull request, journal, status history, HTML report
// or metrics file; the SealedSecrets in Git hold ciphertext.
//
// Then the suite must fail on a leak: the controller's status message is
// the one text adopt quotes from the controller, so a forged one (a fault
// the real controller cannot produce: it names keys, never values)
// carries a canary, finalize quotes it, and the scan of that run must
// report the canary in finalize's stdout.
func TestLeakSuiteSealed(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns1, ns2, ns3 := c.Namespace(t), c.Namespace(t), c.Namespace(t)
	ss, err := testenv.StartSealedSecrets(ctx, c, ns1, ns2, ns3)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			ss.Stop()
		}
	}()
	g := giteaUp()

	plants := &leakPlants{}
	plants.external("Gitea's admin token", g.Token)
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, randomWord(t, "", 40))
	}
	multi := plants.add("ns1's multi-line value", strings.Join(lines, "\n")+"\n")
	binary := plants.add("ns1's binary value", string(randomBytes(t, 30)))
	pass1 := plants.add("ns1's password", randomWord(t, "Sa", 26))
	pass2 := plants.add("ns2's password (changed after plan)", randomWord(t, "Sb", 26))
	pass3 := plants.add("ns3's password (applied before the mark)", randomWord(t, "Sc", 26))
	handApplySecret(ctx, t, c, ns1, handSecret{Password: pass1, Multi: multi, Binary: binary})
	handApplySecret(ctx, t, c, ns2, handSecret{Password: pass2})
	handApplySecret(ctx, t, c, ns3, handSecret{Password: pass3})

	repo := giteaName(t, "sealed")
	cloneURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	tokenEnv := map[string]string{"ADOPT_GIT_TOKEN": g.Token}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "adopt.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nsecrets: {sealedSecretsController: "+ss.Namespace+"/"+ss.Service+"}\n"), 0o644); err != nil {
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

	planFile := filepath.Join(dir, "plan.yaml")
	must("plan", r.run(t, "plan --preview", kc, tokenEnv, "plan", "-n", ns1+","+ns2+","+ns3, "--repo", cloneURL, "--git-user", g.User, "--config", cfg,
		"--preview", "--out", planFile, "-o", "yaml"), 0, ExitFindings)
	p := readPlan(t, planFile)
	apps := map[string]string{}
	for _, ns := range []string{ns1, ns2, ns3} {
		ob := p.Object("Secret " + ns + "/db")
		if ob == nil || !ob.Sealed() {
			t.Fatalf("the plan does not propose Secret %s/db as sealed: %+v", ns, ob)
		}
		apps[ns] = ob.App
	}
	res := must("apply --open-pr", r.run(t, "apply --open-pr", kc, tokenEnv, "apply", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User,
		"--author", "Leak Suite <leak@example.invalid>", "--open-pr", "--provider", "gitea", "--pr-label", "adopt"), 0)
	if !strings.Contains(res.out, "verified") {
		t.Errorf("apply does not say the controller verified the seals:\n%s", plants.hide(res.out))
	}
	prs, err := g.PullRequests(ctx, repo)
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests %d, %v; want one", len(prs), err)
	}
	if !strings.Contains(prs[0].Body, "Secrets sealed") {
		t.Errorf("the pull request's body lists no sealed Secrets:\n%s", plants.hide(prs[0].Body))
	}
	mergePR(ctx, t, g, repo, prs[0].Head.Ref)
	giteaDir := giteaRepoDir(g, repo)
	tip := tipOf(t, giteaDir, "main")
	sealedFiles := map[string]string{} // namespace -> the SealedSecret in Git
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	_ = files.ForEach(func(f *gitobject.File) error {
		text, err := f.Contents()
		if err != nil || !strings.Contains(text, "kind: "+sealed.Kind) {
			return err
		}
		for _, ns := range []string{ns1, ns2, ns3} {
			if strings.Contains(text, "namespace: "+ns+"\n") {
				sealedFiles[ns] = text
			}
		}
		return nil
	})
	for _, ns := range []string{ns1, ns2, ns3} {
		if !strings.Contains(sealedFiles[ns], "encryptedData:") {
			t.Fatalf("no SealedSecret with encryptedData for %s in Git", ns)
		}
		if err := a.CreateApplication(ctx, []byte(fileText(t, tip, p.Settings.AppsDir+"/"+apps[ns]+".yaml"))); err != nil {
			t.Fatal(err)
		}
	}

	// ns2: the Secret changes after plan, so finalize refuses its mark.
	if out, err := c.Kubectl(ctx, nil, "-n", ns2, "label", "secret", "db", "rotated=yes"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// ns3: the SealedSecret applied before the mark (as an automated sync
	// would), and the controller's retries over: it refused for good.
	if out, err := c.Kubectl(ctx, []byte(sealedFiles[ns3]), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		l := ss.LogTail(1 << 20)
		return strings.Contains(l, "giving up") && strings.Contains(l, ns3+"/db"), nil
	}); err != nil {
		t.Fatalf("the controller never gave up on %s/db: %v", ns3, err)
	}

	fin := []string{"finalize", "--plan", planFile, "--sync", "--poll-interval", "500ms"}
	res = must("finalize --sync", r.run(t, "finalize --sync (taken over; mark refused)", kc, nil, append(fin, "--app", apps[ns1], "--app", apps[ns2], "--timeout", "3m")...), 0, ExitPartial)
	for _, want := range []string{"taken over in place by SealedSecret " + ns1 + "/db", "changed since it was sealed"} {
		if !strings.Contains(res.out+res.errOut, want) {
			t.Errorf("finalize --sync does not say %q:\n%s", want, plants.hide(res.out+res.errOut))
		}
	}
	res = must("finalize --sync", r.run(t, "finalize --sync (refused by the controller)", kc, nil, append(fin, "--app", apps[ns3], "--timeout", "20s")...), ExitPartial)
	if !strings.Contains(res.out+res.errOut, sealed.ErrNotManaged.Error()) {
		t.Errorf("finalize does not report the controller's refusal:\n%s", plants.hide(res.out+res.errOut))
	}
	must("status", r.run(t, "status --record --html", kc, tokenEnv, "status", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
		"--record", filepath.Join(dir, "history"), "--html", filepath.Join(dir, "status.html")), 0)
	nsLock := c.Namespace(t)
	must("reconcile", r.run(t, "reconcile --metrics-file", kc, tokenEnv, "reconcile", "-n", ns1, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
		"--config", cfg, "--author", "Leak Suite <leak@example.invalid>", "--lock-namespace", nsLock, "--cluster-name", "sealed",
		"--journal-dir", filepath.Join(dir, "journals"), "--metrics-file", filepath.Join(dir, "adopt.prom")), 0)

	col.collectFiles(t)
	col.addGitRepo(t, giteaDir)
	col.addGiteaPRs(ctx, t, g, repo)
	chans := col.channels()
	for _, ch := range []leakChannel{chPlanFile, chStdout, chGitObject, chCommitMessage, chPullRequest, chJournal, chStatusHistory, chHTML, chMetrics} {
		if chans[ch] == 0 {
			t.Errorf("nothing was collected from the %s channel: the suite cannot prove it clean", ch)
		}
	}
	for _, f := range col.scan(plants.list) {
		t.Errorf("LEAK: %s", f)
	}

	// The suite fails on a leak: a forged refusal quoting ns3's password,
	// with the controller stopped so that it cannot write over it.
	ss.Stop()
	stopped = true
	ssClient := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(sealed.GVR).Namespace(ns3)
	u, err := ssClient.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Synced", "status": "False", "message": "failed to unseal: " + pass3}}, "status", "conditions")
	_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
	if _, err := ssClient.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaky := newLeakCollector()
	injected := (&leakRunner{col: leaky}).run(t, "finalize over a forged refusal", kc, nil, "finalize", "--plan", planFile, "--app", apps[ns3], "--timeout", "5s", "--poll-interval", "500ms")
	leaky.collectFiles(t)
	caught := false
	for _, f := range leaky.scan(plants.list) {
		caught = caught || f.canary == "ns3's password (applied before the mark)" && f.channel == chStdout && strings.HasPrefix(f.where, "finalize over a forged refusal")
	}
	if !caught {
		t.Errorf("the scan did not catch ns3's password, quoted by finalize (exit %d) from a forged controller message", injected.code)
	}
}
