package planner_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
	"github.com/adopt-dev/adopt/templates"
)

// ageIdentity writes a fresh age identity to a file: its path and
// recipient.
func ageIdentity(t *testing.T) (file, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(file, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, id.Recipient().String()
}

func git(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

// TestSopsSecretPlannedAppliedAndFinalized is the SOPS form end to end
// on a real kube-apiserver, the real sops CLI (v3.13.3) with age, and a
// real git repository; Argo CD's side is simulated (see below).
//   - plan: the repo's .sops.yaml has a rule with age recipients for the
//     path apply writes the hand-applied Secret to, so the plan proposes
//     the SOPS form, naming the rule and its recipients, and says per key
//     what is proven; the Secret stays in its namespace's Application.
//   - apply: the encrypted manifest is committed beside the ConfigMap's
//     export, at the path the rule matched, in the same commit; the
//     report says it was decrypted again (an age identity is given).
//   - proof: the committed file, decrypted with the real sops CLI and
//     the other recipient's identity, equals the live Secret byte for
//     byte (compared in memory), and carries no last-applied copy, uid or
//     managedFields.
//   - simulated: Argo CD's config management plugin applying the
//     decrypted manifest, done here as Argo CD would, server-side as
//     argocd-controller; then finalize's engine (finalize.Select and
//     Finalizer.Object, no Argo CD, the tracking check off) checks the
//     data against the hand-applied copy and removes
//     last-applied-configuration, journaled without a value.
//   - leaks: the canary and the binary value, in plaintext or base64,
//     are in no file of the commit, the plan file, apply's summary, the
//     pull request body, finalize's results or the journal.
func TestSopsSecretPlannedAppliedAndFinalized(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	dir, err := testenv.SopsBinaries()
	if err != nil {
		t.Fatal(err)
	}
	sopsBin := filepath.Join(dir, "sops")
	key1, rcp1 := ageIdentity(t)
	key2, rcp2 := ageIdentity(t)
	const canary = "canary-Hv7pX2-sops-pw"
	binary := []byte{0, 1, 0xfe, 0xff, 'k', 'e', 'y'}
	// leaks looks for each value in plaintext, base64 (padded, raw, URL),
	// hex and URL-escaped.
	leaks := func(where string, b []byte) {
		t.Helper()
		for _, v := range [][]byte{[]byte(canary), binary} {
			for _, enc := range []string{string(v), base64.StdEncoding.EncodeToString(v), base64.RawStdEncoding.EncodeToString(v), base64.URLEncoding.EncodeToString(v),
				hex.EncodeToString(v), url.QueryEscape(string(v))} {
				if bytes.Contains(b, []byte(enc)) {
					t.Errorf("%s holds the Secret's value (an encoding of %d bytes)", where, len(enc))
				}
			}
		}
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + ", labels: {app: shop}}\ntype: Opaque\n" +
		"data: {cert.bin: " + base64.StdEncoding.EncodeToString(binary) + "}\nstringData: {password: " + canary + "}\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {mode: fast}\n"
	for _, m := range []string{secret, cm} {
		if out, err := cp.Kubectl(ctx, []byte(m), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	live, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := sopsform.Values(live)

	repo := t.TempDir()
	sopsYAML := "creation_rules:\n- path_regex: ^elsewhere/\n  age: " + rcp2 + "\n- path_regex: /secret-[^/]*\\.yaml$\n  encrypted_regex: ^(data|stringData)$\n  age: " + rcp1 + "," + rcp2 + "\n"
	if err := testenv.InitRepo(repo, map[string]string{"README.md": "gitops\n", ".sops.yaml": sopsYAML}); err != nil {
		t.Fatal(err)
	}
	o := scan(t, ns, false)
	o.Repo = gitindex.Source{Location: repo}
	p, err := planner.Plan(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	planJSON, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	leaks("the plan", planJSON)
	ob := p.Object("Secret " + ns + "/db")
	if ob == nil || !ob.Sops() {
		t.Fatalf("the plan does not propose Secret %s/db in the SOPS form: %+v", ns, ob)
	}
	f := ob.SecretForm
	app := p.Object("ConfigMap " + ns + "/settings").App
	if ob.App == "" || ob.App != app {
		t.Errorf("the Secret is in Application %q, the ConfigMap in %q: want the namespace's one", ob.App, app)
	}
	if f.UID != string(live.UID) || f.SealedAt != live.ResourceVersion || f.Sops.Config != ".sops.yaml" || f.Sops.Rule != 1 ||
		strings.Join(f.Sops.Age, ",") != rcp1+","+rcp2 || f.Sops.EncryptedRegex != "^(data|stringData)$" || !strings.HasSuffix(f.Sops.File, "/secret-db.yaml") ||
		!strings.Contains(f.Why, ".sops.yaml creation_rules[1] matches "+f.Sops.File) {
		t.Errorf("secret form %+v, sops %+v", f, f.Sops)
	}
	var msg string
	for _, fd := range ob.Findings {
		if fd.Code == plan.CodeSecretForm {
			msg = fd.Message
		}
	}
	for _, part := range []string{"SOPS-encrypted", "per key", "2 age recipient(s)", "SOPS_AGE_KEY_FILE", "plugin"} {
		if !strings.Contains(msg, part) {
			t.Errorf("the plan's secret-form finding lacks %q: %s", part, msg)
		}
	}

	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	// Without sops on PATH: a clear refusal, nothing pushed.
	run := apply.RunOptions{
		Plan: p, Cluster: apply.Cluster{Dynamic: o.Dynamic, Core: o.Clients.Core, Kube: o.Kube}, ArgoCDVersion: testenv.ArgoCDCurrent,
		Render:   apply.RenderOptions{Secrets: export.SecretsSkip, CSAMigration: apply.CSAAuto, Templates: set},
		Checkout: apply.CheckoutOptions{URL: repo}, Write: apply.WriteOptions{Author: gitops.Signature{Name: "t", Email: "t@example.invalid"}},
	}
	path := os.Getenv("PATH")
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	onlyGit := t.TempDir() // apply clones a local path with the git CLI
	if err := os.Symlink(gitBin, filepath.Join(onlyGit, "git")); err != nil {
		t.Fatal(err)
	}
	os.Setenv("PATH", onlyGit)
	_, err = apply.Run(ctx, run)
	os.Setenv("PATH", path)
	if !errors.Is(err, sopsform.ErrNoSops) || !strings.Contains(err.Error(), "Secret "+ns+"/db") {
		t.Errorf("apply without sops on PATH: %v; want sopsform.ErrNoSops naming the Secret", err)
	} else {
		leaks("apply's error without sops", []byte(err.Error()))
	}
	if b := git(t, repo, "branch", "--list"); strings.Contains(string(b), "adopt/") {
		t.Errorf("apply without sops pushed a branch: %s", b)
	}
	res, err := apply.Run(ctx, apply.RunOptions{
		Plan: p, Cluster: apply.Cluster{Dynamic: o.Dynamic, Core: o.Clients.Core, Kube: o.Kube}, ArgoCDVersion: testenv.ArgoCDCurrent,
		Render: apply.RenderOptions{Secrets: export.SecretsSkip, CSAMigration: apply.CSAAuto, Templates: set,
			Sops: sopsform.CLI{Bin: sopsBin, Env: []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "SOPS_AGE_KEY_FILE=" + key1}}},
		Checkout: apply.CheckoutOptions{URL: repo}, Write: apply.WriteOptions{Author: gitops.Signature{Name: "t", Email: "t@example.invalid"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	summary := fmt.Sprintf("%+v", res.Summary)
	leaks("apply's summary", []byte(summary))
	if len(res.Summary.Sops) != 1 || !res.Summary.Sops[0].Proven || res.Summary.Sops[0].File != f.Sops.File || !strings.Contains(summary, "decrypted again with the age identity of SOPS_AGE_KEY_FILE") {
		t.Errorf("apply's summary of the SOPS Secret: %+v", res.Summary.Sops)
	}
	_, body, err := apply.RenderPR(res.PRInput("plan.yaml", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	leaks("the pull request body", []byte(body))
	if !strings.Contains(body, "Secrets encrypted with SOPS") || !strings.Contains(body, f.Sops.File) {
		t.Errorf("the pull request body does not list the encrypted Secret:\n%s", body)
	}
	branch := res.Commit.Branch
	files := strings.Fields(string(git(t, repo, "ls-tree", "-r", "--name-only", branch)))
	var enc []byte
	exported := false
	for _, name := range files {
		b := git(t, repo, "show", branch+":"+name)
		leaks("file "+name+" of the commit", b)
		switch {
		case name == f.Sops.File:
			enc = b
		case strings.HasSuffix(name, "/configmap-settings.yaml") && filepath.Dir(name) == filepath.Dir(f.Sops.File):
			exported = true
		}
	}
	if enc == nil || !exported {
		t.Fatalf("the commit holds %v: want %s beside the ConfigMap's export", files, f.Sops.File)
	}
	if n := strings.Count(string(git(t, repo, "log", "--format=%H", "main.."+branch)), "\n"); n != 1 {
		t.Errorf("%d commits on %s, want the one", n, branch)
	}

	// The proof: the real sops CLI, with the other recipient's identity.
	dec, err := testenv.SopsDecrypt(ctx, key2, enc)
	if err != nil {
		t.Fatal(err)
	}
	if err := sopsform.Same(dec, want); err != nil {
		t.Fatalf("the committed file decrypted with the real sops: %v", err)
	}
	for _, gone := range []string{"last-applied-configuration", "uid:", "managedFields", "resourceVersion"} {
		if bytes.Contains(dec, []byte(gone)) {
			t.Errorf("the decrypted manifest carries %s", gone)
		}
	}

	// Argo CD's plugin, simulated: the decrypted manifest applied
	// server-side as argocd-controller, with its tracking id.
	var obj unstructured.Unstructured
	if err := sigsyaml.Unmarshal(dec, &obj.Object); err != nil {
		t.Fatal("the decrypted manifest is not YAML")
	}
	obj.SetAnnotations(map[string]string{"argocd.argoproj.io/tracking-id": app + ":/Secret:" + ns + "/db"})
	secrets := o.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns)
	force := true
	if _, err := secrets.Apply(ctx, "db", &obj, metav1.ApplyOptions{FieldManager: "argocd-controller", Force: force}); err != nil {
		t.Fatalf("the simulated sync: %v", err)
	}
	synced, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := synced.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Fatalf("the simulated sync removed last-applied-configuration: nothing left for finalize")
	}
	if synced.UID != live.UID || sopsform.Same([]byte("data:\n"+dataYAML(synced.Data)), want) != nil {
		t.Fatalf("the simulated sync replaced the Secret or changed its data")
	}

	sel, err := finalize.Select(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var target *finalize.Target
	for _, tg := range sel.Targets[app] {
		if tg.Ref == ob.Ref {
			target = &tg
		}
	}
	if target == nil || target.SopsUID != string(live.UID) {
		t.Fatalf("finalize's selection does not target the SOPS Secret: %+v", sel.Targets[app])
	}
	jpath := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := finalize.OpenJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	fin := &finalize.Finalizer{Client: func(tg finalize.Target) finalize.Client { return o.Dynamic.Resource(tg.GVR()).Namespace(tg.Namespace) }, Journal: j}

	// Changed after the sync: finalize refuses, naming the key.
	changed := *target
	changed.SopsUID = "not-" + target.SopsUID
	if r := fin.Object(ctx, changed); r.Status == finalize.StatusFinalized || !strings.Contains(r.Reason, "replaced since plan") {
		t.Errorf("finalize of a Secret with another uid: %s: %s", r.Status, r.Reason)
	}
	// The data changed by the sync: finalize refuses, naming the key.
	patch := func(v []byte) {
		t.Helper()
		body := fmt.Sprintf(`{"data":{"password":%q}}`, base64.StdEncoding.EncodeToString(v))
		if _, err := cp.Clientset().CoreV1().Secrets(ns).Patch(ctx, "db", types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: "argocd-controller"}); err != nil {
			t.Fatal(err)
		}
	}
	patch([]byte("rotated-elsewhere"))
	r := fin.Object(ctx, *target)
	leaks("finalize's refusal", []byte(r.Reason))
	if r.Status == finalize.StatusFinalized || !strings.Contains(r.Reason, `key "password" holds another value`) {
		t.Errorf("finalize of a Secret whose data the sync changed: %s: %s", r.Status, r.Reason)
	}
	patch(want["password"])
	r = fin.Object(ctx, *target)
	leaks("finalize's result", []byte(fmt.Sprintf("%+v", r)))
	if r.Status != finalize.StatusFinalized {
		t.Fatalf("finalize: %s: %s", r.Status, r.Reason)
	}
	after, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok || after.UID != live.UID {
		t.Errorf("after finalize: annotations %v, uid %s", keys(after.Annotations), after.UID)
	}
	if err := sopsform.Same([]byte("data:\n"+dataYAML(after.Data)), want); err != nil {
		t.Errorf("after finalize: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	jb, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	leaks("the journal", jb)
	if !bytes.Contains(jb, []byte(`"finalized"`)) {
		t.Errorf("the journal does not record the finalize")
	}

	// The Secret changed since the plan: apply refuses to encrypt it.
	run.Render.Sops = sopsform.CLI{Bin: sopsBin}
	if _, err := apply.Run(ctx, run); err == nil || !strings.Contains(err.Error(), "changed since plan") || !strings.Contains(err.Error(), "re-run adopt plan") {
		t.Errorf("apply of a Secret changed since the plan: %v", err)
	} else {
		leaks("apply's refusal", []byte(err.Error()))
	}
}

// dataYAML writes data as a YAML mapping of base64 values.
func dataYAML(data map[string][]byte) string {
	var b strings.Builder
	for k, v := range data {
		fmt.Fprintf(&b, "  %q: %s\n", k, base64.StdEncoding.EncodeToString(v))
	}
	return b.String()
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSopsFormChoice: the one rule that chooses a Secret's form, on a
// real kube-apiserver and the real Sealed Secrets controller:
//   - both fit (the controller runs, the repo's .sops.yaml rule matches):
//     sops, and the plan says the controller also runs and why sops won;
//   - adopt.yaml forces sealed for the namespace: sealed, naming the entry;
//   - adopt.yaml forces sops but no rule matches: left out, a warning
//     naming the config and the paths tried;
//   - a .sops.yaml whose matching rule uses pgp, and no controller: left
//     out, a warning saying why SOPS does not serve it.
func TestSopsFormChoice(t *testing.T) {
	ctx := ctxFor(t)
	both, forcedSealed, forcedSops, pgp := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	for _, ns := range []string{both, forcedSealed, forcedSops, pgp} {
		if out, err := cp.Kubectl(ctx, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: "+ns+"}\nstringData: {password: not-the-point}\n"), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	_, rcp := ageIdentity(t)
	plans := func(ns, sopsYAML string, cfg *config.Config) *plan.Object {
		t.Helper()
		repo := t.TempDir()
		if err := testenv.InitRepo(repo, map[string]string{"README.md": "gitops\n", ".sops.yaml": sopsYAML}); err != nil {
			t.Fatal(err)
		}
		o := scan(t, ns, false)
		o.Repo = gitindex.Source{Location: repo}
		o.Config = cfg
		p, err := planner.Plan(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return p.Object("Secret " + ns + "/db")
	}
	finding := func(ob *plan.Object) plan.Finding {
		for _, f := range ob.Findings {
			if f.Code == plan.CodeSecretForm {
				return f
			}
		}
		return plan.Finding{}
	}
	// Before any controller runs here.
	ob := plans(pgp, "creation_rules:\n- pgp: 0123456789ABCDEF\n", nil)
	if f := finding(ob); ob.SecretForm != nil || f.Severity != plan.Warning || !strings.Contains(f.Message, "encrypts with pgp") || !strings.Contains(f.Message, "left out") {
		t.Errorf("a pgp rule and no controller: form %+v, finding %+v", ob.SecretForm, f)
	}
	ss, err := testenv.StartSealedSecrets(ctx, cp, both, forcedSealed)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Stop()
	withController := func(forms ...config.SecretForm) *config.Config {
		c := config.Default()
		c.Secrets.SealedSecretsController = ss.Namespace + "/" + ss.Service
		c.Secrets.Forms = forms
		return c
	}
	rule := "creation_rules:\n- path_regex: /secret-[^/]*\\.yaml$\n  age: " + rcp + "\n"

	if ob := plans(both, rule, withController()); !ob.Sops() || !strings.Contains(ob.SecretForm.Why, "also runs") || !strings.Contains(ob.SecretForm.Why, ss.Namespace+"/"+ss.Service) {
		t.Errorf("both fit: %+v", ob.SecretForm)
	}
	if ob := plans(forcedSealed, rule, withController(config.SecretForm{Namespaces: []string{forcedSealed}, Form: config.SecretFormSealed})); !ob.Sealed() || !strings.Contains(ob.SecretForm.Why, "secrets.forms[0]") {
		t.Errorf("forced sealed: %+v", ob.SecretForm)
	}
	ob = plans(forcedSops, "creation_rules:\n- path_regex: ^nowhere/\n  age: "+rcp+"\n", withController(config.SecretForm{Namespaces: []string{forcedSops}, Form: config.SecretFormSops}))
	if f := finding(ob); ob.SecretForm != nil || f.Severity != plan.Warning || !strings.Contains(f.Message, "forces form sops") || !strings.Contains(f.Message, "no creation rule of .sops.yaml matches") || !strings.Contains(f.Message, "secret-db.sops.yaml") {
		t.Errorf("forced sops without a rule: form %+v, finding %+v", ob.SecretForm, f)
	}
}
