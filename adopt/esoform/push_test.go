package esoform_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const canary = "adopt-eso-canary-8kPq2"

// binaryValue is not valid UTF-8: it survives only as bytes.
var binaryValue = []byte{0x00, 0xff, 0xfe, 0x80, 0x0a, 0xc3}

// leaks reports whether b holds the canary in plaintext or base64.
func leaks(b []byte) bool {
	return bytes.Contains(b, []byte(canary)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(canary))))
}

// env is one test's real operator, store, clients and hand-applied Secret.
type env struct {
	ctx      context.Context
	k        kubernetes.Interface
	d        dynamic.Interface
	eso      *testenv.ExternalSecrets
	ns       string
	storeNS  string
	store    esoform.Store
	live     *corev1.Secret
	opts     esoform.PushOptions
	storeKey string
}

// setup starts a real operator watching a fresh namespace with a
// kubernetes-provider SecretStore whose values live in another fresh
// namespace, and hand-applies Secret db there with the real kubectl,
// client-side: a binary value under data, the canary under stringData,
// so its last-applied annotation holds the canary in plaintext.
func setup(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &env{ctx: ctx, k: cp.Clientset(), ns: cp.Namespace(t), storeNS: cp.Namespace(t)}
	var err error
	if e.d, err = dynamic.NewForConfig(cp.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	if e.eso, err = testenv.StartExternalSecrets(ctx, cp, e.ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.eso.Stop)
	if err := e.eso.KubernetesStore(ctx, "vault", e.storeNS); err != nil {
		t.Fatal(err)
	}
	e.store = esoform.Store{Kind: esoform.KindSecretStore, Namespace: e.ns, Name: "vault"}
	y := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: %s
  labels: {app: db, tier: data}
  annotations: {team: payments}
type: Opaque
data:
  blob: %s
stringData:
  password: %s
`, e.ns, base64.StdEncoding.EncodeToString(binaryValue), canary)
	if _, err := cp.Kubectl(ctx, []byte(y), "apply", "-f", "-"); err != nil {
		t.Fatal("kubectl apply of the Secret failed") // its output would echo the manifest
	}
	if e.live, err = e.k.CoreV1().Secrets(e.ns).Get(ctx, "db", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.live.Annotations[budget.LastAppliedKey], canary) {
		t.Fatal("the hand-applied Secret's last-applied annotation does not hold the canary")
	}
	e.storeKey = esoform.RemoteKey(e.ns, "db")
	e.opts = esoform.PushOptions{Store: e.store, RemoteKey: e.storeKey, Namespace: e.ns, Name: "db",
		UID: string(e.live.UID), ResourceVersion: e.live.ResourceVersion}
	return e
}

// TestFindStoresSeesTheReadyStore: the real operator's store is found
// Ready and ReadWrite, and chosen as the namespace's one SecretStore.
func TestFindStoresSeesTheReadyStore(t *testing.T) {
	e := setup(t)
	cs, err := esoform.FindStores(e.ctx, e.d, e.ns)
	if err != nil {
		t.Fatal(err)
	}
	got, why, err := esoform.Choose(cs, "")
	if err != nil || got != e.store {
		t.Fatalf("Choose = %v (%s), %v; want %v", got, why, err, e.store)
	}
	if !strings.Contains(why, "Ready and ReadWrite") {
		t.Fatalf("why = %q", why)
	}
}

// TestPushThenTakeoverInPlace runs the whole form on the real operator:
// the push stores the live data once without the last-applied copy (or
// any label or annotation of the live Secret), reads it back equal, and
// leaves nothing behind; a second push is a no-op; the ExternalSecret
// from the manifest then takes the live Secret over in place: the same
// uid, the same bytes, only MODIFIED events, and the canary nowhere but
// in the Secret and the store's data.
func TestPushThenTakeoverInPlace(t *testing.T) {
	e := setup(t)
	ctx := e.ctx
	pushed, err := esoform.Push(ctx, e.k, e.d, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Already || strings.Join(pushed.Keys, ",") != "blob,password" {
		t.Fatalf("pushed = %+v, want keys blob,password pushed now", pushed)
	}
	stored, err := e.k.CoreV1().Secrets(e.storeNS).Get(ctx, e.storeKey, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := esoform.Diff(e.live.Data, stored.Data); d != "" {
		t.Fatalf("the store's copy differs: %s", d)
	}
	meta, _ := json.Marshal(stored.ObjectMeta)
	if leaks(meta) || stored.Annotations[budget.LastAppliedKey] != "" || len(stored.Labels) > 0 {
		t.Fatalf("the store's copy carries the live Secret's metadata: labels %v, annotation keys %v", stored.Labels, keys(stored.Annotations))
	}
	for _, what := range []struct {
		r    dynamic.ResourceInterface
		name string
	}{{e.d.Resource(esoform.PushSecretGVR).Namespace(e.ns), "db.adopt-push"}, {e.d.Resource(esoform.ExternalSecretGVR).Namespace(e.ns), "db.adopt-probe"}} {
		if _, err := what.r.Get(ctx, what.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s left behind: %v", what.name, err)
		}
	}
	for _, name := range []string{"db.adopt-push", "db.adopt-probe"} {
		if _, err := e.k.CoreV1().Secrets(e.ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Secret %s left behind: %v", name, err)
		}
	}
	again, err := esoform.Push(ctx, e.k, e.d, e.opts)
	if err != nil || !again.Already {
		t.Fatalf("the second push = %+v, %v; want Already", again, err)
	}

	es, err := esoform.Manifest(e.store, e.storeKey, e.live)
	if err != nil {
		t.Fatal(err)
	}
	y, err := es.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if leaks(y) || bytes.Contains(y, []byte(budget.LastAppliedKey)) {
		t.Fatal("the ExternalSecret manifest carries the canary or the last-applied annotation")
	}
	w, err := e.k.CoreV1().Secrets(e.ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "db").String(), ResourceVersion: e.live.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if out, err := cp.Kubectl(ctx, y, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-"); err != nil {
		t.Fatalf("apply the ExternalSecret: %v: %s", err, out)
	}
	took, err := esoform.WaitTakeover(ctx, e.k, e.d, e.ns, "db", string(e.live.UID), e.live.Data)
	if err != nil {
		t.Fatal(err)
	}
	if !took.HasLastApplied {
		t.Fatal("the operator removed last-applied-configuration; issue 45 found it keeps it (finalize removes it)")
	}
	// Every event up to the takeover's write is a MODIFIED.
	for {
		ev := <-w.ResultChan()
		s, ok := ev.Object.(*corev1.Secret)
		if ev.Type != watch.Modified || !ok {
			t.Fatalf("event %s on the Secret during the takeover; want MODIFIED only", ev.Type)
		}
		if s.ResourceVersion == took.ResourceVersion {
			break
		}
	}
	after, err := e.k.CoreV1().Secrets(e.ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Labels["app"] != "db" || after.Labels["tier"] != "data" || after.Annotations["team"] != "payments" {
		t.Fatalf("the Secret lost its labels or annotations: %v, keys %v", after.Labels, keys(after.Annotations))
	}
	if leaks([]byte(e.eso.Log())) {
		t.Fatal("the operator's log holds the canary")
	}
}

// TestPushRefusesATakenKey: when the store already holds other data at
// the key, Push refuses and the stored data stays as it was.
func TestPushRefusesATakenKey(t *testing.T) {
	e := setup(t)
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: e.storeKey, Namespace: e.storeNS}, Data: map[string][]byte{"password": []byte("someone-elses")}}
	if _, err := e.k.CoreV1().Secrets(e.storeNS).Create(e.ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := esoform.Push(e.ctx, e.k, e.d, e.opts)
	if !errors.Is(err, esoform.ErrKeyTaken) {
		t.Fatalf("Push = %v, want ErrKeyTaken", err)
	}
	if leaks([]byte(err.Error())) || !strings.Contains(err.Error(), "keys missing [blob]; keys with other bytes [password]") {
		t.Fatalf("error %q: want the keys named, never a value", err)
	}
	stored, err := e.k.CoreV1().Secrets(e.storeNS).Get(e.ctx, e.storeKey, metav1.GetOptions{})
	if err != nil || string(stored.Data["password"]) != "someone-elses" || len(stored.Data) != 1 {
		t.Fatalf("the stored data was changed (%v)", err)
	}
}

// TestPushRefusesAChangedSecret: a Secret changed since the plan is not
// pushed, and nothing is created.
func TestPushRefusesAChangedSecret(t *testing.T) {
	e := setup(t)
	o := e.opts
	o.ResourceVersion = "1"
	if _, err := esoform.Push(e.ctx, e.k, e.d, o); !errors.Is(err, esoform.ErrChanged) {
		t.Fatalf("Push = %v, want ErrChanged", err)
	}
	if _, err := e.k.CoreV1().Secrets(e.storeNS).Get(e.ctx, e.storeKey, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the store holds the key: %v", err)
	}
	if _, err := e.d.Resource(esoform.PushSecretGVR).Namespace(e.ns).Get(e.ctx, "db.adopt-push", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a PushSecret was created: %v", err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
