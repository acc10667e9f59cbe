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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return name
}
