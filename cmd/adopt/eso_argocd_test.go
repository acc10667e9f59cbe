package main

import (
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestExternalSecretAdoptedOnRealArgoCD (issue 45): on a real Argo CD (the
// current GA) with the real External Secrets Operator and a Ready
// kubernetes-provider SecretStore in the namespace, a Secret applied by
// hand (client-side: a binary value and a stringData value) beside a
// ConfigMap. plan proposes it in form eso with the store and key; apply
// writes the ExternalSecret into the same commit, no canary in plaintext
// or base64 anywhere in it, and the Application without automated sync
// though --auto-sync was given; finalize --sync pushes (the store's copy
// without the live Secret's labels or annotations), syncs, and proves the
// takeover: the same uid, the data byte-identical (compared here, never
// printed), last-applied gone, the ConfigMap finalized. The leak
// scanner, in every encoding it knows, finds the canary in none of the
// plan file, the commit, the bare repository, adopt's output, the
// journal, the store's copy's metadata or the operator's log (and does
// find it in the live Secret's last-applied copy). A plan of the
// namespace then has nothing untracked. In "changed after plan", with
// nothing forced (the namespace's one store chosen), the Secret is
// written after plan: apply refuses and says to plan again.
func TestExternalSecretAdoptedOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns, storeNS := c.Namespace(t), c.Namespace(t)
	eso, err := testenv.StartExternalSecrets(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer eso.Stop()
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	// The store and its service account are the platform's, not this
	// adoption's.
	cfg := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions:\n- {apiGroups: [external-secrets.io], kinds: [SecretStore]}\n- {kinds: [ServiceAccount], names: [vault-store]}\nsecrets:\n  forms:\n  - {namespaces: [\""+ns+"\"], form: eso, store: SecretStore vault}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const canary = "canary-Wm3pQ7-eso-pw"
	binary := []byte{0, 1, 0xfe, 0xff, 'e', 's', 'o'}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + ", labels: {app: shop}}\ntype: Opaque\n" +
		"data: {cert.bin: " + base64.StdEncoding.EncodeToString(binary) + "}\nstringData: {password: " + canary + "}\n"
	cmText := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {mode: fast}\n"
	for _, m := range []string{secret, cmText} {
		if _, err := c.Kubectl(ctx, []byte(m), "apply", "-f", "-"); err != nil {
			t.Fatal("kubectl apply failed") // its output would echo the manifest
		}
	}
	// Every text also goes to the leak scanner, which looks for the
	// canary in every encoding it knows (leakscan_test.go).
	scan := &leakScan{secrets: map[string]string{"password": canary}, texts: map[string]string{}}
	leaks := func(where string, b []byte) {
		t.Helper()
		scan.add(where, string(b))
		for _, enc := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString(binary)} {
			if bytes.Contains(b, []byte(enc)) {
				t.Errorf("%s holds the Secret's value (an encoding of %d bytes)", where, len(enc))
			}
		}
	}
	must := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		leaks("adopt "+args[0]+"'s output", append(out.Bytes(), errb.Bytes()...))
		if code != 0 {
			t.Fatalf("adopt %s: exit %d: %s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	t.Run("changed after plan", func(t *testing.T) {
		changed := c.Namespace(t)
		other, err := testenv.StartExternalSecrets(ctx, c, changed)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Stop()
		if err := other.KubernetesStore(ctx, "vault", c.Namespace(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Kubectl(ctx, []byte(strings.ReplaceAll(secret, "namespace: "+ns, "namespace: "+changed)), "apply", "-f", "-"); err != nil {
			t.Fatal("kubectl apply failed")
		}
		ccfg := filepath.Join(t.TempDir(), "adopt.yaml")
		if err := os.WriteFile(ccfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions:\n- {apiGroups: [external-secrets.io], kinds: [SecretStore]}\n- {kinds: [ServiceAccount], names: [vault-store]}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, curl := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
		cplan := filepath.Join(t.TempDir(), "plan.yaml")
		must("plan", "-n", changed, "--repo", curl, "--config", ccfg, "--out", cplan, "-q")
		if ob := readPlan(t, cplan).Object("Secret " + changed + "/db"); ob == nil || !ob.ESO() {
			t.Fatalf("plan does not propose Secret %s/db in form eso (the one store that fits, nothing forced): %+v", changed, ob)
		}
		if out, err := c.Kubectl(ctx, nil, "-n", changed, "label", "secret", "db", "rotated=yes"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", []string{"--kubeconfig", c.Kubeconfig, "apply", "--plan", cplan, "--repo", curl, "--branch", "adopt-1", "--author", "T <t@example.invalid>", "-q"}, strings.NewReader(""), &out, &errb)
		all := out.String() + errb.String()
		leaks("adopt apply's refusal", []byte(all))
		if code == 0 || !strings.Contains(all, "changed since plan") || !strings.Contains(all, "re-run adopt plan") {
			t.Fatalf("apply of a Secret changed after plan: exit %d, want a refusal that says to plan again:\n%s", code, all)
		}
	})

	before, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The scanner finds the canary where it sits in plaintext: the live
	// Secret's last-applied copy, which must not travel to the store.
	if found := scan.find(before.Annotations["kubectl.kubernetes.io/last-applied-configuration"]); len(found) == 0 {
		t.Fatal("the leak scanner does not find the canary in the live Secret's last-applied-configuration")
	}
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	bare := g.BarePath("gitops")
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	must("plan", "-n", ns, "--repo", url, "--config", cfg, "--out", planFile, "-q")
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	leaks("the plan file", b)
	p := readPlan(t, planFile)
	ob := p.Object("Secret " + ns + "/db")
	if ob == nil || !ob.ESO() {
		t.Fatalf("plan does not propose Secret %s/db in form eso: %+v", ns, ob)
	}
	if f := ob.SecretForm; f.Store != "SecretStore "+ns+"/vault" || f.RemoteKey != esoform.RemoteKey(ns, "db") || f.UID != string(before.UID) || f.SealedAt != before.ResourceVersion {
		t.Errorf("secret form %+v, want SecretStore %s/vault, key %s, uid %s and sealedAt %s", f, ns, esoform.RemoteKey(ns, "db"), before.UID, before.ResourceVersion)
	}
	if cm := p.Object("ConfigMap " + ns + "/settings"); cm == nil || ob.App == "" || ob.App != cm.App {
		t.Errorf("the Secret and the ConfigMap are not in the namespace's one Application")
	}

	out := must("apply", "--plan", planFile, "--repo", url, "--branch", "adopt-1", "--auto-sync", "--author", "T <t@example.invalid>")
	if !strings.Contains(out, "without automated sync") {
		t.Errorf("apply with --auto-sync does not say why the Application holding an ExternalSecret syncs by hand:\n%s", out)
	}
	tip := tipOf(t, bare, "adopt-1")
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	var esFile, appFile string
	_ = files.ForEach(func(f *gitobject.File) error {
		text, err := f.Contents()
		if err != nil {
			return err
		}
		leaks("file "+f.Name+" of the commit", []byte(text))
		switch {
		case strings.Contains(text, "kind: "+esoform.KindExternalSecret):
			esFile = f.Name
		case strings.HasPrefix(f.Name, p.Settings.AppsDir+"/"):
			appFile = f.Name
		}
		return nil
	})
	leaks("the commit message", []byte(tip.Message))
	if esFile == "" || appFile == "" {
		t.Fatalf("the commit holds ExternalSecret %q and Application %q; want both", esFile, appFile)
	}
	if strings.Contains(fileText(t, tip, esFile), "last-applied") {
		t.Errorf("the ExternalSecret carries last-applied-configuration")
	}
	appYAML := fileText(t, tip, appFile)
	if strings.Contains(appYAML, "automated") {
		t.Errorf("the Application holding an ExternalSecret syncs by itself:\n%s", appYAML)
	}

	// Merge; Argo CD gets the Application, which waits for finalize.
	if b, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", "refs/heads/adopt-1").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if err := a.CreateApplication(ctx, []byte(appYAML)); err != nil {
		t.Fatal(err)
	}
	out = must("finalize", "--plan", planFile, "--sync", "--timeout", "3m", "--poll-interval", "500ms")
	if !strings.Contains(out, "taken over in place by ExternalSecret "+ns+"/db") {
		t.Errorf("finalize does not report the takeover:\n%s", out)
	}
	journal, err := os.ReadFile(planFile + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	leaks("the journal", journal)
	for _, r := range []string{`"result":"pushed"`, `"result":"taken-over"`} {
		if !bytes.Contains(journal, []byte(r)) {
			t.Errorf("the journal has no %s entry", r)
		}
	}
	stored, err := c.Clientset().CoreV1().Secrets(storeNS).Get(ctx, esoform.RemoteKey(ns, "db"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(stored.ObjectMeta)
	leaks("the store's copy's metadata", meta)
	if len(stored.Annotations) > 0 || !reflect.DeepEqual(stored.Data, before.Data) {
		t.Errorf("the store's copy has annotations %d, or other data than the live Secret (values not printed)", len(stored.Annotations))
	}
	after, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s/db after finalize: %v\nfinalize:\n%s", ns, err, out)
	}
	if after.UID != before.UID || !reflect.DeepEqual(after.Data, before.Data) {
		t.Errorf("Secret %s/db: replaced (uid %s, was %s) or its data differs after the takeover (values not printed)", ns, after.UID, before.UID)
	}
	if owner := metav1.GetControllerOf(after); owner == nil || owner.Kind != esoform.KindExternalSecret || owner.Name != "db" {
		t.Errorf("Secret %s/db: controller %+v, want ExternalSecret db\nfinalize:\n%s", ns, owner, out)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration\nfinalize:\n%s", ns, out)
	}
	cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap %s/settings after finalize: %v", ns, err)
	}
	if _, has := cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("ConfigMap %s/settings still carries last-applied-configuration\nfinalize:\n%s", ns, out)
	}
	scan.addTree(t, bare)
	scan.add("the operator's log", eso.Log())
	scan.check(t)
	again := must("plan", "-n", ns, "--repo", url, "--config", cfg, "-o", "json", "-q")
	var next plan.Plan
	if err := json.Unmarshal([]byte(again), &next); err != nil {
		t.Fatal(err)
	}
	if next.Summary.Objects != 0 {
		t.Errorf("the plan of %s after finalize proposes %d object(s), want 0 untracked: %+v", ns, next.Summary.Objects, next.Objects)
	}
}
