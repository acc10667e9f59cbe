// Package objref owns adopt's one name for a Kubernetes object: its group,
// version, kind, resource, namespace and name (Ref), and the one way to
// write it, group/kind namespace/name. The plan's objects, finalize's
// targets, tracking ids, previews and status all name objects through it.
package objref

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/redact"
)

// Ref names one object. Namespace is empty for cluster-scoped objects;
// Version and Resource may be empty where only the name matters (a
// tracking id carries neither).
type Ref struct {
	Group     string `json:"group" yaml:"group"`
	Version   string `json:"version" yaml:"version"`
	Kind      string `json:"kind" yaml:"kind"`
	Resource  string `json:"resource" yaml:"resource"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name      string `json:"name" yaml:"name"`
}

// String is group/kind namespace/name (kind name for cluster-scoped
// objects, no group/ for core kinds), the way plans, reports and errors
// name an object.
func (r Ref) String() string {
	return string(r.Append(make([]byte, 0, len(r.Group)+len(r.Kind)+len(r.Namespace)+len(r.Name)+3)))
}

// Append appends String's text to b.
func (r Ref) Append(b []byte) []byte {
	if r.Group != "" {
		b = append(append(b, r.Group...), '/')
	}
	b = append(append(b, r.Kind...), ' ')
	if r.Namespace != "" {
		b = append(append(b, r.Namespace...), '/')
	}
	return append(b, r.Name...)
}

// GVR is the object's resource.
func (r Ref) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// IsSecret reports whether the object is a core Secret (redact.IsSecret).
func (r Ref) IsSecret() bool { return redact.IsSecret(r.Group, r.Kind) }
