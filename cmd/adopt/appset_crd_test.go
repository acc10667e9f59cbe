package main

// The ApplicationSet's planning is proven in adopt/planner
// (TestApplicationSetGitDirectories); the CRD is installed here for the
// chart's RBAC test.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

var appSetCRDOnce sync.Once

// installApplicationSetCRD installs Argo CD v2.14.21's Application and
// ApplicationSet CRDs on the package's control plane, once, and waits
// until applicationsets are served.
func installApplicationSetCRD(t *testing.T) {
	t.Helper()
	appSetCRDOnce.Do(func() {
		crd := argoCDModuleFile(t, "manifests/crds/applicationset-crd.yaml")
		if out, err := cp.Kubectl(context.Background(), crd, "apply", "--server-side", "--force-conflicts", "--field-manager=finalize-test", "-f", "-"); err != nil {
			t.Fatalf("install the ApplicationSet CRD: %v: %s", err, out)
		}
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			l, err := cp.Clientset().Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
			return err == nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "applicationsets" }), nil
		})
		if err != nil {
			t.Fatalf("the ApplicationSet CRD was not served: %v", err)
		}
	})
}
