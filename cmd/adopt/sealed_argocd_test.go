package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestSealedSecretAdoptedOnRealArgoCD (issue 45): on a real Argo CD (the
// current GA) with the real Sealed Secrets controller, a Secret applied by
// hand (handApplySecret: client-side, fresh canaries as a password, a
// multi-line and a binary value) beside a ConfigMap. plan proposes it as a
// SealedSecret of the namespace's Application; apply writes the
// SealedSecret into the same commit, and the Application without
// automated sync though --auto-sync was given; finalize --sync marks the
// Secret, syncs, and proves the takeover: the same uid, the data
// byte-identical (compared here, never printed), last-applied gone, the
// ConfigMap finalized and nothing deleted. A plan of the namespace then has
// nothing untracked. In "changed after plan", the Secret is written after
// plan: apply refuses and says to plan again. The leak suite's scanner
// finds no canary, in any form it knows, in adopt's output, the plan file,
// the commit's files and message or the journal.
func TestSealedSecretAdoptedOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns, changed := c.Namespace(t), c.Namespace(t)
	ss, err := testenv.StartSealedSecrets(ctx, c, ns, changed)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Stop()
	cfg := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nsecrets: {sealedSecretsController: "+ss.Namespace+"/"+ss.Service+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Fresh canaries; every text adopt printed or wrote goes to the leak
	// suite's collector, scanned at the end in every form it knows.
	plants := &leakPlants{}
	secret := plantSecret(t, plants, "the sealed Secret's", "Zq")
	handApply := func(ns string) { t.Helper(); handApplySecret(ctx, t, c, ns, secret) }
	col := newLeakCollector()
	defer func() {
		for _, f := range col.scan(plants.list) {
			t.Errorf("LEAK: %s", f)
		}
	}()
	leaks := func(ch leakChannel, where string, b []byte) { col.add(ch, where, string(b)) }
	run := func(args ...string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		leaks(chStdout, "adopt "+args[0]+"'s output", append(out.Bytes(), errb.Bytes()...))
		return out.String() + errb.String(), code
	}
	must := func(args ...string) string {
		t.Helper()
		out, code := run(args...)
		if code != 0 {
			t.Fatalf("adopt %s: exit %d: %s", strings.Join(args, " "), code, out)
		}
		return out
	}

	t.Run("changed after plan", func(t *testing.T) {
		handApply(changed)
		_, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
		planFile := filepath.Join(t.TempDir(), "plan.yaml")
		must("plan", "-n", changed, "--repo", url, "--config", cfg, "--out", planFile, "-q")
		if ob := readPlan(t, planFile).Object("Secret " + changed + "/db"); ob == nil || !ob.Sealed() {
			t.Fatalf("plan does not propose Secret %s/db as sealed: %+v", changed, ob)
		}
		if out, err := c.Kubectl(ctx, nil, "-n", changed, "label", "secret", "db", "rotated=yes"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		out, code := run("apply", "--plan", planFile, "--repo", url, "--branch", "adopt-1", "--author", "T <t@example.invalid>", "-q")
		if code == 0 || !strings.Contains(out, "changed since plan") || !strings.Contains(out, "re-run adopt plan") {
			t.Fatalf("apply of a Secret changed after plan: exit %d, want a refusal that says to plan again:\n%s", code, out)
		}
	})

	handApply(ns)
	before, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	bare := g.BarePath("gitops")
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	must("plan", "-n", ns, "--repo", url, "--config", cfg, "--out", planFile, "-q")
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	leaks(chPlanFile, "the plan file", b)
	p := readPlan(t, planFile)
	ob := p.Object("Secret " + ns + "/db")
	if ob == nil || !ob.Sealed() {
		t.Fatalf("plan does not propose Secret %s/db as sealed: %+v", ns, ob)
	}
	if f := ob.SecretForm; f.Controller != ss.Namespace+"/"+ss.Service || !strings.HasPrefix(f.Fingerprint, "SHA256:") || f.UID != string(before.UID) || f.SealedAt != before.ResourceVersion {
		t.Errorf("secret form %+v, want controller %s/%s, the key's fingerprint, uid %s and sealedAt %s", f, ss.Namespace, ss.Service, before.UID, before.ResourceVersion)
	}
	cmApp := ""
	if cm := p.Object("ConfigMap " + ns + "/settings"); cm != nil {
		cmApp = cm.App
	}
	if ob.App == "" || ob.App != cmApp {
		t.Errorf("the Secret is in Application %q, the ConfigMap in %q: want the namespace's one", ob.App, cmApp)
	}

	out := must("apply", "--plan", planFile, "--repo", url, "--branch", "adopt-1", "--auto-sync", "--author", "T <t@example.invalid>")
	if !strings.Contains(out, "without automated sync") {
		t.Errorf("apply with --auto-sync does not say why the Application holding a SealedSecret syncs by hand:\n%s", out)
	}
	tip := tipOf(t, bare, "adopt-1")
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	var sealedFile, appFile string
	_ = files.ForEach(func(f *gitobject.File) error {
		text, err := f.Contents()
		if err != nil {
			return err
		}
		leaks(chGitObject, "file "+f.Name+" of the commit", []byte(text))
		switch {
		case strings.Contains(text, "kind: "+sealed.Kind):
			sealedFile = f.Name
		case strings.HasPrefix(f.Name, p.Settings.AppsDir+"/"):
			appFile = f.Name
		}
		return nil
	})
	leaks(chCommitMessage, "the commit message", []byte(tip.Message))
	if sealedFile == "" || appFile == "" {
		t.Fatalf("the commit holds SealedSecret %q and Application %q; want both", sealedFile, appFile)
	}
	appYAML := fileText(t, tip, appFile)
	if strings.Contains(appYAML, "automated") {
		t.Errorf("the Application holding a SealedSecret syncs by itself:\n%s", appYAML)
	}

	// Merge; Argo CD gets the Application, which waits for finalize.
	if b, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", "refs/heads/adopt-1").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if err := a.CreateApplication(ctx, []byte(appYAML)); err != nil {
		t.Fatal(err)
	}
	out = must("finalize", "--plan", planFile, "--sync", "--timeout", "3m", "--poll-interval", "500ms")
	if !strings.Contains(out, "taken over in place by SealedSecret "+ns+"/db") {
		t.Errorf("finalize does not report the takeover:\n%s", out)
	}
	journal, err := os.ReadFile(planFile + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	leaks(chJournal, "the journal", journal)
	for _, r := range []string{`"result":"marked"`, `"result":"taken-over"`} {
		if !bytes.Contains(journal, []byte(r)) {
			t.Errorf("the journal has no %s entry", r)
		}
	}
	after, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s/db after finalize: %v\nfinalize:\n%s", ns, err, out)
	}
	if after.UID != before.UID {
		t.Errorf("Secret %s/db: uid %s after finalize, %s before: replaced, not taken over", ns, after.UID, before.UID)
	}
	if !reflect.DeepEqual(after.Data, before.Data) {
		t.Errorf("Secret %s/db: its data differs after the takeover (keys before %d, after %d; values not printed)", ns, len(before.Data), len(after.Data))
	}
	if owner := metav1.GetControllerOf(after); owner == nil || owner.Kind != sealed.Kind || owner.Name != "db" {
		t.Errorf("Secret %s/db: controller %+v, want SealedSecret db\nfinalize:\n%s", ns, owner, out)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration", ns)
	}
	cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap %s/settings after finalize: %v", ns, err)
	}
	if _, has := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("ConfigMap %s/settings still carries last-applied-configuration\nfinalize:\n%s", ns, out)
	}
	again := must("plan", "-n", ns, "--repo", url, "--config", cfg, "-o", "json", "-q")
	var next plan.Plan
	if err := json.Unmarshal([]byte(again), &next); err != nil {
		t.Fatal(err)
	}
	if next.Summary.Objects != 0 {
		t.Errorf("the plan of %s after finalize proposes %d object(s), want 0 untracked: %+v", ns, next.Summary.Objects, next.Objects)
	}
}
