package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Main starts one control plane for a test package, hands it to setup, runs
// the tests, calls each teardown and stops it, also on SIGINT/SIGTERM. A
// control plane that cannot start fails the package: it is never a skip.
func Main(m *testing.M, setup func(*ControlPlane), teardown ...func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	start := time.Now()
	cp, err := Start(ctx, Options{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the local control plane did not start: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "testenv: control plane %s ready in %s\n", cp.Server, time.Since(start).Round(time.Millisecond))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		cp.Stop()
		os.Exit(130)
	}()
	setup(cp)
	code := m.Run()
	for _, f := range teardown {
		f()
	}
	cp.Stop()
	os.Exit(code)
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh namespace for one test and returns its name.
func (cp *ControlPlane) Namespace(t testing.TB) string {
	t.Helper()
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := strings.Trim(base, "-") + "-" + randomToken()[:6]
	_, err := cp.Clientset().CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { cp.deleteApplicationsInto(name) })
	return name
}

// deleteApplicationsInto deletes the Argo CD Applications on cp whose
// destination is namespace: a test's Applications left on a shared plane
// would teach later tests' plans their names (adopt learns the repo's and
// the cluster's naming), whatever order the tests run in. Nothing when
// Argo CD's CRD is not served.
func (cp *ControlPlane) deleteApplicationsInto(namespace string) {
	apps := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"})
	l, err := apps.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, u := range l.Items {
		if ns, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "namespace"); ns == namespace {
			_ = apps.Namespace(u.GetNamespace()).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
		}
	}
}

// StaticClusterIP returns a ClusterIP from the static band of the service
// range, 10.0.0.2 to 10.0.0.255 (10.0.0.1 is the kubernetes Service's),
// which the API server does not allocate from while the rest of the range
// has room. No live Service holds it (its networking.k8s.io/v1 IPAddress
// does not exist) and no other running test of this process has it; it
// goes back to the pool when t ends. Pin it where a test needs an address
// of its own, such as a Git copy whose clusterIP differs from the live
// one; where any address will do, leave clusterIP out and let the API
// server allocate.
func (cp *ControlPlane) StaticClusterIP(t testing.TB) string {
	t.Helper()
	cp.staticMu.Lock()
	defer cp.staticMu.Unlock()
	if cp.staticIPs == nil {
		cp.staticIPs = map[string]bool{}
	}
	// client-go stays at v0.31, whose typed client has no networking/v1.
	api := cp.Clientset().Discovery().RESTClient()
	for i := 2; i <= 255; i++ {
		ip := fmt.Sprintf("10.0.0.%d", i)
		if cp.staticIPs[ip] {
			continue
		}
		err := api.Get().AbsPath("/apis/networking.k8s.io/v1/ipaddresses", ip).Do(context.Background()).Error()
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			t.Fatalf("is ClusterIP %s free: %v", ip, err)
		}
		cp.staticIPs[ip] = true
		t.Cleanup(func() {
			cp.staticMu.Lock()
			delete(cp.staticIPs, ip)
			cp.staticMu.Unlock()
		})
		return ip
	}
	t.Fatalf("no free ClusterIP in 10.0.0.2-10.0.0.255: %d held by running tests, the rest by Services", len(cp.staticIPs))
	return ""
}
