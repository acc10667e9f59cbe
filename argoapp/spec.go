package argoapp

import (
	"encoding/json"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Spec is what an existing Application syncs: enough to render its
// sources from the GitOps repo and say when it will sync. It is read with
// Argo CD's own types.
type Spec struct {
	Namespace, Name string
	// Destination is the namespace objects without one are put in.
	Destination string
	// Cluster is the destination cluster's name: spec.destination.name,
	// "in-cluster" for the in-cluster server URL, "" for another URL.
	Cluster string
	Sources []v1alpha1.ApplicationSource
	// Automated is set when the Application syncs by itself.
	Automated bool
	// Sync is status.sync.status (Synced, OutOfSync, Unknown or "").
	Sync string
	// Err says why the spec could not be read; Sources is then empty.
	Err string
	// Pending is where in Git the Application is defined when it is not in
	// the cluster yet ("file:line"); "" for one read from the cluster.
	Pending string
	// AppSet is the ApplicationSet (namespace/name) that generates a
	// pending Application; Pending then says from what.
	AppSet string
	// AppSetInGit is where in Git that ApplicationSet is defined when it
	// is not in the cluster yet either ("" when it is).
	AppSetInGit string
	// Instance is the name Argo CD's repo-server knows the Application by
	// ($ARGOCD_APP_NAME, .argocd-source-<instance>.yaml): "" for Name,
	// which it is in Argo CD's own namespace (see InstanceName).
	Instance string
}

// InstanceName is the name the repo-server knows an Application by, as
// Argo CD names it: its name in Argo CD's own namespace (argoNS, or
// unknown), <namespace>_<name> in any other (apps in any namespace).
func (s Spec) InstanceName(argoNS string) string {
	if argoNS == "" || s.Namespace == "" || s.Namespace == argoNS {
		return s.Name
	}
	return s.Namespace + "_" + s.Name
}

// Key is the Application's namespace/name.
func (s Spec) Key() string { return s.Namespace + "/" + s.Name }

func specOf(u *unstructured.Unstructured) Spec {
	s := Spec{Namespace: u.GetNamespace(), Name: u.GetName()}
	s.Sync, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	// Through JSON: the runtime converter refuses the types' unexported
	// fields.
	var spec v1alpha1.ApplicationSpec
	b, err := json.Marshal(u.Object["spec"])
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.Destination = spec.Destination.Namespace
	switch {
	case spec.Destination.Name != "":
		s.Cluster = spec.Destination.Name
	case spec.Destination.Server == InClusterServer:
		s.Cluster = InClusterName
	}
	s.Sources = spec.GetSources()
	s.Automated = spec.SyncPolicy != nil && spec.SyncPolicy.Automated != nil
	return s
}
