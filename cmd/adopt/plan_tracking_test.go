package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/plan"
)

var plAppGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// plEnsureAppCRD installs Argo CD's real Application CRD, the same way the
// other tests of this package do (installApplicationCRD), so they agree on
// its field managers.
func plEnsureAppCRD(t *testing.T) {
	t.Helper()
	installApplicationCRD(t)
}

func plCreateApp(t *testing.T, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"project": "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"source":      map[string]any{"repoURL": "https://git.example.invalid/gitops.git", "path": "."}},
	}}
	if _, err := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(plAppGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func plKubectl(t *testing.T, manifest string, args ...string) {
	t.Helper()
	if out, err := cp.Kubectl(context.Background(), []byte(manifest), args...); err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
}

func plCM(ns, name string, labels, annotations map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	for _, m := range []struct {
		key string
		kv  map[string]string
	}{{"labels", labels}, {"annotations", annotations}} {
		if len(m.kv) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", m.key)
		for k, v := range m.kv {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("data:\n  k: v\n")
	return b.String()
}

func plNames(p *plan.Plan, ns string) map[string]*plan.Object {
	out := map[string]*plan.Object{}
	for i := range p.Objects {
		if p.Objects[i].Namespace == ns {
			out[p.Objects[i].Name] = &p.Objects[i]
		}
	}
	return out
}

// TestPlanTrackingMethods runs every tracking method of argocd-cm (with a
// custom instance label key, apps in any namespace enabled or not by
// argocd-cmd-params-cm's application.namespaces, and an installation id)
// against real Application CRs, and checks which objects count as tracked
// and which tracking marks are stale.
func TestPlanTrackingMethods(t *testing.T) {
	plEnsureAppCRD(t)
	argo := cp.Namespace(t) // the Argo CD control-plane namespace
	team := cp.Namespace(t) // a second namespace holding an Application
	plCreateApp(t, argo, "web")
	plCreateApp(t, team, "api")
	id := func(app, ns, name string) map[string]string {
		return map[string]string{"argocd.argoproj.io/tracking-id": fmt.Sprintf("%s:/ConfigMap:%s/%s", app, ns, name)}
	}
	cases := []struct {
		name    string
		cm      map[string]string
		tracked []string          // counted as tracked: absent from the plan
		stale   map[string]string // in the plan with stale tracking containing
		plain   []string          // in the plan, no stale tracking
		// appNamespaces is application.namespaces of argocd-cmd-params-cm
		// (the team's namespace when "").
		appNamespaces string
	}{
		{
			name:    "annotation",
			cm:      map[string]string{"application.resourceTrackingMethod": "annotation"},
			tracked: []string{"by-id", "any-ns"},
			stale: map[string]string{"to-missing-app": "does not exist", "copied-id": "not this object",
				"blue-install": "installation", "green-install": "installation"},
			plain: []string{"by-label", "untracked"},
		},
		{
			name:          "annotation, apps in the team's namespace not enabled",
			cm:            map[string]string{"application.resourceTrackingMethod": "annotation"},
			appNamespaces: "other-*",
			tracked:       []string{"by-id"},
			stale: map[string]string{"to-missing-app": "does not exist", "copied-id": "not this object",
				"blue-install": "installation", "green-install": "installation", "any-ns": "is not run by Argo CD"},
			plain: []string{"by-label", "untracked"},
		},
		{
			name:    "label with custom key",
			cm:      map[string]string{"application.resourceTrackingMethod": "label", "application.instanceLabelKey": "example.com/app"},
			tracked: []string{"by-label"},
			stale:   map[string]string{"label-to-missing-app": "does not exist"},
			plain:   []string{"by-id", "any-ns", "untracked", "copied-id"},
		},
		{
			name:    "annotation+label",
			cm:      map[string]string{"application.resourceTrackingMethod": "annotation+label"},
			tracked: []string{"by-id", "any-ns"},
			stale: map[string]string{"to-missing-app": "does not exist", "copied-id": "not this object",
				"blue-install": "installation", "green-install": "installation"},
			plain: []string{"by-label", "untracked"},
		},
		{
			name:    "installation id",
			cm:      map[string]string{"application.resourceTrackingMethod": "annotation", "installationID": "blue"},
			tracked: []string{"blue-install"},
			stale: map[string]string{"by-id": "installation", "green-install": "installation", "any-ns": "installation",
				"to-missing-app": "installation", "copied-id": "installation"},
			plain: []string{"untracked"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			cmData := ""
			for k, v := range tc.cm {
				cmData += fmt.Sprintf("  %s: %q\n", k, v)
			}
			plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: %s\ndata:\n%s", argo, cmData), "apply", "-f", "-")
			defer cp.Kubectl(context.Background(), nil, "-n", argo, "delete", "cm", "argocd-cm")
			appNamespaces := tc.appNamespaces
			if appNamespaces == "" {
				appNamespaces = team
			}
			plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cmd-params-cm\n  namespace: %s\ndata:\n  application.namespaces: %q\n", argo, appNamespaces), "apply", "-f", "-")
			defer cp.Kubectl(context.Background(), nil, "-n", argo, "delete", "cm", "argocd-cmd-params-cm")
			objs := []string{
				plCM(ns, "by-id", nil, id("web", ns, "by-id")),
				plCM(ns, "any-ns", nil, id(team+"_api", ns, "any-ns")),
				plCM(ns, "to-missing-app", nil, id("gone", ns, "to-missing-app")),
				plCM(ns, "copied-id", nil, id("web", ns, "by-id")),
				plCM(ns, "by-label", map[string]string{"example.com/app": "web", "app.kubernetes.io/instance": "web"}, nil),
				plCM(ns, "label-to-missing-app", map[string]string{"example.com/app": "gone"}, nil),
				plCM(ns, "untracked", nil, nil),
				plCM(ns, "blue-install", nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:" + ns + "/blue-install", "argocd.argoproj.io/installation-id": "blue"}),
				plCM(ns, "green-install", nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:" + ns + "/green-install", "argocd.argoproj.io/installation-id": "green"}),
			}
			plKubectl(t, strings.Join(objs, "---\n"), "create", "-f", "-")
			p := planJSON(t, "-n", ns, "--argocd-namespace", argo)
			if string(p.Tracking.Method) != tc.cm["application.resourceTrackingMethod"] || !p.Tracking.Installed {
				t.Fatalf("tracking %+v", p.Tracking)
			}
			if !p.ArgoCD.Installed || !p.ArgoCD.ApplicationsChecked {
				t.Fatalf("argocd %+v", p.ArgoCD)
			}
			got := plNames(p, ns)
			for _, n := range tc.tracked {
				if got[n] != nil {
					t.Errorf("%s counted as untracked: %+v", n, got[n].StaleTracking)
				}
			}
			for n, want := range tc.stale {
				if got[n] == nil || !strings.Contains(got[n].StaleTracking, want) {
					t.Errorf("%s: want stale tracking %q, got %+v", n, want, got[n])
				}
			}
			for _, n := range tc.plain {
				if got[n] == nil || got[n].StaleTracking != "" {
					t.Errorf("%s: want untracked without stale mark, got %+v", n, got[n])
				}
			}
			if p.Summary.StaleTracking != len(tc.stale) {
				t.Errorf("summary stale tracking = %d, want %d", p.Summary.StaleTracking, len(tc.stale))
			}
		})
	}
}

// TestPlanTrackingDefaultFollowsArgoCDVersion checks the default method when
// argocd-cm does not say: label for v2 (from the controller's image tag or
// --argocd-version), annotation for v3.
func TestPlanTrackingDefaultFollowsArgoCDVersion(t *testing.T) {
	argo := cp.Namespace(t)
	ns := cp.Namespace(t)
	plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: %s}\n", argo), "apply", "-f", "-")
	plKubectl(t, fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: argocd-application-controller, namespace: %s}
spec:
  serviceName: c
  selector: {matchLabels: {app: c}}
  template:
    metadata: {labels: {app: c}}
    spec:
      containers: [{name: c, image: "quay.example.invalid/argoproj/argocd:v2.14.21"}]
`, argo), "apply", "-f", "-")
	p := planJSON(t, "-n", ns, "--argocd-namespace", argo)
	if p.Tracking.Method != "label" || p.Tracking.Version != "v2.14.21" || !strings.Contains(p.Tracking.VersionSource, "image tag") {
		t.Fatalf("v2 from the image: %+v", p.Tracking)
	}
	p = planJSON(t, "-n", ns, "--argocd-namespace", argo, "--argocd-version", "v3.2.6")
	if p.Tracking.Method != "annotation" || p.Tracking.VersionSource != "--argocd-version" {
		t.Fatalf("v3 from the flag: %+v", p.Tracking)
	}
}
