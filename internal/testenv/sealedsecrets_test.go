package testenv

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// TestSealedSecretsUnsealsThroughTheServiceProxy starts two real
// controllers on one control plane, each watching a namespace of its own.
// The real kubeseal fetches the first one's certificate through the API
// server's service proxy and seals a Secret; applied with kubectl, the
// controller unseals it into a Secret with the same bytes, owned by the
// SealedSecret. The first controller verifies the seal (kubeseal
// --validate through the proxy, and /v1/verify directly); the second,
// whose key differs, refuses it, and never touches the first one's
// namespace.
func TestSealedSecretsUnsealsThroughTheServiceProxy(t *testing.T) {
	t.Parallel() // on a control plane of its own
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nsA, nsB := cp.Namespace(t), cp.Namespace(t)
	a := startSealedSecrets(t, ctx, cp, nsA)
	b := startSealedSecrets(t, ctx, cp, nsB)
	if a.Namespace == b.Namespace {
		t.Fatalf("two controllers share namespace %s", a.Namespace)
	}
	certA, err := a.Cert(ctx)
	if err != nil {
		t.Fatal(err)
	}
	certB, err := b.Cert(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(certA, certB) {
		t.Fatal("two controllers serve the same certificate")
	}
	// The proxy serves what the controller serves.
	viaProxy, err := cp.Clientset().CoreV1().Services(a.Namespace).ProxyGet("http", a.Service, "http", "/v1/cert.pem", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET the certificate through the service proxy: %v", err)
	}
	if !bytes.Equal(viaProxy, certA) {
		t.Fatalf("the service proxy serves %d bytes, the controller %d", len(viaProxy), len(certA))
	}

	binary := []byte{0x00, 0xff, 0x10, 0x80, 's', 'e', 'a', 'l'}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: nsA, Labels: map[string]string{"app": "db"}},
		Type:       corev1.SecretTypeOpaque, Data: map[string][]byte{"blob": binary, "password": []byte("testenv-canary-7Q2x")}}
	in, err := yaml.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := a.Kubeseal(ctx, in, "--format", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("testenv-canary-7Q2x")) {
		t.Fatal("kubeseal's output holds the value in plaintext")
	}
	if _, err := a.Kubeseal(ctx, sealed, "--validate"); err != nil {
		t.Fatalf("the controller that sealed it does not validate it: %v", err)
	}
	if _, err := b.Kubeseal(ctx, sealed, "--validate"); err == nil {
		t.Fatal("another controller's key validates the seal")
	}
	asJSON, err := yaml.YAMLToJSON(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := a.Verify(ctx, asJSON); err != nil || code != 200 {
		t.Fatalf("/v1/verify: %d, %v; want 200", code, err)
	}

	if out, err := cp.Kubectl(ctx, sealed, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got *corev1.Secret
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = cp.Clientset().CoreV1().Secrets(nsA).Get(ctx, "db", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("the controller did not unseal db into a Secret: %v; log: %s", err, lastLines(a.LogTail(4000), 10))
	}
	for k, want := range secret.Data {
		if !bytes.Equal(got.Data[k], want) {
			t.Errorf("key %s: the unsealed value differs from the sealed one (%d bytes, want %d)", k, len(got.Data[k]), len(want))
		}
	}
	if len(got.Data) != len(secret.Data) || got.Labels["app"] != "db" || got.Type != corev1.SecretTypeOpaque {
		t.Errorf("the Secret has %d keys, labels %v, type %s; want 2 keys, app=db, Opaque", len(got.Data), got.Labels, got.Type)
	}
	if owner := metav1.GetControllerOf(got); owner == nil || owner.Kind != "SealedSecret" || owner.Name != "db" {
		t.Errorf("the Secret's controller is %+v; want SealedSecret db", owner)
	}
	if strings.Contains(b.LogTail(1<<20), nsA) {
		t.Errorf("the second controller saw namespace %s:\n%s", nsA, lastLines(b.LogTail(4000), 10))
	}
}

func startSealedSecrets(t *testing.T, ctx context.Context, cp *ControlPlane, namespaces ...string) *SealedSecrets {
	t.Helper()
	start := time.Now()
	s, err := StartSealedSecrets(ctx, cp, namespaces...)
	if err != nil {
		t.Fatal(err) // never a skip
	}
	t.Cleanup(s.Stop)
	t.Logf("Sealed Secrets %s in namespace %s, watching %v: ready in %s", SealedSecretsVersion, s.Namespace, s.Watched, time.Since(start).Round(time.Millisecond))
	return s
}
