package argoapp

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in   string
		want Version
		bad  bool
	}{
		{in: "v2.14.21", want: Version{2, 14, 21}},
		{in: "2.14.21", want: Version{2, 14, 21}},
		{in: "v2.14.21+unknown", want: Version{2, 14, 21}},
		{in: "v3.2.6+1a2b3c4", want: Version{3, 2, 6}},
		{in: "v3.3.0-rc1", want: Version{3, 3, 0}},
		{in: "v3.2.6@sha256:0123", want: Version{3, 2, 6}},
		{in: " v3.1.0 ", want: Version{3, 1, 0}},
		{in: "latest", bad: true},
		{in: "v3.2", bad: true},
		{in: "", bad: true},
		{in: "v3.x.1", bad: true},
	}
	for _, c := range cases {
		got, err := ParseVersion(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestCSAMigrationTrap(t *testing.T) {
	cases := map[string]bool{
		"v2.14.21": false,
		"v3.0.19":  false,
		"v3.0.99":  false,
		"v3.1.0":   true,
		"v3.1.9":   true,
		"v3.2.6":   true,
		"v3.3.0":   true,
		"v3.3.1":   true,
		"v3.3.2":   false,
		"v3.4.0":   false,
		"v4.0.0":   false,
	}
	for in, want := range cases {
		v, err := ParseVersion(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := CSAMigrationTrap(v); got != want {
			t.Errorf("CSAMigrationTrap(%s) = %v, want %v", in, got, want)
		}
	}
	if CSAMigrationTrap(Version{}) {
		t.Error("an unknown version is not known to be in the trap")
	}
}

func TestDefaultTrackingMethod(t *testing.T) {
	cases := []struct {
		v    Version
		want TrackingMethod
	}{
		{Version{1, 8, 7}, TrackingLabel},
		{Version{2, 14, 21}, TrackingLabel},
		{Version{3, 0, 0}, TrackingAnnotation},
		{Version{3, 2, 6}, TrackingAnnotation},
		{Version{}, TrackingAnnotation},
	}
	for _, c := range cases {
		if got := DefaultTrackingMethod(c.v); got != c.want {
			t.Errorf("DefaultTrackingMethod(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

func TestImageTag(t *testing.T) {
	cases := map[string]string{
		"quay.io/argoproj/argocd:v2.14.21":             "v2.14.21",
		"quay.io/argoproj/argocd:v3.2.6@sha256:abcdef": "v3.2.6",
		"registry:5000/argoproj/argocd":                "",
		"registry:5000/argoproj/argocd:v3.1.0":         "v3.1.0",
		"argocd@sha256:abcdef":                         "",
		"quay.io/argoproj/argocd":                      "",
	}
	for in, want := range cases {
		if got := ImageTag(in); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVersionFromFlag(t *testing.T) {
	d, err := VersionFromFlag("v3.2.6")
	if err != nil || d.Version != (Version{3, 2, 6}) || d.Source != "--argocd-version" {
		t.Fatalf("VersionFromFlag = %+v, %v", d, err)
	}
	if _, err := VersionFromFlag("three"); err == nil || !strings.Contains(err.Error(), "--argocd-version") {
		t.Fatalf("a bad --argocd-version: %v", err)
	}
}

// The controller workload is created in the real API server, the way each
// install shape has it: a StatefulSet (default manifests), a Deployment
// (dynamic sharding), a Helm-named Deployment found by its label, and none.
func TestVersionFromCluster(t *testing.T) {
	ctx := context.Background()
	kube := cp.Clientset()
	labels := map[string]string{"app.kubernetes.io/name": ControllerName}
	tmpl := func(image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "application-controller", Image: image}}},
		}
	}
	sel := &metav1.LabelSelector{MatchLabels: labels}

	t.Run("StatefulSet", func(t *testing.T) {
		ns := cp.Namespace(t)
		_, err := kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: ControllerName},
			Spec:       appsv1.StatefulSetSpec{Selector: sel, Template: tmpl("quay.io/argoproj/argocd:v2.14.21")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := VersionFromCluster(ctx, kube, ns)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != (Version{2, 14, 21}) || d.Source != "image tag of StatefulSet "+ns+"/"+ControllerName {
			t.Fatalf("got %+v", d)
		}
		if DefaultTrackingMethod(d.Version) != TrackingLabel || CSAMigrationTrap(d.Version) {
			t.Fatalf("v2.14.21: tracking %s, trap %v", DefaultTrackingMethod(d.Version), CSAMigrationTrap(d.Version))
		}
	})

	t.Run("Deployment", func(t *testing.T) {
		ns := cp.Namespace(t)
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: ControllerName},
			Spec:       appsv1.DeploymentSpec{Selector: sel, Template: tmpl("quay.io/argoproj/argocd:v3.2.6@sha256:0a1b2c")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := VersionFromCluster(ctx, kube, ns)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != (Version{3, 2, 6}) || d.Source != "image tag of Deployment "+ns+"/"+ControllerName {
			t.Fatalf("got %+v", d)
		}
		if !CSAMigrationTrap(d.Version) || DefaultTrackingMethod(d.Version) != TrackingAnnotation {
			t.Fatalf("v3.2.6: trap %v, tracking %s", CSAMigrationTrap(d.Version), DefaultTrackingMethod(d.Version))
		}
	})

	t.Run("Helm name, by label", func(t *testing.T) {
		ns := cp.Namespace(t)
		_, err := kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "argo-cd-argocd-application-controller", Labels: labels},
			Spec:       appsv1.StatefulSetSpec{Selector: sel, Template: tmpl("registry:5000/argoproj/argocd:v3.3.2")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := VersionFromCluster(ctx, kube, ns)
		if err != nil || d.Version != (Version{3, 3, 2}) || !strings.Contains(d.Source, "argo-cd-argocd-application-controller") {
			t.Fatalf("got %+v, %v", d, err)
		}
	})

	t.Run("no tag", func(t *testing.T) {
		ns := cp.Namespace(t)
		_, err := kube.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: ControllerName},
			Spec:       appsv1.StatefulSetSpec{Selector: sel, Template: tmpl("registry:5000/argoproj/argocd:latest")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := VersionFromCluster(ctx, kube, ns)
		if err != nil || d.Version.Known() || !strings.Contains(d.Source, "no version tag") || !strings.Contains(d.Source, "--argocd-version") {
			t.Fatalf("got %+v, %v", d, err)
		}
	})

	t.Run("none", func(t *testing.T) {
		ns := cp.Namespace(t)
		d, err := VersionFromCluster(ctx, kube, ns)
		if err != nil || d.Version.Known() || !strings.Contains(d.Source, "no StatefulSet or Deployment") {
			t.Fatalf("got %+v, %v", d, err)
		}
	})
}
