package main

// The leak suite over the External Secrets form (issue 45), which is also
// the form's end-to-end test on real Argo CD: the paths an ExternalSecret
// and finalize's push open, scanned by the suite's collector and scanner
// (leakscan_test.go), and the proof that the scan fails when a value does
// leak through the store's copy or a controller's message.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestLeakSuiteESO: on a real Argo CD (the current GA, the package's
// shared plane), the real Gitea and the real External Secrets Operator
// v0.16.2 with a Ready kubernetes-provider SecretStore in the namespace,
// fresh random canaries (a password, a multi-line value, a binary one) in
// a Secret hand-applied client-side (its last-applied-configuration holds
// them in plaintext) beside a ConfigMap. plan --preview --out names the
// store and the key; apply --push-secrets --open-pr --auto-sync pushes the
// value to the store and proves it reads back (a watch, from here to
// finalize's end, files every PushSecret, probe ExternalSecret and the
// metadata of the Secrets they read or write, with the operator's status
// messages), writes the ExternalSecret into the same commit, the
// Application without automated sync (saying why), the pull request
// listing it with each key's proof and apply's report too; the merge;
// finalize --sync finds the value in the store (nothing pushed), syncs,
// and proves the takeover: the same uid, the data byte-identical to what
// the store gave back (compared here, never printed), last-applied gone,
// the ConfigMap finalized; then status --record --html, reconcile
// --metrics-file and a second plan, which proposes nothing. No canary, in
// any form the suite knows, is in any plan file, stdout, stderr, Git
// object, ref, commit message, pull request, journal, status history, HTML
// report, metrics file, object apply or finalize wrote in the cluster, the
// store's copy's metadata (without the live Secret's
// last-applied-configuration) or the operator's log. (finalize's own push,
// the default, is the reconcile test's:
// TestReconcileAdoptsExternalSecretOnRealArgoCD.)
//
// "changed after plan": with nothing forced (the namespace's one store
// chosen), the Secret is written after plan and apply refuses, saying to
// plan again. There the suite must fail on a leak through the store's
// copy: a PushSecret of the live Secret itself (not adopt's clean copy),
// pushed by the real operator, carries its last-applied-configuration
// into the store, and the scan must report the password in the store
// copy's metadata.
//
// At the end the suite must fail on a leak through a controller's
// message: the ExternalSecret's Ready condition is the text adopt quotes
// from the operator, so the test stops the operator, forges a failure
// whose message holds the password (a fault the real operator cannot
// produce: its messages name keys and stores, never values), runs
// finalize over it, and the scan must report the password in finalize's
// stdout.
func TestLeakSuiteESO(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	began := time.Now()
	defer func() { t.Logf("TestLeakSuiteESO: %s", time.Since(began).Round(time.Second)) }()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns, storeNS := c.Namespace(t), c.Namespace(t)
	eso, err := testenv.StartExternalSecrets(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			eso.Stop()
		}
	}()
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	// The store and its service account are the platform's, not this
	// adoption's.
	const exclusions = "apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions:\n- {apiGroups: [external-secrets.io], kinds: [SecretStore]}\n- {kinds: [ServiceAccount], names: [vault-store]}\n"
	cfg := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(cfg, []byte(exclusions+"secrets:\n  forms:\n  - {namespaces: [\""+ns+"\"], form: eso, store: SecretStore vault}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plants := &leakPlants{}
	s := plantSecret(t, plants, "the ESO Secret's", "Eo")
	handApplySecret(ctx, t, c, ns, s)
	col := newLeakCollector()
	r := &leakRunner{col: col}
	kc := c.Kubeconfig
	dir := t.TempDir()
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

	t.Run("changed after plan", func(t *testing.T) {
		changed, otherStore := c.Namespace(t), c.Namespace(t)
		sub := filepath.Join(dir, "changed") // the parent's: the collector reads it after the subtest
		other, err := testenv.StartExternalSecrets(ctx, c, changed)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Stop()
		if err := other.KubernetesStore(ctx, "vault", otherStore); err != nil {
			t.Fatal(err)
		}
		handApplySecret(ctx, t, c, changed, s)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		ccfg := filepath.Join(sub, "adopt.yaml")
		if err := os.WriteFile(ccfg, []byte(exclusions), 0o644); err != nil {
			t.Fatal(err)
		}
		_, curl := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
		cplan := filepath.Join(sub, "plan.yaml")
		must("plan", r.run(t, "plan (changed after plan)", kc, nil, "plan", "-n", changed, "--repo", curl, "--config", ccfg, "--out", cplan, "-q"), 0)
		if ob := readPlan(t, cplan).Object("Secret " + changed + "/db"); ob == nil || !ob.ESO() {
			t.Fatalf("plan does not propose Secret %s/db in form eso (the one store that fits, nothing forced): %+v", changed, ob)
		}
		if out, err := c.Kubectl(ctx, nil, "-n", changed, "label", "secret", "db", "rotated=yes"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		res := r.run(t, "apply (changed after plan)", kc, nil, "apply", "--plan", cplan, "--repo", curl, "--branch", "adopt-1", "--author", "T <t@example.invalid>", "-q")
		if all := res.out + res.errOut; res.code == 0 || !strings.Contains(all, "changed since plan") || !strings.Contains(all, "re-run adopt plan") {
			t.Fatalf("apply of a Secret changed after plan: exit %d, want a refusal that says to plan again:\n%s", res.code, plants.hide(all))
		}

		// The store's copy leaks when the live Secret itself is pushed.
		ps := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "external-secrets.io/v1alpha1", "kind": "PushSecret",
			"metadata": map[string]any{"name": "unclean", "namespace": changed},
			"spec": map[string]any{"refreshInterval": "0s", "deletionPolicy": "None", "updatePolicy": "Replace",
				"secretStoreRefs": []any{map[string]any{"kind": "SecretStore", "name": "vault"}},
				"selector":        map[string]any{"secret": map[string]any{"name": "db"}},
				"data":            []any{map[string]any{"match": map[string]any{"remoteRef": map[string]any{"remoteKey": "unclean-db"}}}}}}}
		pushes := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(testenv.PushSecretGVR).Namespace(changed)
		if _, err := pushes.Create(ctx, ps, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := pushes.Get(ctx, "unclean", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cd := range conds {
				if m, _ := cd.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("the PushSecret of the live Secret never pushed: %v", err)
		}
		unclean, err := c.Clientset().CoreV1().Secrets(otherStore).Get(ctx, "unclean-db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := json.Marshal(unclean.ObjectMeta)
		leaky := newLeakCollector()
		leaky.add(chStoreCopy, "Secret "+otherStore+"/unclean-db", string(meta))
		caught := false
		for _, f := range leaky.scan(plants.list) {
			caught = caught || f.canary == "the ESO Secret's password" && f.channel == chStoreCopy
		}
		if !caught {
			t.Errorf("the scan did not catch the password in the metadata of the store's copy of the live Secret (%d annotations)", len(unclean.Annotations))
		}
	})

	before, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := giteaUp()
	plants.external("Gitea's admin token", g.Token)
	tokenEnv := map[string]string{"ADOPT_GIT_TOKEN": g.Token}
	repo := giteaName(t, "eso")
	cloneURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.yaml")
	res := must("plan", r.run(t, "plan --preview", kc, tokenEnv, "plan", "-n", ns, "--repo", cloneURL, "--git-user", g.User, "--config", cfg,
		"--preview", "--out", planFile, "-o", "yaml"), 0, ExitFindings)
	p := readPlan(t, planFile)
	ob := p.Object("Secret " + ns + "/db")
	if ob == nil || !ob.ESO() {
		t.Fatalf("plan does not propose Secret %s/db in form eso: %+v", ns, ob)
	}
	key := esoform.RemoteKey(ns, "db")
	if f := ob.SecretForm; f.Store != "SecretStore "+ns+"/vault" || f.RemoteKey != key || f.UID != string(before.UID) || f.SealedAt != before.ResourceVersion {
		t.Errorf("secret form %+v, want SecretStore %s/vault, key %s, uid %s and sealedAt %s", f, ns, key, before.UID, before.ResourceVersion)
	}
	if !strings.Contains(res.out, "SecretStore "+ns+"/vault") || !strings.Contains(res.out, key) {
		t.Errorf("plan --preview does not name the store and the key:\n%s", plants.hide(res.out))
	}
	if cm := p.Object("ConfigMap " + ns + "/settings"); cm == nil || ob.App == "" || ob.App != cm.App {
		t.Errorf("the Secret and the ConfigMap are not in the namespace's one Application")
	}

	// apply --push-secrets pushes and proves before the pull request; the
	// watch files what apply and finalize write.
	stopWatch := watchWrites(ctx, t, c, col, ns)
	res = must("apply --open-pr", r.run(t, "apply --push-secrets --open-pr --auto-sync", kc, tokenEnv, "apply", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User,
		"--author", "Leak Suite <leak@example.invalid>", "--push-secrets", "--auto-sync", "--open-pr", "--provider", "gitea", "--pr-label", "adopt"), 0)
	if !strings.Contains(res.out+res.errOut, "without automated sync") {
		t.Errorf("apply with --auto-sync does not say why the Application holding an ExternalSecret syncs by hand:\n%s", plants.hide(res.out))
	}
	prs, err := g.PullRequests(ctx, repo)
	if err != nil || len(prs) != 1 {
		t.Fatalf("pull requests %d, %v; want one", len(prs), err)
	}
	if !strings.Contains(prs[0].Body, "Secrets as ExternalSecrets") || !strings.Contains(prs[0].Body, key) || !strings.Contains(res.out, "pushed to key "+key) {
		t.Errorf("the pull request's body does not list the ExternalSecret and its key, or apply does not say it pushed:\n%s\n%s", plants.hide(prs[0].Body), plants.hide(res.out))
	}
	for _, k := range []string{"password", "tls.key", "token"} {
		proof := "key " + k + ": the store gives back the live value (read back through SecretStore " + ns + "/vault, key " + key + ")"
		if !strings.Contains(prs[0].Body, proof) || !strings.Contains(res.out, proof) {
			t.Errorf("the pull request's body or apply's report lacks %q", proof)
		}
	}
	mergePR(ctx, t, g, repo, prs[0].Head.Ref)
	giteaDir := giteaRepoDir(g, repo)
	tip := tipOf(t, giteaDir, "main")
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	var esFile string
	_ = files.ForEach(func(f *gitobject.File) error {
		text, err := f.Contents()
		if err == nil && strings.Contains(text, "kind: "+esoform.KindExternalSecret) {
			esFile = f.Name
		}
		return err
	})
	if esFile == "" {
		t.Fatal("no ExternalSecret in Git")
	}
	if strings.Contains(fileText(t, tip, esFile), "last-applied") {
		t.Errorf("the ExternalSecret carries last-applied-configuration")
	}
	appYAML := fileText(t, tip, p.Settings.AppsDir+"/"+ob.App+".yaml")
	if strings.Contains(appYAML, "automated") {
		t.Errorf("the Application holding an ExternalSecret syncs by itself:\n%s", appYAML)
	}
	if err := a.CreateApplication(ctx, []byte(appYAML)); err != nil {
		t.Fatal(err)
	}

	// finalize finds the value pushed, syncs, proves.
	fin := []string{"finalize", "--plan", planFile, "--app", ob.App, "--poll-interval", "500ms"}
	res = must("finalize --sync", r.run(t, "finalize --sync", kc, nil, append(fin, "--sync", "--timeout", "3m")...), 0)
	if n := stopWatch(); n == 0 {
		t.Errorf("the watch saw no PushSecret: the push was not scanned")
	}
	if !strings.Contains(res.out, "taken over in place by ExternalSecret "+ns+"/db") || !strings.Contains(res.out, "found already in the store") ||
		!strings.Contains(res.out, "byte-identical to what the store gave back before the sync") {
		t.Errorf("finalize does not report the value found in the store and the takeover compared with it:\n%s", plants.hide(res.out))
	}
	journal, err := os.ReadFile(planFile + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"result":"pushed"`, `"result":"taken-over"`} {
		if !strings.Contains(string(journal), want) {
			t.Errorf("the journal has no %s entry", want)
		}
	}
	stored, err := c.Clientset().CoreV1().Secrets(storeNS).Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(stored.ObjectMeta)
	col.add(chStoreCopy, "Secret "+storeNS+"/"+key, string(meta))
	if len(stored.Annotations) > 0 || len(stored.Labels) > 0 || !reflect.DeepEqual(stored.Data, before.Data) {
		t.Errorf("the store's copy has %d annotation(s) and %d label(s), or other data than the live Secret (values not printed)", len(stored.Annotations), len(stored.Labels))
	}
	after, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID || !reflect.DeepEqual(after.Data, before.Data) {
		t.Errorf("Secret %s/db: replaced (uid %s, was %s) or its data differs after the takeover (values not printed)", ns, after.UID, before.UID)
	}
	if owner := metav1.GetControllerOf(after); owner == nil || owner.Kind != esoform.KindExternalSecret || owner.Name != "db" {
		t.Errorf("Secret %s/db: controller %+v, want ExternalSecret db", ns, owner)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration", ns)
	}
	cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("ConfigMap %s/settings still carries last-applied-configuration", ns)
	}

	must("status", r.run(t, "status --record --html", kc, tokenEnv, "status", "--plan", planFile, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
		"--record", filepath.Join(dir, "history"), "--html", filepath.Join(dir, "status.html")), 0)
	must("reconcile", r.run(t, "reconcile --metrics-file", kc, tokenEnv, "reconcile", "-n", ns, "--repo", cloneURL, "--git-user", g.User, "--provider", "gitea",
		"--config", cfg, "--author", "Leak Suite <leak@example.invalid>", "--lock-namespace", c.Namespace(t), "--cluster-name", "eso",
		"--journal-dir", filepath.Join(dir, "journals"), "--metrics-file", filepath.Join(dir, "adopt.prom")), 0)
	again := must("plan again", r.run(t, "plan after finalize", kc, tokenEnv, "plan", "-n", ns, "--repo", cloneURL, "--git-user", g.User, "--config", cfg, "-o", "json", "-q"), 0)
	var next plan.Plan
	if err := json.Unmarshal([]byte(again.out), &next); err != nil {
		t.Fatal(err)
	}
	if next.Summary.Objects != 0 {
		t.Errorf("the plan of %s after finalize proposes %d object(s), want 0 untracked: %+v", ns, next.Summary.Objects, next.Objects)
	}

	col.add(chOperatorLog, "the External Secrets Operator's log", eso.Log())
	col.collectFiles(t)
	col.addGitRepo(t, giteaDir)
	col.addGiteaPRs(ctx, t, g, repo)
	chans := col.channels()
	for _, ch := range []leakChannel{chPlanFile, chStdout, chStderr, chGitObject, chCommitMessage, chPullRequest, chJournal, chStatusHistory, chHTML, chMetrics,
		chStoreCopy, chClusterObject, chOperatorLog} {
		if chans[ch] == 0 {
			t.Errorf("nothing was collected from the %s channel: the suite cannot prove it clean", ch)
		}
	}
	for _, f := range col.scan(plants.list) {
		t.Errorf("LEAK: %s", f)
	}

	// The suite fails on a leak: a forged failure of the ExternalSecret
	// quoting the password, with the operator stopped so that it cannot
	// write over it.
	eso.Stop()
	stopped = true
	esClient := dynamic.NewForConfigOrDie(c.RESTConfig()).Resource(testenv.ExternalSecretGVR).Namespace(ns)
	u, err := esClient.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "False", "reason": "SecretSyncedError",
		"message": "could not get secret data from provider: " + s.Password}}, "status", "conditions")
	if _, err := esClient.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	leaky := newLeakCollector()
	injected := (&leakRunner{col: leaky}).run(t, "finalize over a forged failure", kc, nil, append(fin, "--allow-health", "Degraded,Progressing", "--timeout", "30s")...)
	caught := false
	for _, f := range leaky.scan(plants.list) {
		caught = caught || f.canary == "the ESO Secret's password" && (f.channel == chStdout || f.channel == chStderr) && strings.HasPrefix(f.where, "finalize over a forged failure")
	}
	if !caught {
		t.Errorf("the scan did not catch the password, quoted by finalize (exit %d) from a forged operator message:\n%s", injected.code, plants.hide(injected.out+injected.errOut))
	}
}
