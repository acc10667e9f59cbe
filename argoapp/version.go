package argoapp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Version is an Argo CD release. The zero Version means unknown.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion reads "v2.14.21", "2.14.21", "v2.14.21+3a5b1c2" (what
// argocd-server reports) or an image tag such as "v3.2.6" or
// "v3.2.6@sha256:…". Pre-release suffixes ("-rc1") are ignored.
func ParseVersion(s string) (Version, error) {
	raw := s
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "+@-"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("Argo CD version %q is not of the form v2.14.21", raw)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("Argo CD version %q is not of the form v2.14.21", raw)
		}
		n[i] = v
	}
	return Version{Major: n[0], Minor: n[1], Patch: n[2]}, nil
}

// Known reports whether v was detected or given.
func (v Version) Known() bool { return v != Version{} }

func (v Version) String() string {
	if !v.Known() {
		return "unknown"
	}
	return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Compare returns -1, 0 or +1 as v is older than, equal to or newer than o.
func (v Version) Compare(o Version) int {
	for _, d := range [3]int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

// CSAMigrationTrap reports whether Argo CD v migrates client-side-apply
// field ownership (ClientSideApplyMigration, on by default) with a
// client-side apply as the old manager. That apply writes
// last-applied-configuration again, so an object near the 262144-byte
// annotation cap fails its first server-side sync. It holds for 3.1.0 to
// 3.3.1; from 3.3.2 the migration is a managedFields patch, and v2 lets
// kubectl migrate without writing the annotation.
func CSAMigrationTrap(v Version) bool {
	return v.Compare(Version{3, 1, 0}) >= 0 && v.Compare(Version{3, 3, 1}) <= 0
}

// DefaultTrackingMethod is the tracking method Argo CD v uses when argocd-cm
// does not set application.resourceTrackingMethod: label up to v2,
// annotation from v3. An unknown version gets annotation, the default of
// current releases.
func DefaultTrackingMethod(v Version) TrackingMethod {
	if v.Known() && v.Major < 3 {
		return TrackingLabel
	}
	return TrackingAnnotation
}

// DetectedVersion is an Argo CD version and where it was learnt.
type DetectedVersion struct {
	Version Version `json:"version" yaml:"version"`
	// Raw is the string as found, for example "v2.14.21+unknown".
	Raw string `json:"raw,omitempty" yaml:"raw,omitempty"`
	// Source says where, for the user: "--argocd-version", "argocd-server
	// at 127.0.0.1:8080 (version API)", "image tag of StatefulSet
	// argocd/argocd-application-controller". When the version is unknown it
	// says what was tried.
	Source string `json:"source" yaml:"source"`
}

func (d DetectedVersion) String() string {
	if !d.Version.Known() {
		return "Argo CD version unknown (" + d.Source + ")"
	}
	return fmt.Sprintf("Argo CD %s (from %s)", d.Version, d.Source)
}

// VersionFromFlag parses a version given by the user with --argocd-version.
func VersionFromFlag(s string) (DetectedVersion, error) {
	v, err := ParseVersion(s)
	if err != nil {
		return DetectedVersion{}, fmt.Errorf("--argocd-version: %v", err)
	}
	return DetectedVersion{Version: v, Raw: s, Source: "--argocd-version"}, nil
}

// ControllerName is the application controller's workload name in a
// standard install; Helm installs prefix it, and are found by the label
// app.kubernetes.io/name with this value.
const ControllerName = "argocd-application-controller"

// VersionFromCluster reads the image tag of the application controller
// workload in namespace ns: the StatefulSet (the default install) or the
// Deployment (dynamic sharding) named argocd-application-controller, or else
// one labelled app.kubernetes.io/name=argocd-application-controller. A
// missing or unreadable workload, or an image without a version tag, is not
// an error: the version is unknown and Source says why.
func VersionFromCluster(ctx context.Context, kube kubernetes.Interface, ns string) (DetectedVersion, error) {
	w, err := controllerWorkload(ctx, kube, ns)
	switch {
	case apierrors.IsForbidden(err):
		return DetectedVersion{Source: fmt.Sprintf("may not read the %s workload in namespace %s (403); pass --argocd-version", ControllerName, ns)}, nil
	case err != nil:
		return DetectedVersion{}, fmt.Errorf("read the %s workload in namespace %s: %w", ControllerName, ns, err)
	case w.kind == "":
		return DetectedVersion{Source: fmt.Sprintf("no StatefulSet or Deployment %s in namespace %s; pass --argocd-version", ControllerName, ns)}, nil
	}
	where := fmt.Sprintf("image tag of %s %s/%s", w.kind, ns, w.name)
	for _, image := range w.images {
		tag := ImageTag(image)
		if v, err := ParseVersion(tag); err == nil {
			return DetectedVersion{Version: v, Raw: tag, Source: where}, nil
		}
	}
	return DetectedVersion{Source: fmt.Sprintf("%s: no version tag in %s; pass --argocd-version", where, strings.Join(w.images, ", "))}, nil
}

type workload struct {
	kind, name string
	images     []string
}

func controllerWorkload(ctx context.Context, kube kubernetes.Interface, ns string) (workload, error) {
	apps := kube.AppsV1()
	images := func(t corev1.PodTemplateSpec) []string {
		var out []string
		for _, c := range t.Spec.Containers {
			out = append(out, c.Image)
		}
		return out
	}
	ss, err := apps.StatefulSets(ns).Get(ctx, ControllerName, metav1.GetOptions{})
	if err == nil {
		return workload{"StatefulSet", ss.Name, images(ss.Spec.Template)}, nil
	}
	if !apierrors.IsNotFound(err) {
		return workload{}, err
	}
	d, err := apps.Deployments(ns).Get(ctx, ControllerName, metav1.GetOptions{})
	if err == nil {
		return workload{"Deployment", d.Name, images(d.Spec.Template)}, nil
	}
	if !apierrors.IsNotFound(err) {
		return workload{}, err
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + ControllerName}
	sss, err := apps.StatefulSets(ns).List(ctx, sel)
	if err != nil {
		return workload{}, err
	}
	if len(sss.Items) > 0 {
		return workload{"StatefulSet", sss.Items[0].Name, images(sss.Items[0].Spec.Template)}, nil
	}
	ds, err := apps.Deployments(ns).List(ctx, sel)
	if err != nil {
		return workload{}, err
	}
	if len(ds.Items) > 0 {
		return workload{"Deployment", ds.Items[0].Name, images(ds.Items[0].Spec.Template)}, nil
	}
	return workload{}, nil
}

// ImageTag is the tag of an image reference, without a digest:
// "quay.io/argoproj/argocd:v3.2.6@sha256:…" gives "v3.2.6";
// "registry:5000/argocd" gives "".
func ImageTag(image string) string {
	if at := strings.Index(image, "@"); at >= 0 {
		image = image[:at]
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return ""
	}
	return image[i+1:]
}
