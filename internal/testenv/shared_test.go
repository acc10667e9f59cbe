package testenv

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestMain runs the package's tests and stops the shared Argo CD planes.
func TestMain(m *testing.M) {
	code := m.Run()
	shared.Lock()
	for _, p := range shared.m {
		p.Lock()
		if p.a != nil {
			p.a.Stop()
			p.cp.Stop()
		}
		p.Unlock()
	}
	shared.Unlock()
	os.Exit(code)
}

// shared are the control planes with a real Argo CD that the package's
// Argo CD tests share, one per version: a start costs 15 s, and each test
// works in namespaces, repositories and Applications of its own.
var shared = struct {
	sync.Mutex
	m map[string]*sharedPlane
}{m: map[string]*sharedPlane{}}

// sharedPlane is one version's plane. Its own lock covers its start, so
// that tests of different versions (TestFirstSyncByVersion's, which run in
// parallel) start their planes at once. busy is held by the test using the
// plane, from sharedArgoCD to its end: parallel tests on one version take
// turns (a test's cleanup deletes the Applications it did not find, and
// some change Argo CD's settings), while different versions' overlap.
type sharedPlane struct {
	sync.Mutex
	busy sync.Mutex
	cp   *ControlPlane
	a    *ArgoCD
}

// sharedArgoCD is the shared control plane and Argo CD of version, started
// on first use, and the test's alone until it ends (sharedPlane.busy). The
// Applications a test creates are deleted when it ends, so that Argo CD
// stops reconciling them for the next test. A test calls it once.
func sharedArgoCD(t *testing.T, version string) (*ControlPlane, *ArgoCD) {
	t.Helper()
	shared.Lock()
	p := shared.m[version]
	if p == nil {
		p = &sharedPlane{}
		shared.m[version] = p
	}
	shared.Unlock()
	func() {
		p.Lock()
		defer p.Unlock() // also when the start fails the test
		if p.a == nil {
			p.cp, p.a = startShared(t, version)
		}
	}()
	p.busy.Lock()
	t.Cleanup(p.busy.Unlock) // cleanups run last first: after the deletes below
	apps := dynamic.NewForConfigOrDie(p.cp.RESTConfig()).Resource(applicationsGVR).Namespace(p.a.Namespace)
	before := map[string]bool{}
	if l, err := apps.List(context.Background(), metav1.ListOptions{}); err == nil {
		for _, u := range l.Items {
			before[u.GetName()] = true
		}
	}
	t.Cleanup(func() {
		if l, err := apps.List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, u := range l.Items {
				if !before[u.GetName()] {
					_ = apps.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
				}
			}
		}
	})
	return p.cp, p.a
}

var applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

func startShared(t *testing.T, version string) (*ControlPlane, *ArgoCD) {
	t.Helper()
	start := time.Now()
	cp, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatalf("the local control plane did not start: %v", err)
	}
	a, err := StartArgoCD(context.Background(), cp, version)
	if err != nil {
		cp.Stop()
		t.Fatal(err) // never a skip: Argo CD must start here and in CI
	}
	for _, tm := range a.Timings {
		t.Logf("argocd %s: %-45s %s", version, tm.Step, tm.Took.Round(time.Millisecond))
	}
	t.Logf("argocd %s: started in %s; server %s", version, time.Since(start).Round(time.Millisecond), a.Server)
	return cp, a
}
