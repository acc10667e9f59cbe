package testenv

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// TestExternalSecretsReadsThroughItsStore starts two real operators on
// one control plane, each reconciling a namespace of its own with a
// kubernetes-provider SecretStore over another namespace. An
// ExternalSecret in the first reads a stored Secret back into a new
// Secret with the same bytes, owned by it; the store reports ReadWrite;
// the second operator's log never names the first's namespace; both
// serve their metrics on loopback only.
func TestExternalSecretsReadsThroughItsStore(t *testing.T) {
	t.Parallel() // on a control plane of its own
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nsA, nsB, storeA, storeB := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	start := time.Now()
	a, err := StartExternalSecrets(ctx, cp, nsA)
	if err != nil {
		t.Fatal(err) // never a skip
	}
	t.Cleanup(a.Stop)
	t.Logf("the External Secrets Operator %s for %s: ready in %s", ExternalSecretsVersion, nsA, time.Since(start).Round(time.Millisecond))
	b, err := StartExternalSecrets(ctx, cp, nsB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	for _, e := range []struct {
		eso   *ExternalSecrets
		store string
	}{{a, storeA}, {b, storeB}} {
		if !strings.HasPrefix(e.eso.MetricsURL, "http://127.0.0.1:") {
			t.Errorf("metrics at %s, not on loopback", e.eso.MetricsURL)
		}
		if err := e.eso.KubernetesStore(ctx, "vault", e.store); err != nil {
			t.Fatal(err)
		}
	}
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Resource(SecretStoreGVR).Namespace(nsA).Get(ctx, "vault", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if caps, _, _ := unstructured.NestedString(s.Object, "status", "capabilities"); caps != "ReadWrite" {
		t.Errorf("the kubernetes store's capabilities are %q, want ReadWrite", caps)
	}

	binary := []byte{0x00, 0xff, 0x10, 0x80, 'e', 's', 'o'}
	stored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds", Namespace: storeA},
		Data: map[string][]byte{"blob": binary, "password": []byte("testenv-eso-canary-3Kd")}}
	if _, err := cp.Clientset().CoreV1().Secrets(storeA).Create(ctx, stored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	es := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "db", "namespace": nsA},
		"spec": map[string]any{
			"refreshInterval": "0s",
			"secretStoreRef":  map[string]any{"kind": "SecretStore", "name": "vault"},
			"target":          map[string]any{"name": "db", "creationPolicy": "Owner"},
			"dataFrom":        []any{map[string]any{"extract": map[string]any{"key": "db-creds"}}},
		},
	}}
	if _, err := d.Resource(ExternalSecretGVR).Namespace(nsA).Create(ctx, es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out *corev1.Secret
	if err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		out, err = cp.Clientset().CoreV1().Secrets(nsA).Get(ctx, "db", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the ExternalSecret wrote no Secret: %v; log: %s", err, lastLines(a.LogTail(4000), 10))
	}
	if len(out.Data) != 2 || !bytes.Equal(out.Data["blob"], binary) || !bytes.Equal(out.Data["password"], stored.Data["password"]) {
		t.Errorf("the Secret read back has other bytes than the store's (keys %d; values not printed)", len(out.Data))
	}
	if c := metav1.GetControllerOf(out); c == nil || c.Kind != "ExternalSecret" || c.Name != "db" {
		t.Errorf("the Secret's controller is %+v, want ExternalSecret db", c)
	}
	if strings.Contains(b.Log(), nsA) {
		t.Errorf("the operator for %s names %s in its log", nsB, nsA)
	}
	if strings.Contains(a.Log(), "testenv-eso-canary-3Kd") {
		t.Error("the operator's log holds the stored value")
	}
}
