package argoapp

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/adopt-dev/adopt/adopt/objref"
)

func TestParseTrackingID(t *testing.T) {
	cases := []struct {
		in   string
		want TrackingID
		err  bool
	}{
		{in: "app:/ConfigMap:ns/cm", want: TrackingID{AppName: "app", Ref: objref.Ref{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}}},
		{in: "team_app:apps/Deployment:ns/web", want: TrackingID{AppNamespace: "team", AppName: "app", Ref: objref.Ref{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}}},
		{in: "app:rbac.authorization.k8s.io/ClusterRole:dest/system:foo", want: TrackingID{AppName: "app", Ref: objref.Ref{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Namespace: "dest", Name: "system:foo"}}},
		{in: "", err: true},
		{in: "app", err: true},
		{in: "app:ConfigMap:ns/cm", err: true},
		{in: "app:/ConfigMap:cm", err: true},
		{in: ":/ConfigMap:ns/cm", err: true},
		{in: "app:a/b/c:ns/cm", err: true},
		{in: "app:/ConfigMap:ns/a/b", err: true},
	}
	for _, c := range cases {
		got, err := ParseTrackingID(c.in)
		if (err != nil) != c.err {
			t.Fatalf("%q: err %v, want error %v", c.in, err, c.err)
		}
		if err == nil && got != c.want {
			t.Fatalf("%q: got %+v, want %+v", c.in, got, c.want)
		}
		if err == nil && got.String() != c.in {
			t.Fatalf("%q does not round-trip: %q", c.in, got.String())
		}
	}
}

func TestTrackingDefaultsFollowVersion(t *testing.T) {
	if m := TrackingFromConfig(nil, "argocd", "v2.14.21").Method; m != TrackingLabel {
		t.Fatalf("v2 default = %s, want label", m)
	}
	if m := TrackingFromConfig(nil, "argocd", "v3.2.6").Method; m != TrackingAnnotation {
		t.Fatalf("v3 default = %s, want annotation", m)
	}
	cm := &corev1.ConfigMap{Data: map[string]string{
		keyTrackingMethod: "annotation+label", keyInstanceLabelKey: "example.com/app", keyInstallationID: "blue",
	}}
	tr := TrackingFromConfig(cm, "argocd", "v2.14.21")
	if tr.Method != TrackingAnnotationAndLabel || tr.InstanceLabelKey != "example.com/app" || tr.InstallationID != "blue" {
		t.Fatalf("from argocd-cm: %+v", tr)
	}
}

func TestCheck(t *testing.T) {
	apps := NewApplications([]string{"argocd/web", "team/api"})
	ann := Tracking{Method: TrackingAnnotation, InstanceLabelKey: DefaultInstanceLabelKey, Namespace: "argocd"}
	lbl := Tracking{Method: TrackingLabel, InstanceLabelKey: "example.com/app", Namespace: "argocd"}
	cm := objref.Ref{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	id := func(s string) map[string]string { return map[string]string{AnnotationTrackingID: s} }
	cases := []struct {
		name        string
		tr          Tracking
		labels, ann map[string]string
		app, stale  string
	}{
		{"annotation tracked", ann, nil, id("web:/ConfigMap:ns/cm"), "web", ""},
		{"apps in any namespace", ann, nil, id("team_api:/ConfigMap:ns/cm"), "team_api", ""},
		{"missing application", ann, nil, id("gone:/ConfigMap:ns/cm"), "", "does not exist"},
		{"copied to another object", ann, nil, id("web:/ConfigMap:ns/other"), "", "not this object"},
		{"label ignored under annotation", ann, map[string]string{DefaultInstanceLabelKey: "web"}, nil, "", ""},
		{"custom instance label", lbl, map[string]string{"example.com/app": "web"}, nil, "web", ""},
		{"label to missing app", lbl, map[string]string{"example.com/app": "gone"}, nil, "", "does not exist"},
		{"annotation ignored under label", lbl, nil, id("web:/ConfigMap:ns/cm"), "", ""},
		{"other installation", ann, nil, map[string]string{AnnotationTrackingID: "web:/ConfigMap:ns/cm", AnnotationInstallationID: "green"}, "", "installation"},
	}
	for _, c := range cases {
		got := c.tr.Check(cm, c.labels, c.ann, apps)
		if got.App != c.app || (c.stale == "") != (got.Stale == "") || !strings.Contains(got.Stale, c.stale) {
			t.Errorf("%s: got %+v, want app %q stale %q", c.name, got, c.app, c.stale)
		}
	}
	blue := ann
	blue.InstallationID = "blue"
	got := blue.Check(cm, nil, map[string]string{AnnotationTrackingID: "web:/ConfigMap:ns/cm", AnnotationInstallationID: "blue"}, apps)
	if got.App != "web" {
		t.Fatalf("matching installation id: %+v", got)
	}
	// Argo CD not installed: a well-formed id is taken at its word, a
	// copied one is still stale.
	if got = ann.Check(cm, nil, id("gone:/ConfigMap:ns/cm"), Applications{Note: "not installed"}); got.App != "gone" {
		t.Fatalf("not installed: %+v", got)
	}
	if got = ann.Check(cm, nil, id("gone:/ConfigMap:ns/other"), Applications{Note: "not installed"}); got.App != "" || got.Stale == "" {
		t.Fatalf("not installed, copied id: %+v", got)
	}
}

// FuzzParseTrackingID checks the parser never panics and that whatever it
// accepts renders back to the same string.
func FuzzParseTrackingID(f *testing.F) {
	for _, s := range []string{"app:/ConfigMap:ns/cm", "a_b:apps/Deployment:ns/n", "x:g/K:ns/system:y", ":::", "a:/:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseTrackingID(s)
		if err != nil {
			return
		}
		if id.AppName == "" || id.Kind == "" || id.Name == "" {
			t.Fatalf("%q accepted with empty parts: %+v", s, id)
		}
		if id.String() != s {
			t.Fatalf("%q renders as %q", s, id.String())
		}
	})
}

// TestRunsFollowsApplicationNamespaces: Argo CD runs the Applications of
// its own namespace and of those application.namespaces matches (a glob,
// or a regular expression between slashes); unread, every namespace counts.
func TestRunsFollowsApplicationNamespaces(t *testing.T) {
	tr := Tracking{Namespace: "argocd", AppNamespaces: appNamespaces(" team-*, /^prod-[a-z]+$/ ,,"), AppNamespacesRead: true}
	for ns, want := range map[string]bool{"argocd": true, "team-a": true, "prod-eu": true, "prod-1": false, "other": false, "argocd-x": false} {
		if got := tr.Runs(ns); got != want {
			t.Errorf("Runs(%q) = %v, want %v", ns, got, want)
		}
	}
	if !(Tracking{Namespace: "argocd"}).Runs("other") {
		t.Error("unread application.namespaces: every namespace should count as run")
	}
	apps := NewApplications([]string{"other/web"})
	got := tr.Check(objref.Ref{Kind: "ConfigMap", Namespace: "web", Name: "cfg"}, nil,
		map[string]string{AnnotationTrackingID: "other_web:/ConfigMap:web/cfg"}, apps)
	if got.App != "" || !strings.Contains(got.Stale, "Application other/web is not run by Argo CD") || !strings.Contains(got.Stale, `("team-*,/^prod-[a-z]+$/")`) {
		t.Errorf("Check: %+v; want a stale mark naming other/web and the setting", got)
	}
}
