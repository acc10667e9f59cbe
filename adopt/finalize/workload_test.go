package finalize_test

import (
	"context"
	"encoding/base64"
	fmtpkg "fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// mountedBinary is not valid UTF-8: it survives only as bytes.
var mountedBinary = []byte{0x00, 0xff, 0xfe, 0x80, 0x0a, 0xc3}

// handApplyDB applies Secret ns/db with the real kubectl, client-side, as
// people do: a binary value under data, a password under stringData (so
// last-applied-configuration holds it in plaintext), a label and an
// annotation of the team's.
func handApplyDB(t *testing.T, ctx context.Context, ns, password string) *corev1.Secret {
	t.Helper()
	y := fmtpkg.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: %s, labels: {app: db}, annotations: {team: payments}}\ntype: Opaque\n"+
		"data: {blob: %s}\nstringData: {password: %s}\n", ns, base64.StdEncoding.EncodeToString(mountedBinary), password)
	if _, err := cp.Kubectl(ctx, []byte(y), "apply", "-f", "-"); err != nil {
		t.Fatal("kubectl apply of the Secret failed") // its output would echo the manifest
	}
	live, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.Annotations[budget.LastAppliedKey] == "" {
		t.Fatal("the hand-applied Secret has no last-applied-configuration")
	}
	return live
}

// firstSync applies manifest (YAML) as Argo CD's first sync does with
// ServerSideApply: a server-side apply as argocd-controller, forced, with
// the Application's tracking id added to the manifest's annotations.
func firstSync(t *testing.T, ctx context.Context, d dynamic.Interface, gvr schema.GroupVersionResource, app string, manifest []byte) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := sigsyaml.Unmarshal(manifest, &obj.Object); err != nil {
		t.Fatal("the manifest is not YAML") // it may hold a value
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	gk := obj.GroupVersionKind().GroupKind()
	ann[argoapp.AnnotationTrackingID] = fmtpkg.Sprintf("%s:%s/%s:%s/%s", app, gk.Group, gk.Kind, obj.GetNamespace(), obj.GetName())
	obj.SetAnnotations(ann)
	if _, err := d.Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), &obj, metav1.ApplyOptions{FieldManager: finalize.ArgoCDManager, Force: true}); err != nil {
		t.Fatalf("the first sync of %s %s/%s: %v", gk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
}

// TestESOTakeoverUnderAMountingWorkload (issue 45, "takeover without a
// gap", form eso): a Pod and a Deployment mount the hand-applied Secret
// (a volume, envFrom, a secretKeyRef; testenv.MountSecret) throughout
// finalize's order on the real External Secrets Operator v0.16.2 and its
// kubernetes provider: the push (Sealer.Mark), the ExternalSecret applied
// as Argo CD's first sync would (server-side as argocd-controller, its
// tracking id on it), the operator taking the Secret over by its
// creationPolicy Owner, and Sealer.Prove removing
// last-applied-configuration. A watch on the Secret opened before the
// push shows, up to finalize's write, only MODIFIED events (at least the
// operator's and finalize's), each with the same uid and the data byte
// for byte; the Pod and the Deployment are never written.
func TestESOTakeoverUnderAMountingWorkload(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, _, d, _ := esoWithStore(ctx, t)
	k := cp.Clientset()
	ready := time.Since(start)
	live := handApplyDB(t, ctx, ns, "eso-mounted-pw-Qf3k")
	mounted := cp.MountSecret(ctx, t, live, "password")

	store := esoform.Store{Kind: esoform.KindSecretStore, Namespace: ns, Name: "vault"}
	target := finalize.SealedTarget{Target: finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: "shop"},
		UID: string(live.UID), SealedAt: live.ResourceVersion, Form: plan.SecretFormESO, Store: store.String(), RemoteKey: esoform.RemoteKey(ns, "db")}
	sl := &finalize.Sealer{Kube: k, Dynamic: d, Journal: func() *finalize.Journal { return nil }}
	if _, err := sl.Mark(ctx, target); err != nil {
		t.Fatal(err)
	}
	es, err := esoform.Manifest(store, target.RemoteKey, live)
	if err != nil {
		t.Fatal(err)
	}
	m, err := es.YAML()
	if err != nil {
		t.Fatal(err)
	}
	firstSync(t, ctx, d, esoform.ExternalSecretGVR, "shop", m)
	res := sl.Prove(ctx, target)
	if res.Status != finalize.StatusFinalized || !strings.Contains(res.Reason, "last-applied-configuration removed") {
		t.Fatalf("Prove = %s: %s", res.Status, res.Reason)
	}
	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := metav1.GetControllerOf(after); c == nil || c.Kind != esoform.KindExternalSecret || c.Name != "db" {
		t.Fatalf("after finalize the Secret's controller is %v, want ExternalSecret db", c)
	}
	if _, ok := after.Annotations[budget.LastAppliedKey]; ok {
		t.Fatal("after finalize the Secret still carries last-applied-configuration")
	}
	if _, ok := after.Annotations[argoapp.AnnotationTrackingID]; ok {
		t.Error("the operator copied the ExternalSecret's tracking id onto the Secret: Argo CD would take it for its own")
	}
	// The operator's write and finalize's, at least: the push writes
	// only copies, never the live Secret.
	if n := mounted.Until(ctx, t, after.ResourceVersion); n < 2 {
		t.Errorf("%d events up to finalize's write, want the operator's and finalize's", n)
	}
	took := time.Since(start) - ready

	// The operator's next refresh (every refreshInterval, 1h), forced now
	// by a change to the ExternalSecret's annotations, which the operator
	// reads as a new version of it: it leaves the Secret as finalize left
	// it (no event with other data, last-applied-configuration not back).
	esr := d.Resource(esoform.ExternalSecretGVR).Namespace(ns)
	cur, err := esr.Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	synced, _, _ := unstructured.NestedString(cur.Object, "status", "syncedResourceVersion")
	w, err := esr.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "db").String(), ResourceVersion: cur.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := esr.Patch(ctx, "db", types.MergePatchType, []byte(`{"metadata":{"annotations":{"force-sync":"1"}}}`), metav1.PatchOptions{FieldManager: "adopt-test"}); err != nil {
		t.Fatal(err)
	}
	for refreshed := false; !refreshed; {
		select {
		case ev, ok := <-w.ResultChan():
			u, isU := ev.Object.(*unstructured.Unstructured)
			if !ok || !isU {
				t.Fatalf("the watch on ExternalSecret %s/db ended (%s) before the operator's refresh", ns, ev.Type)
			}
			now, _, _ := unstructured.NestedString(u.Object, "status", "syncedResourceVersion")
			refreshed = now != synced
		case <-ctx.Done():
			t.Fatal("the operator never refreshed the ExternalSecret")
		}
	}
	again, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Annotations[budget.LastAppliedKey]; ok {
		t.Error("the operator's refresh put last-applied-configuration back")
	}
	n := mounted.Until(ctx, t, again.ResourceVersion)
	t.Logf("operator ready in %s; push, first sync, takeover and finalize in %s; the refresh after: %d event(s) in all, the Secret at resourceVersion %s (finalize left %s)",
		ready.Round(time.Millisecond), took.Round(time.Millisecond), n, again.ResourceVersion, after.ResourceVersion)
}

// TestSopsTakeoverUnderAMountingWorkload (issue 45, "takeover without a
// gap", form sops): a Pod and a Deployment mount the hand-applied Secret
// (testenv.MountSecret) while the SOPS form's order runs: the live
// Secret's manifest (sopsform.Manifest) encrypted by the real sops CLI
// with age and decrypted again, as Argo CD's plugin would; that
// decrypted manifest applied as Argo CD's first sync would (server-side
// as argocd-controller, its tracking id added; the plugin itself is not
// built here); then finalize's check (the same uid, the data equal to
// the hand-applied copy) and its removal of last-applied-configuration
// (Finalizer.Object, the tracking check on). A watch on the Secret opened
// before the sync shows, up to finalize's write, only MODIFIED events
// (the sync's and finalize's), each with the same uid and the data byte
// for byte; the Pod and the Deployment are never written.
func TestSopsTakeoverUnderAMountingWorkload(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := cp.Namespace(t)
	k := cp.Clientset()
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.SopsBinaries()
	if err != nil {
		t.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := handApplyDB(t, ctx, ns, "sops-mounted-pw-Wm8z")
	mounted := cp.MountSecret(ctx, t, live, "password")

	plain, err := sopsform.Manifest(live, "")
	if err != nil {
		t.Fatal(err)
	}
	values := sopsform.Values(live)
	config := []byte("creation_rules:\n- path_regex: /secret-[^/]*\\.yaml$\n  encrypted_regex: ^(data|stringData)$\n  age: " + id.Recipient().String() + "\n")
	rule := &sopsform.Rule{Config: ".sops.yaml", File: "shop/secret-db.yaml"}
	enc, err := sopsform.CLI{Bin: filepath.Join(bin, "sops"), Env: []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}.Encrypt(ctx, rule, config, plain, values)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := testenv.SopsDecrypt(ctx, keyFile, enc)
	if err != nil {
		t.Fatal(err)
	}
	if err := sopsform.Same(dec, values); err != nil {
		t.Fatalf("the file decrypted by the real sops: %v", err)
	}
	firstSync(t, ctx, d, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "shop", dec)

	fin := &finalize.Finalizer{
		Client:   func(tg finalize.Target) finalize.Client { return d.Resource(tg.GVR()).Namespace(tg.Namespace) },
		Tracking: &argoapp.Tracking{Method: argoapp.TrackingAnnotation},
	}
	target := finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: "shop", SopsUID: string(live.UID)}
	if r := fin.Object(ctx, target); r.Status != finalize.StatusFinalized {
		t.Fatalf("finalize: %s: %s", r.Status, r.Reason)
	}
	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Annotations[budget.LastAppliedKey]; ok {
		t.Fatal("after finalize the Secret still carries last-applied-configuration")
	}
	if after.Annotations["team"] != "payments" || after.Labels["app"] != "db" {
		t.Errorf("after finalize the Secret lost its label or annotation: %v, keys %v", after.Labels, annotationKeys(after.Annotations))
	}
	if n := mounted.Until(ctx, t, after.ResourceVersion); n < 2 {
		t.Errorf("%d events up to finalize's write, want the sync's and finalize's", n)
	}
	t.Logf("encrypt, decrypt, first sync and finalize in %s", time.Since(start).Round(time.Millisecond))
}

func annotationKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestESOHandChangeAfterPushIsOverwritten: the window the eso form's
// order leaves (docs/secrets.md): a value changed by hand after the push
// and before the first sync is overwritten by the operator with the
// store's older value, the one pushed. Prove, in the run that pushed,
// cannot prevent it but reports it (esoform.ErrOverwritten, from the
// Secret's changes since the push, naming the key, never a value) and
// leaves last-applied-configuration; the data then equals what was
// pushed, so comparing it alone would not see the change. A later run
// that did not push (the push was apply --push-secrets' or an earlier
// run's) reports it too, from the plan's resourceVersion.
func TestESOHandChangeAfterPushIsOverwritten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, _, d, _ := esoWithStore(ctx, t)
	k := cp.Clientset()
	live := handApplyDB(t, ctx, ns, "eso-pushed-pw-Lr5e")
	store := esoform.Store{Kind: esoform.KindSecretStore, Namespace: ns, Name: "vault"}
	target := finalize.SealedTarget{Target: finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: "shop"},
		UID: string(live.UID), SealedAt: live.ResourceVersion, Form: plan.SecretFormESO, Store: store.String(), RemoteKey: esoform.RemoteKey(ns, "db")}
	sl := &finalize.Sealer{Kube: k, Dynamic: d, Journal: func() *finalize.Journal { return nil }}
	if _, err := sl.Mark(ctx, target); err != nil {
		t.Fatal(err)
	}
	const rotated = "rotated-by-hand-Ue2p"
	if _, err := k.CoreV1().Secrets(ns).Patch(ctx, "db", types.MergePatchType, []byte(`{"stringData":{"password":"`+rotated+`"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	es, err := esoform.Manifest(store, target.RemoteKey, live)
	if err != nil {
		t.Fatal(err)
	}
	m, err := es.YAML()
	if err != nil {
		t.Fatal(err)
	}
	firstSync(t, ctx, d, esoform.ExternalSecretGVR, "shop", m)
	res := sl.Prove(ctx, target)
	if res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, esoform.ErrOverwritten.Error()) || !strings.Contains(res.Reason, "keys with other bytes [password]") {
		t.Fatalf("Prove = %s: %s; want the changed key reported", res.Status, res.Reason)
	}
	if strings.Contains(res.Reason, rotated) || strings.Contains(res.Reason, "eso-pushed-pw-Lr5e") {
		t.Error("Prove's reason holds a value")
	}
	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(after.Data["password"]) == rotated || string(after.Data["password"]) != string(live.Data["password"]) {
		t.Fatal("the operator did not write the pushed value back: the gap docs/secrets.md names is not there")
	}
	if _, ok := after.Annotations[budget.LastAppliedKey]; !ok {
		t.Error("Prove removed last-applied-configuration from a Secret whose data changed")
	}
	// A run that did not push (apply --push-secrets or an earlier run
	// did, then someone synced) sees it too: the changes since the
	// plan's resourceVersion against the data the takeover wrote.
	later := &finalize.Sealer{Kube: k, Dynamic: d, Journal: func() *finalize.Journal { return nil }}
	if res := later.Prove(ctx, target); res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, esoform.ErrOverwritten.Error()) || !strings.Contains(res.Reason, "keys with other bytes [password]") {
		t.Fatalf("Prove of a run that did not push = %s: %s; want the changed key reported", res.Status, res.Reason)
	}
}
