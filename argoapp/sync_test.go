package argoapp

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSyncRereadsAChangedApplication: Argo CD's controller writes an
// Application's status all the time, so the guarded patch that starts a
// sync can meet a newer resourceVersion (a failed test op, 422). Sync reads
// the Application again and patches it, up to syncAttempts times, and then
// gives up saying so. A fake client, because a real API server cannot be
// made to change the object between the read and the patch on demand.
func TestSyncRereadsAChangedApplication(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusals int
		wantErr  string
	}{
		{"changed twice", 2, ""},
		{"changed every time", syncAttempts, "changed between each of 5 reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
				"metadata": map[string]any{"name": "adopt-x", "namespace": "argocd", "resourceVersion": "7"},
				"spec":     map[string]any{},
			}}
			c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{ApplicationGVR: "ApplicationList"}, app)
			patches := 0
			c.PrependReactor("patch", "applications", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				if patches <= tc.refusals {
					return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "argoproj.io", Kind: "Application"}, "adopt-x", nil)
				}
				return false, nil, nil
			})
			err := KubeStatus{Client: c, Namespace: "argocd"}.Sync(context.Background(), "adopt-x", "", Version{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("sync after %d refusals: %v", tc.refusals, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			want := tc.refusals + 1
			if tc.wantErr != "" {
				want = syncAttempts
			}
			if patches != want {
				t.Errorf("%d patches, want %d", patches, want)
			}
		})
	}
}
