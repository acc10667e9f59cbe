package testenv

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStaticClusterIP: StaticClusterIP skips an address a live Service
// pinned by hand and one a running test holds, gives an address back when
// its test ends, and the API server allocates a Service that names no
// clusterIP outside the static band.
func TestStaticClusterIP(t *testing.T) {
	cp := startTestControlPlane(t)
	ctx := context.Background()
	ns := cp.Namespace(t)
	svc := func(name, ip string) string {
		s, err := cp.Clientset().CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("Service %s with clusterIP %q: %v", name, ip, err)
		}
		return s.Spec.ClusterIP
	}
	static := netip.MustParsePrefix("10.0.0.0/24")

	svc("by-hand", "10.0.0.2")
	held := cp.StaticClusterIP(t)
	if held == "10.0.0.2" || !static.Contains(netip.MustParseAddr(held)) {
		t.Fatalf("StaticClusterIP gave %s; want an address of 10.0.0.0/24 other than the live Service's 10.0.0.2", held)
	}
	svc("pinned", held) // the API server accepts it: nothing else has it
	var first string
	t.Run("first", func(t *testing.T) { first = cp.StaticClusterIP(t) })
	t.Run("second", func(t *testing.T) {
		if again := cp.StaticClusterIP(t); again != first || again == held || again == "10.0.0.2" {
			t.Errorf("StaticClusterIP gave %s; want %s back from the ended subtest (not %s or 10.0.0.2, still held)", again, first, held)
		}
	})
	if ip := svc("allocated", ""); static.Contains(netip.MustParseAddr(ip)) {
		t.Errorf("the API server allocated %s, in the static band", ip)
	}
}
