package planner_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
	"github.com/adopt-dev/adopt/templates"
)

// TestPlanChoosesTheExternalSecretsStore: with the real External Secrets
// Operator and a Ready kubernetes-provider SecretStore in the namespace
// (and no Sealed Secrets controller), the plan adopts the hand-applied
// Secret in form eso, showing the store and the remote key, with its uid
// and resourceVersion; adopt.yaml forcing none leaves it out. The plan
// never holds the canary. Then, on the same operator, apply
// --push-secrets (applyPushesSecrets).
func TestPlanChoosesTheExternalSecretsStore(t *testing.T) {
	const canary = "planner-eso-canary-Hq7d"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, storeNS := cp.Namespace(t), cp.Namespace(t)
	eso, err := testenv.StartExternalSecrets(ctx, cp, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer eso.Stop()
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: "+ns+"}\nstringData: {password: "+canary+", user: shop}\n", "apply", "-f", "-")
	p := run(t, options(t, ns))
	db := object(p, "Secret", ns, "db")
	if db == nil || db.SecretForm == nil {
		t.Fatalf("the Secret has no form: %+v", db)
	}
	f := db.SecretForm
	if f.Form != plan.SecretFormESO || f.Store != "SecretStore "+ns+"/vault" || f.RemoteKey != esoform.RemoteKey(ns, "db") || f.UID == "" || f.SealedAt == "" {
		t.Fatalf("form %+v; want eso with SecretStore %s/vault and key %s", f, ns, esoform.RemoteKey(ns, "db"))
	}
	if !hasFinding(db, plan.CodeSecretForm) || hasFinding(db, plan.CodeSecret) {
		t.Fatalf("findings %+v; want the secret-form info in place of the secret warning", db.Findings)
	}
	for _, fd := range db.Findings {
		if fd.Code == plan.CodeSecretForm && (!strings.Contains(fd.Message, f.RemoteKey) || !strings.Contains(fd.Message, f.Store)) {
			t.Fatalf("the finding does not show the store and key: %s", fd.Message)
		}
	}
	y, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), canary) || strings.Contains(string(y), base64.StdEncoding.EncodeToString([]byte(canary))) {
		t.Fatal("the plan holds the canary")
	}

	o := options(t, ns)
	o.Config.Secrets.Forms = []config.SecretForm{{Namespaces: []string{ns}, Form: config.SecretFormNone}}
	if db := object(run(t, o), "Secret", ns, "db"); db == nil || db.SecretForm != nil {
		t.Fatalf("forced none: %+v", db)
	}

	t.Run("apply --push-secrets", func(t *testing.T) { applyPushesSecrets(ctx, t, ns, storeNS, canary) })
}

// applyPushesSecrets is apply --push-secrets (apply.Run with
// RenderOptions.PushSecrets) over the Secret ns/db the parent planned in
// form eso, on the real operator and its store (values kept in storeNS):
//   - as a user who may read but not write in ns: refused before any
//     write, naming what is missing; the store and the repository
//     untouched;
//   - as admin: the store holds the live data at the plan's key; the
//     summary, apply's report, the commit message and the pull request's
//     body say per key name that the store gives back the live value,
//     naming the store and the key;
//   - again: nothing pushed (the key already holds the live data), no
//     new commit; finalize's pre-sync push finds it in the store;
//   - the Secret's value changed after the plan: apply refuses (changed
//     since plan) and so does finalize, saying the store holds the older
//     value; planned again, apply refuses to overwrite the key
//     (ErrKeyTaken), saying to delete it from the store.
//
// No value, nor its base64, hex or URL encoding, is in any of it.
func applyPushesSecrets(ctx context.Context, t *testing.T, ns, storeNS, canary string) {
	leaks := func(where, text string) {
		t.Helper()
		v := []byte(canary)
		for _, enc := range []string{canary, base64.StdEncoding.EncodeToString(v), base64.RawStdEncoding.EncodeToString(v), hex.EncodeToString(v), url.QueryEscape(canary)} {
			if strings.Contains(text, enc) {
				t.Errorf("%s holds the Secret's value (an encoding of %d bytes)", where, len(enc))
			}
		}
	}
	o := options(t, ns)
	o.Config.Exclusions = []config.Rule{{APIGroups: []string{esoform.Group}, Kinds: []string{esoform.KindSecretStore}}, {Kinds: []string{"ServiceAccount"}}}
	p := run(t, o)
	db := p.Object("Secret " + ns + "/db")
	if db == nil || !db.ESO() || len(p.Applications) != 1 {
		t.Fatalf("the plan does not adopt Secret %s/db alone in form eso: %+v", ns, p.Applications)
	}
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := testenv.InitRepo(repo, map[string]string{"README.md": "gitops\n"}); err != nil {
		t.Fatal(err)
	}
	apply1 := func(p *plan.Plan, c apply.Cluster) (*apply.Result, error) {
		return apply.Run(ctx, apply.RunOptions{Plan: p, Cluster: c, ArgoCDVersion: testenv.ArgoCDCurrent,
			Render:   apply.RenderOptions{Secrets: export.SecretsSkip, CSAMigration: apply.CSAAuto, Templates: set, PushSecrets: true},
			Checkout: apply.CheckoutOptions{URL: repo}, Write: apply.WriteOptions{Author: gitops.Signature{Name: "t", Email: "t@example.invalid"}}})
	}
	admin := apply.Cluster{Dynamic: o.Dynamic, Core: o.Clients.Core, Kube: o.Kube}
	key := esoform.RemoteKey(ns, "db")
	k := cp.Clientset()
	stored := func() (*corev1.Secret, error) { return k.CoreV1().Secrets(storeNS).Get(ctx, key, metav1.GetOptions{}) }

	// A reader: refused before anything is written.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}
	if _, err := k.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "reader"}}}
	if _, err := k.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := cp.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "reader"}
	rc, err := kubeconn.New(cfg, "reader", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = apply1(p, apply.Cluster{Dynamic: rc.Clients.Dynamic, Core: rc.Clients.Core, Kube: rc.Kube})
	if err == nil || !strings.Contains(err.Error(), "--push-secrets") || !strings.Contains(err.Error(), "create secrets") ||
		!strings.Contains(err.Error(), "create pushsecrets."+esoform.Group) || !strings.Contains(err.Error(), "nothing was pushed or committed") {
		t.Fatalf("apply --push-secrets as a reader: %v; want a refusal naming what is missing", err)
	}
	if _, err := stored(); !apierrors.IsNotFound(err) {
		t.Fatalf("after the refusal the store holds key %s (%v)", key, err)
	}
	if b := git(t, repo, "branch", "--list"); strings.Contains(string(b), "adopt/") {
		t.Fatalf("after the refusal the repository has a branch: %s", b)
	}

	began := time.Now()
	res, err := apply1(p, admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apply --push-secrets: %s", time.Since(began).Round(10*time.Millisecond))
	live, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := stored(); err != nil || !reflect.DeepEqual(s.Data, live.Data) || len(s.Annotations) > 0 {
		t.Fatalf("the store's copy at %s: %v; want the live data and no annotation (values not printed)", key, err)
	}
	if len(res.Summary.ESO) != 1 || res.Summary.ESO[0].Pushed == nil || res.Summary.ESO[0].Pushed.Already ||
		strings.Join(res.Summary.ESO[0].Pushed.Keys, ",") != "password,user" {
		t.Fatalf("apply's summary of the pushed Secret: %+v", res.Summary.ESO)
	}
	proof := "the store gives back the live value (read back through SecretStore " + ns + "/vault, key " + key + ")"
	var report bytes.Buffer
	printer.Apply(&report, printer.ApplyResult{Summary: res.Summary, Repo: repo, Base: "main", Result: res.Commit})
	_, body, err := apply.RenderPR(res.PRInput("plan.yaml", ""), "")
	if err != nil {
		t.Fatal(err)
	}
	msg := string(git(t, repo, "log", "-1", "--format=%B", res.Commit.Branch))
	for where, text := range map[string]string{"apply's report": report.String(), "the pull request's body": body, "the commit message": msg} {
		leaks(where, text)
		for _, want := range []string{"key password: " + proof, "key user: " + proof} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", where, want, text)
			}
		}
	}
	if !strings.Contains(report.String(), "pushed to key "+key) || !strings.Contains(body, "Proven before this pull request was opened") ||
		!strings.Contains(body, "already pushed to their External Secrets stores") || !strings.Contains(msg, "apply --push-secrets pushed to their stores") {
		t.Errorf("the report or the body does not say apply pushed:\n%s\n%s", report.String(), body)
	}
	leaks("apply's summary", fmt.Sprintf("%+v", res.Summary))

	// Again: nothing pushed, no new commit.
	again, err := apply1(p, admin)
	if err != nil {
		t.Fatal(err)
	}
	if e := again.Summary.ESO; len(e) != 1 || e[0].Pushed == nil || !e[0].Pushed.Already || again.Commit.Changed {
		t.Fatalf("a second apply --push-secrets: %+v, commit changed %v; want nothing pushed and no new commit", e, again.Commit.Changed)
	}
	f := db.SecretForm
	target := finalize.SealedTarget{Target: finalize.Target{Ref: db.Ref, App: db.App}, UID: f.UID, SealedAt: f.SealedAt, Form: plan.SecretFormESO, Store: f.Store, RemoteKey: f.RemoteKey}
	sl := &finalize.Sealer{Kube: k, Dynamic: o.Dynamic, Journal: func() *finalize.Journal { return nil }}
	if note, err := sl.Mark(ctx, target); err != nil || !strings.Contains(note, "found already in the store") {
		t.Fatalf("finalize's push after apply's: %q, %v; want the live data found at the key", note, err)
	}

	// The value changed after the plan (during the review).
	if _, err := k.CoreV1().Secrets(ns).Patch(ctx, "db", types.MergePatchType, []byte(`{"stringData":{"password":"rotated-in-review"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var ce *apply.ContractError
	if _, err := apply1(p, admin); !errors.As(err, &ce) || !strings.Contains(err.Error(), "changed since plan") {
		t.Errorf("apply --push-secrets of a Secret changed since the plan: %v; want a ContractError saying so", err)
	}
	_, err = sl.Mark(ctx, target)
	if !errors.Is(err, esoform.ErrChanged) || !strings.Contains(err.Error(), "apply --push-secrets pushed it before the merge, key "+key) {
		t.Errorf("finalize of a Secret changed after apply's push: %v; want ErrChanged saying the store holds the older value", err)
	}
	p2 := run(t, o)
	_, err = apply1(p2, admin)
	if !errors.Is(err, esoform.ErrKeyTaken) || !strings.Contains(err.Error(), "keys with other bytes [password]") || !strings.Contains(err.Error(), "delete it from the store") {
		t.Errorf("apply --push-secrets of the new plan over the older push: %v; want ErrKeyTaken naming the key and saying to delete it", err)
	} else {
		leaks("apply's refusal", err.Error())
	}
	if s, err := stored(); err != nil || !reflect.DeepEqual(s.Data, live.Data) {
		t.Errorf("the store's key was changed by a refused push (%v)", err)
	}
}
