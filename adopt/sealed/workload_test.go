package sealed_test

import (
	"testing"

	"github.com/adopt-dev/adopt/adopt/sealed"
)

// TestTakeoverUnderAMountingWorkload (issue 45, "takeover without a
// gap"): a Pod and a Deployment that mount the hand-applied Secret as a
// volume, take all of it as environment (envFrom) and one key by
// secretKeyRef stand throughout the takeover: the mark, the SealedSecret
// applied, the controller's unseal. This control plane has no kubelet, so
// the proof is at the API level, which is what a kubelet reads: a watch
// on the Secret opened before the mark shows only MODIFIED events up to
// the takeover's write, each with the same uid and the data byte for byte
// (compared here, never printed), never DELETED or ADDED, so a kubelet
// watching it never sees the Secret missing or changed; the Pod and the
// Deployment are not written at all (the same uid and resourceVersion, so
// no restart annotation, no new generation, no changed spec). Whether a
// real kubelet's remount is quiet is not proven here. The workload and
// the checks are testenv.MountSecret's, shared with the eso and sops
// forms' tests in adopt/finalize.
func TestTakeoverUnderAMountingWorkload(t *testing.T) {
	e := setup(t)
	ctx, k, d, live, s := e.ctx, e.k, e.d, e.live, e.sealed
	ns := live.Namespace
	mounted := cp.MountSecret(ctx, t, live, "password")

	uid, err := sealed.MarkManaged(ctx, k, ns, "db", live.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, ctx, s)
	tk, err := sealed.WaitTakeover(ctx, k, d, ns, "db", uid)
	noValue(t, err)
	if err != nil {
		t.Fatalf("%v\ncontroller events: %s", err, controllerEvents(ctx, ns))
	}
	// The mark and the controller's write, at least.
	if n := mounted.Until(ctx, t, tk.ResourceVersion); n < 2 {
		t.Errorf("%d events up to the takeover's write, want the mark's and the controller's", n)
	}
}
