package argoapp

import (
	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Spec is what an existing Application syncs: enough to render its
// sources from the GitOps repo and say when it will sync. It is read with
// Argo CD's own types.
type Spec struct {
	Namespace, Name string
	// Destination is the namespace objects without one are put in.
	Destination string
	Sources     []v1alpha1.ApplicationSource
	// Automated is set when the Application syncs by itself.
	Automated bool
	// Sync is status.sync.status (Synced, OutOfSync, Unknown or "").
	Sync string
	// Err says why the spec could not be read; Sources is then empty.
	Err string
}

// Key is the Application's namespace/name.
func (s Spec) Key() string { return s.Namespace + "/" + s.Name }

func specOf(u *unstructured.Unstructured) Spec {
	s := Spec{Namespace: u.GetNamespace(), Name: u.GetName()}
	var app v1alpha1.Application
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &app); err != nil {
		s.Err = err.Error()
		return s
	}
	s.Destination = app.Spec.Destination.Namespace
	s.Sources = app.Spec.GetSources()
	s.Automated = app.Spec.SyncPolicy != nil && app.Spec.SyncPolicy.Automated != nil
	s.Sync = string(app.Status.Sync.Status)
	return s
}
