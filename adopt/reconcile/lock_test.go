package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// TestHoldRenewsAndReleases, on a real kube-apiserver: a held Lease is
// renewed while the run goes on (its renew time moves, seen through a
// watch, with no sleep), another run is refused meanwhile, and release
// frees it at once even after the run's context was cancelled (SIGTERM),
// so the next run takes it without waiting out the duration.
func TestHoldRenewsAndReleases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := cp.Namespace(t)
	kube := cp.Clientset()
	lock := func(holder string) *Lock {
		return &Lock{Kube: kube, Namespace: ns, Name: "adopt-reconcile", Holder: holder, Duration: 3 * time.Second, Now: time.Now}
	}
	runCtx, stopRun := context.WithCancel(ctx)
	release, err := lock("run-1").Hold(runCtx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := kube.CoordinationV1().Leases(ns).Get(ctx, "adopt-reconcile", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := kube.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "adopt-reconcile").String(), ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for renewed := false; !renewed; {
		select {
		case ev := <-w.ResultChan():
			if l, ok := ev.Object.(interface{ GetResourceVersion() string }); ok && ev.Type == watch.Modified && l.GetResourceVersion() != first.ResourceVersion {
				renewed = true
			}
		case <-ctx.Done():
			t.Fatal("the held Lease was never renewed")
		}
	}
	cur, err := kube.CoordinationV1().Leases(ns).Get(ctx, "adopt-reconcile", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Spec.RenewTime.After(first.Spec.RenewTime.Time) || *cur.Spec.HolderIdentity != "run-1" {
		t.Fatalf("renewal: holder %q, renew time %s after %s", *cur.Spec.HolderIdentity, cur.Spec.RenewTime, first.Spec.RenewTime)
	}
	if err := lock("run-2").Acquire(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second run took a held Lease: %v", err)
	}
	stopRun() // SIGTERM cancels the run's context
	release()
	if err := lock("run-2").Acquire(ctx); err != nil {
		t.Fatalf("after release, the next run could not take the Lease: %v", err)
	}
}
