// Package argoapp owns everything Argo CD: how Argo CD marks the objects it
// manages (tracking method, tracking ids, instance labels), the Application
// model rendered from a plan, and reading sync and health. It never writes to
// the cluster objects that Applications manage.
package argoapp

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TrackingMethod is Argo CD's application.resourceTrackingMethod.
type TrackingMethod string

// The tracking methods Argo CD supports.
const (
	TrackingAnnotation         TrackingMethod = "annotation"
	TrackingLabel              TrackingMethod = "label"
	TrackingAnnotationAndLabel TrackingMethod = "annotation+label"
)

// Well-known keys.
const (
	AnnotationTrackingID     = "argocd.argoproj.io/tracking-id"
	AnnotationInstallationID = "argocd.argoproj.io/installation-id"
	DefaultInstanceLabelKey  = "app.kubernetes.io/instance"
	ConfigMapName            = "argocd-cm"
	keyTrackingMethod        = "application.resourceTrackingMethod"
	keyInstanceLabelKey      = "application.instanceLabelKey"
	keyInstallationID        = "installationID"
)

// Tracking is how the Argo CD installation marks the objects it manages.
type Tracking struct {
	Method           TrackingMethod `json:"method" yaml:"method"`
	InstanceLabelKey string         `json:"instanceLabelKey" yaml:"instanceLabelKey"`
	InstallationID   string         `json:"installationID,omitempty" yaml:"installationID,omitempty"`
	// Namespace is Argo CD's control-plane namespace.
	Namespace string `json:"namespace" yaml:"namespace"`
	// Installed is false when argocd-cm was not found.
	Installed bool `json:"installed" yaml:"installed"`
	// Reason says where Method came from, for the user.
	Reason string `json:"reason" yaml:"reason"`
}

// ReadTracking reads the tracking configuration from argocd-cm in namespace
// ns. A missing argocd-cm is not an error: Argo CD 3's default, annotation
// tracking, is assumed and Installed is false.
func ReadTracking(ctx context.Context, c kubernetes.Interface, ns string) (Tracking, error) {
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t := TrackingFromConfig(nil, ns)
		t.Reason = fmt.Sprintf("%s not found in namespace %q (Argo CD not installed there?); assuming %q, Argo CD 3's default", ConfigMapName, ns, t.Method)
		return t, nil
	case err != nil:
		return Tracking{}, fmt.Errorf("read ConfigMap %s/%s: %w", ns, ConfigMapName, err)
	}
	t := TrackingFromConfig(cm, ns)
	t.Installed = true
	return t, nil
}

// TrackingFromConfig derives the tracking configuration from argocd-cm's
// contents (cm may be nil).
func TrackingFromConfig(cm *corev1.ConfigMap, ns string) Tracking {
	t := Tracking{Method: TrackingAnnotation, InstanceLabelKey: DefaultInstanceLabelKey, Namespace: ns}
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	if v := strings.TrimSpace(data[keyInstanceLabelKey]); v != "" {
		t.InstanceLabelKey = v
	}
	t.InstallationID = strings.TrimSpace(data[keyInstallationID])
	switch m := TrackingMethod(strings.TrimSpace(data[keyTrackingMethod])); m {
	case TrackingAnnotation, TrackingLabel, TrackingAnnotationAndLabel:
		t.Method = m
		t.Reason = fmt.Sprintf("%s in %s/%s", keyTrackingMethod, ns, ConfigMapName)
	case "":
		t.Reason = fmt.Sprintf("%s not set in %s/%s; assuming %q, Argo CD 3's default", keyTrackingMethod, ns, ConfigMapName, t.Method)
	default:
		t.Reason = fmt.Sprintf("unknown %s %q in %s/%s; assuming %q as Argo CD does", keyTrackingMethod, m, ns, ConfigMapName, t.Method)
	}
	return t
}

// TrackedBy reports which Application marks an object as its own, judged by
// the object's labels and annotations alone. The empty string means the
// object carries no tracking under this method.
func (t Tracking) TrackedBy(labels, annotations map[string]string) string {
	switch t.Method {
	case TrackingLabel:
		return labels[t.InstanceLabelKey]
	default:
		id, err := ParseTrackingID(annotations[AnnotationTrackingID])
		if err != nil {
			return ""
		}
		return id.AppQualifiedName()
	}
}

// TrackingID is the value of argocd.argoproj.io/tracking-id:
// <app>:<group>/<kind>:<namespace>/<name>, where <app> is
// <app-namespace>_<app-name> for Applications outside the control-plane
// namespace and the group is empty for core kinds.
type TrackingID struct {
	AppNamespace string `json:"appNamespace,omitempty" yaml:"appNamespace,omitempty"`
	AppName      string `json:"appName" yaml:"appName"`
	Group        string `json:"group" yaml:"group"`
	Kind         string `json:"kind" yaml:"kind"`
	Namespace    string `json:"namespace" yaml:"namespace"`
	Name         string `json:"name" yaml:"name"`
}

// AppQualifiedName is <app-namespace>_<app-name>, or the bare name.
func (id TrackingID) AppQualifiedName() string {
	if id.AppNamespace == "" {
		return id.AppName
	}
	return id.AppNamespace + "_" + id.AppName
}

// String renders the id the way Argo CD writes it.
func (id TrackingID) String() string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", id.AppQualifiedName(), id.Group, id.Kind, id.Namespace, id.Name)
}

// ParseTrackingID parses a tracking-id annotation value.
func ParseTrackingID(s string) (TrackingID, error) {
	if s == "" {
		return TrackingID{}, fmt.Errorf("empty tracking id")
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return TrackingID{}, fmt.Errorf("tracking id %q: want <app>:<group>/<kind>:<namespace>/<name>", s)
	}
	app, gk, nn := parts[0], parts[1], parts[2]
	group, kind, ok := strings.Cut(gk, "/")
	if !ok || kind == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: %q is not <group>/<kind>", s, gk)
	}
	ns, name, ok := strings.Cut(nn, "/")
	if !ok || name == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: %q is not <namespace>/<name>", s, nn)
	}
	if app == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: empty application name", s)
	}
	id := TrackingID{AppName: app, Group: group, Kind: kind, Namespace: ns, Name: name}
	if appNS, appName, ok := strings.Cut(app, "_"); ok && appNS != "" && appName != "" {
		id.AppNamespace, id.AppName = appNS, appName
	}
	return id, nil
}
