package sealed_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const canary = "adopt-canary-4hT9w"

// binaryValue is not valid UTF-8: it survives only as bytes.
var binaryValue = []byte{0x00, 0xff, 0xfe, 0x80, 0x0a, 0xc3}

// handApply applies Secret namespace/db with the real kubectl, client-side,
// as people do: a binary value under data, the canary under stringData,
// so the last-applied annotation holds the canary in plaintext.
func handApply(t *testing.T, ctx context.Context, ns string) *corev1.Secret {
	t.Helper()
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
`, ns, base64.StdEncoding.EncodeToString(binaryValue), canary)
	if _, err := cp.Kubectl(ctx, []byte(y), "apply", "-f", "-"); err != nil {
		t.Fatal("kubectl apply of the Secret failed") // its output would echo the manifest
	}
	live, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.Annotations[budget.LastAppliedKey] == "" || !bytes.Equal(live.Data["password"], []byte(canary)) {
		t.Fatal("the hand-applied Secret has no last-applied annotation, or not the canary")
	}
	return live
}

// env is one test's real controller, clients, hand-applied Secret and its
// seal.
type env struct {
	ctx        context.Context
	k          kubernetes.Interface
	d          dynamic.Interface
	controller *testenv.SealedSecrets
	ctrl       sealed.Controller
	live       *corev1.Secret
	sealed     *sealed.SealedSecret
}

// setup starts a real controller watching a fresh namespace, hand-applies
// the Secret there, fetches the controller's certificate through the
// service proxy and seals the live Secret.
func setup(t *testing.T) env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns := cp.Namespace(t)
	ss, err := testenv.StartSealedSecrets(ctx, cp, ns)
	if err != nil {
		t.Fatal(err) // never a skip
	}
	t.Cleanup(ss.Stop)
	k := cp.Clientset()
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctrl := sealed.Controller{Namespace: ss.Namespace, Name: ss.Service}
	live := handApply(t, ctx, ns)
	pub, err := sealed.Cert(ctx, k, ctrl)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealed.Seal(pub, live)
	if err != nil {
		t.Fatal(err)
	}
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString(binaryValue), "last-applied"} {
		if strings.Contains(string(y), form) {
			t.Fatal("the SealedSecret manifest holds a value, its base64, or the last-applied annotation")
		}
	}
	return env{ctx: ctx, k: k, d: d, controller: ss, ctrl: ctrl, live: live, sealed: s}
}

func apply(t *testing.T, ctx context.Context, s *sealed.SealedSecret) {
	t.Helper()
	y, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, y, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func noValue(t *testing.T, err error) {
	t.Helper()
	if err != nil && (strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(canary)))) {
		t.Fatal("an error carries the Secret's value")
	}
}

// TestTakeoverInPlace: on the real controller and API server, a
// hand-applied Secret marked managed first, then its SealedSecret applied,
// is taken over in place: same uid, data byte for byte, the template's
// labels and annotations (the last-applied copy gone), the SealedSecret as
// its controller, and never a DELETED event on a watch opened before.
func TestTakeoverInPlace(t *testing.T) {
	e := setup(t)
	ctx, k, d, ctrl, live, s := e.ctx, e.k, e.d, e.ctrl, e.live, e.sealed
	ns := live.Namespace

	// The controller verifies the seal, through the proxy, also past its
	// rate limit (2 a second, burst 2).
	for i := 0; i < 5; i++ {
		if err := sealed.Verify(ctx, k, ctrl, s); err != nil {
			t.Fatalf("verify %d: %v", i, err)
		}
	}
	tampered := *s
	tampered.Spec.EncryptedData = maps.Clone(s.Spec.EncryptedData)
	b, _ := base64.StdEncoding.DecodeString(tampered.Spec.EncryptedData["blob"])
	b[len(b)-1] ^= 1
	tampered.Spec.EncryptedData["blob"] = base64.StdEncoding.EncodeToString(b)
	err := sealed.Verify(ctx, k, ctrl, &tampered)
	noValue(t, err)
	if !errors.Is(err, sealed.ErrNotVerified) {
		t.Fatalf("a tampered value: %v; want ErrNotVerified", err)
	}
	other := live.DeepCopy()
	other.Name = "other"
	pub, err := sealed.Cert(ctx, k, ctrl)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := sealed.Seal(pub, other)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere.Metadata.Name = "db"
	err = sealed.Verify(ctx, k, ctrl, elsewhere)
	noValue(t, err)
	if !errors.Is(err, sealed.ErrNotVerified) {
		t.Fatalf("a value sealed for another name: %v; want ErrNotVerified", err)
	}

	events, err := k.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "db").String(), ResourceVersion: live.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Stop()

	uid, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if uid != live.UID || marked.Annotations[sealed.ManagedAnnotation] != "true" {
		t.Fatalf("MarkManaged: uid %s (live %s), annotation %q", uid, live.UID, marked.Annotations[sealed.ManagedAnnotation])
	}
	if again, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion); err != nil || again != uid {
		t.Fatalf("MarkManaged again: %s, %v", again, err)
	}
	if now, _ := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); now.ResourceVersion != marked.ResourceVersion {
		t.Fatalf("MarkManaged wrote again: resourceVersion %s, then %s", marked.ResourceVersion, now.ResourceVersion)
	}

	apply(t, ctx, s)
	tk, err := sealed.WaitTakeover(ctx, k, d, ns, "db", uid)
	noValue(t, err)
	if err != nil {
		t.Fatalf("%v\ncontroller log: %s", err, controllerEvents(ctx, ns))
	}

	// The watch is the barrier: read it up to the takeover's write.
	for seen := false; !seen; {
		select {
		case e, ok := <-events.ResultChan():
			if !ok {
				t.Fatal("the watch on the Secret closed before the takeover's write")
			}
			m, _ := e.Object.(metav1.Object)
			if e.Type != watch.Modified {
				t.Fatalf("a %s event on the Secret: it was not taken over in place", e.Type)
			}
			seen = m.GetResourceVersion() == tk.ResourceVersion
		case <-ctx.Done():
			t.Fatal("the watch never showed the takeover's write")
		}
	}

	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != live.UID || tk.UID != live.UID {
		t.Errorf("uid %s (takeover %s); want %s", after.UID, tk.UID, live.UID)
	}
	if len(after.Data) != len(live.Data) {
		t.Errorf("%d keys after, %d before", len(after.Data), len(live.Data))
	}
	for key, v := range live.Data {
		if !bytes.Equal(after.Data[key], v) {
			t.Errorf("key %s changed: %d bytes, %d before (values not shown)", key, len(after.Data[key]), len(v))
		}
	}
	tmpl := s.Spec.Template.Metadata
	if !maps.Equal(after.Labels, tmpl.Labels) || !maps.Equal(after.Labels, live.Labels) {
		t.Errorf("labels %v; want the template's %v", after.Labels, tmpl.Labels)
	}
	if !maps.Equal(after.Annotations, tmpl.Annotations) || !maps.Equal(after.Annotations, map[string]string{"team": "payments"}) {
		t.Errorf("annotations %v; want the template's, team=payments alone (keys only shown)", slicesKeys(after.Annotations))
	}
	if after.Type != corev1.SecretTypeOpaque {
		t.Errorf("type %s", after.Type)
	}
	owner := metav1.GetControllerOf(after)
	if owner == nil || owner.Kind != "SealedSecret" || owner.Name != "db" || owner.UID != tk.Owner || len(after.OwnerReferences) != 1 {
		t.Errorf("owners %+v; want the SealedSecret db (%s) as controller", after.OwnerReferences, tk.Owner)
	}
}

// TestTakeoverWrongOrder: a SealedSecret applied over a Secret that was
// not marked first is refused, and stays refused once the mark comes
// after the controller's retries; WaitTakeover says so and how to
// recover, the Secret is untouched, and the recovery it names (seal
// again, apply the changed SealedSecret) takes the Secret over in place.
func TestTakeoverWrongOrder(t *testing.T) {
	e := setup(t)
	ctx, k, d, live, s := e.ctx, e.k, e.d, e.live, e.sealed
	ns := live.Namespace
	apply(t, ctx, s)
	_, err := sealed.WaitTakeover(ctx, k, d, ns, "db", live.UID)
	noValue(t, err)
	if !errors.Is(err, sealed.ErrNotManaged) {
		t.Fatalf("err %v; want ErrNotManaged", err)
	}
	for _, want := range []string{"bitnami.com/SealedSecret " + ns + "/db", "Secret " + ns + "/db", sealed.ManagedAnnotation, "To recover", "seal the Secret again", "Do not delete"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// The controller retries 5 times within about 0.2 s; its log says when
	// it gives up, the barrier before a late mark.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		l := e.controller.LogTail(1 << 20)
		return strings.Contains(l, "giving up") && strings.Contains(l, ns+"/db"), nil
	})
	if err != nil {
		t.Fatalf("the controller never gave up on %s/db: %v", ns, err)
	}
	now, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != live.ResourceVersion || len(now.OwnerReferences) != 0 {
		t.Fatalf("the refused Secret was written: resourceVersion %s (was %s), owners %v", now.ResourceVersion, live.ResourceVersion, now.OwnerReferences)
	}

	uid, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sealed.WaitTakeover(ctx, k, d, ns, "db", uid)
	if !errors.Is(err, sealed.ErrNotManaged) || !strings.Contains(err.Error(), "carries the annotation now") {
		t.Fatalf("after a late mark: %v; want ErrNotManaged, saying the mark came late", err)
	}

	// The recovery: a new seal changes the spec, which the controller
	// unseals again, now over a marked Secret.
	pub, err := sealed.Cert(ctx, k, e.ctrl)
	if err != nil {
		t.Fatal(err)
	}
	marked, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := sealed.Seal(pub, marked)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, ctx, again)
	tk, err := sealed.WaitTakeover(ctx, k, d, ns, "db", uid)
	if err != nil {
		t.Fatalf("the recovery: %v\n%s", err, controllerEvents(ctx, ns))
	}
	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tk.UID != live.UID || after.UID != live.UID || !bytes.Equal(after.Data["blob"], binaryValue) || !bytes.Equal(after.Data["password"], []byte(canary)) {
		t.Fatalf("the recovered takeover: uid %s (want %s), or data changed (values not shown)", after.UID, live.UID)
	}
	if _, ok := after.Annotations[budget.LastAppliedKey]; ok {
		t.Error("the last-applied copy stays after the takeover")
	}
	if _, ok := after.Annotations[sealed.ManagedAnnotation]; ok {
		t.Error("the managed mark stays after the takeover; the template does not carry it")
	}
}

// TestMarkManagedRefusesAChangedSecret: a Secret changed after it was
// sealed is not marked, so the controller cannot write the sealed (older)
// values over it.
func TestMarkManagedRefusesAChangedSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := cp.Namespace(t)
	live := handApply(t, ctx, ns)
	if out, err := cp.Kubectl(ctx, nil, "label", "secret", "-n", ns, "db", "rotated=yes"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	k := cp.Clientset()
	_, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion)
	noValue(t, err)
	if err == nil || !strings.Contains(err.Error(), "changed since it was sealed") || !strings.Contains(err.Error(), "seal it again") {
		t.Fatalf("err %v; want a refusal naming the change", err)
	}
	now, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := now.Annotations[sealed.ManagedAnnotation]; ok {
		t.Fatal("the changed Secret was marked")
	}
}

func slicesKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// controllerEvents are the Events in namespace ns, for a failure report:
// the controller's messages name keys, never values.
func controllerEvents(ctx context.Context, ns string) string {
	out, _ := cp.Kubectl(ctx, nil, "get", "events", "-n", ns, "-o", "custom-columns=REASON:.reason,MESSAGE:.message")
	return out
}
