package planner_test

// What a plan says of the objects it finds (tracking, provenance, skip
// classes, grouping, what the credentials could not list), proven on the
// pipeline against the real kube-apiserver: moved down from cmd/adopt,
// where each variant went through the whole command (the command's own
// part, its flags and exit codes, stays there).

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

var (
	crdMu   sync.Mutex
	crdDone = map[string]error{}
)

// argoCRD installs one of Argo CD v2.14.21's real CRDs (file, under
// manifests/crds of its module in the module cache, as cmd/adopt's tests
// do) once, and waits until resource is served.
func argoCRD(t *testing.T, file, resource string) {
	t.Helper()
	crdMu.Lock()
	defer crdMu.Unlock()
	err, done := crdDone[file]
	if !done {
		err = installCRD(file, resource)
		crdDone[file] = err
	}
	if err != nil {
		t.Fatal(err)
	}
}

func installCRD(file, resource string) error {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v2@v2.14.21").Output()
	if err != nil {
		return fmt.Errorf("go mod download argo-cd: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return err
	}
	if out, err := cp.Kubectl(context.Background(), nil, "apply", "--server-side", "-f", filepath.Join(mod.Dir, "manifests/crds", file)); err != nil {
		return fmt.Errorf("install %s: %w: %s", file, err, out)
	}
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		l, err := cp.Clientset().Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
		return err == nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }), nil
	})
}

// applicationCRD installs the Application CRD.
func applicationCRD(t *testing.T) { argoCRD(t, "application-crd.yaml", "applications") }

// createApp creates Application name in ns.
func createApp(t *testing.T, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"project": "default",
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"source":      map[string]any{"repoURL": "https://git.example.invalid/gitops.git", "path": "."}},
	}}
	if _, err := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(argoapp.ApplicationGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestTrackingMethods (moved from cmd/adopt's TestPlanTrackingMethods):
// every tracking method of argocd-cm (with a custom instance label key,
// apps in any namespace enabled or not by argocd-cmd-params-cm's
// application.namespaces, and an installation id), against real
// Application CRs: which objects count as tracked, and which tracking
// marks are stale and why.
func TestTrackingMethods(t *testing.T) {
	applicationCRD(t)
	argo := cp.Namespace(t) // the Argo CD control-plane namespace
	team := cp.Namespace(t) // a second namespace holding an Application
	createApp(t, argo, "web")
	createApp(t, team, "api")
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
			kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: %s\ndata:\n%s", argo, cmData), "apply", "-f", "-")
			defer cp.Kubectl(context.Background(), nil, "-n", argo, "delete", "cm", "argocd-cm")
			appNamespaces := tc.appNamespaces
			if appNamespaces == "" {
				appNamespaces = team
			}
			kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cmd-params-cm\n  namespace: %s\ndata:\n  application.namespaces: %q\n", argo, appNamespaces), "apply", "-f", "-")
			defer cp.Kubectl(context.Background(), nil, "-n", argo, "delete", "cm", "argocd-cmd-params-cm")
			objs := []string{
				configMap(ns, "by-id", nil, id("web", ns, "by-id")),
				configMap(ns, "any-ns", nil, id(team+"_api", ns, "any-ns")),
				configMap(ns, "to-missing-app", nil, id("gone", ns, "to-missing-app")),
				configMap(ns, "copied-id", nil, id("web", ns, "by-id")),
				configMap(ns, "by-label", map[string]string{"example.com/app": "web", "app.kubernetes.io/instance": "web"}, nil),
				configMap(ns, "label-to-missing-app", map[string]string{"example.com/app": "gone"}, nil),
				configMap(ns, "untracked", nil, nil),
				configMap(ns, "blue-install", nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:" + ns + "/blue-install", "argocd.argoproj.io/installation-id": "blue"}),
				configMap(ns, "green-install", nil, map[string]string{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:" + ns + "/green-install", "argocd.argoproj.io/installation-id": "green"}),
			}
			kubectl(t, strings.Join(objs, "---\n"), "create", "-f", "-")
			o := options(t, ns)
			o.ArgoCDNamespace, o.ArgoCDVersion = argo, ""
			p := run(t, o)
			if string(p.Tracking.Method) != tc.cm["application.resourceTrackingMethod"] || !p.Tracking.Installed {
				t.Fatalf("tracking %+v", p.Tracking)
			}
			if !p.ArgoCD.Installed || !p.ArgoCD.ApplicationsChecked {
				t.Fatalf("argocd %+v", p.ArgoCD)
			}
			got := names(p, ns)
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

// TestTrackingDefaultFollowsArgoCDVersion (moved from cmd/adopt's
// TestPlanTrackingDefaultFollowsArgoCDVersion): when argocd-cm does not
// say, the method is label for v2 (here from the controller's image tag)
// and annotation for v3 (here from the version given).
func TestTrackingDefaultFollowsArgoCDVersion(t *testing.T) {
	argo, ns := cp.Namespace(t), cp.Namespace(t)
	kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: %s}\n", argo), "apply", "-f", "-")
	kubectl(t, fmt.Sprintf(`apiVersion: apps/v1
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
	o := options(t, ns)
	o.ArgoCDNamespace, o.ArgoCDVersion = argo, ""
	if p := run(t, o); p.Tracking.Method != "label" || p.Tracking.Version != "v2.14.21" || !strings.Contains(p.Tracking.VersionSource, "image tag") {
		t.Errorf("v2 from the image: %+v", p.Tracking)
	}
	o.ArgoCDVersion = "v3.2.6"
	if p := run(t, o); p.Tracking.Method != "annotation" || p.Tracking.VersionSource != "--argocd-version" {
		t.Errorf("v3 from the flag: %+v", p.Tracking)
	}
}

// TestProvenanceAndSkipClasses (moved from cmd/adopt's
// TestPlanProvenanceAndSkipClasses): one object per provenance class,
// made with the real kubectl and client-go, and one per skip class: each
// verdict, its confidence and where it lands in the plan; a Secret's
// value is never in the plan; adopt.yaml's exclusions apply.
func TestProvenanceAndSkipClasses(t *testing.T) {
	ctx := context.Background()
	applicationCRD(t)
	ns := cp.Namespace(t)
	kubectl(t, configMap(ns, "csa", nil, nil), "apply", "-f", "-")
	kubectl(t, configMap(ns, "ssa", nil, nil), "apply", "--server-side", "-f", "-")
	kubectl(t, configMap(ns, "imperative", nil, nil), "create", "-f", "-")
	kubectl(t, configMap(ns, "helm", map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "litellm-0.4.2"},
		map[string]string{"meta.helm.sh/release-name": "litellm", "meta.helm.sh/release-namespace": ns}), "create", "-f", "-")
	kubectl(t, configMap(ns, "flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}, nil), "create", "-f", "-")
	kubectl(t, configMap(ns, "excluded-tmp", nil, nil), "create", "-f", "-")
	cs := cp.Clientset()
	op := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns}, Data: map[string]string{"k": "v"}}
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, op, metav1.CreateOptions{FieldManager: "my-operator"})
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "operator", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, owned, metav1.CreateOptions{FieldManager: "my-operator"}); err != nil {
		t.Fatal(err)
	}
	// The API server's own default ServiceAccount needs its controller,
	// which this control plane does not run: created as it would be.
	kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: %s}\n", ns), "create", "-f", "-")
	kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: %s}\nstringData: {password: canary-secret-4411}\n", ns), "apply", "-f", "-")
	kubectl(t, fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: %s}\ninvolvedObject: {kind: ConfigMap, name: csa, namespace: %s}\nreason: R\nmessage: m\n", ns, ns), "create", "-f", "-")
	createApp(t, ns, "an-app")

	cfg, err := config.Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions:\n- kinds: [ConfigMap]\n  names: [\"*-tmp\"]\nproject: platform\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := options(t, ns)
	o.Config = cfg
	p := run(t, o)
	for _, enc := range []func(*plan.Plan) ([]byte, error){plan.Marshal, func(p *plan.Plan) ([]byte, error) { return json.Marshal(p) }} {
		b, err := enc(p)
		if err != nil || strings.Contains(string(b), "canary-secret-4411") {
			t.Fatalf("the plan (%v) holds the Secret's value", err)
		}
	}
	obj := names(p, ns)
	for name, want := range map[string]struct{ prov, conf string }{
		"csa":        {"hand-applied (client-side)", "high"},
		"ssa":        {"hand-applied (server-side)", "high"},
		"imperative": {"imperative", "high"},
		"helm":       {"helm", "high"},
		"operator":   {"controller", "medium"},
		"db":         {"hand-applied (client-side)", "high"},
	} {
		o := obj[name]
		if o == nil || o.Provenance != want.prov || string(o.Confidence) != want.conf {
			t.Errorf("%s: want %s (%s), got %+v", name, want.prov, want.conf, o)
		}
	}
	if db := obj["db"]; db == nil || !hasFinding(db, plan.CodeSecret) || db.Risk != plan.Warning {
		t.Errorf("secret: %+v", db)
	}
	for _, a := range p.Applications {
		if a.Source == "helm" {
			t.Errorf("a Helm Application %s without a release record", a.Name)
		}
		if a.Project != "platform" {
			t.Errorf("Application %s in project %q, want adopt.yaml's platform", a.Name, a.Project)
		}
	}
	// The object says Helm, but no release record exists: it is not
	// adopted (no Application), blocked with a critical finding that says
	// so, never exported raw.
	h := obj["helm"]
	if h == nil || h.App != "" || !hasFinding(h, plan.CodeHelm) || !hasFinding(h, plan.CodeHelmBlocked) || h.Risk != plan.Critical {
		t.Fatalf("helm: %+v", h)
	}
	for _, f := range h.Findings {
		if f.Code == plan.CodeHelmBlocked && !strings.Contains(f.Message, "no deployed revision of Helm release "+ns+"/litellm") {
			t.Errorf("helm: blocked for another reason: %s", f.Message)
		}
	}
	class := map[string]string{}
	for _, s := range p.Skipped {
		if s.Namespace == ns {
			class[s.Kind+"/"+s.Name] = s.Class
		} else if s.Name == "" {
			class[s.Kind] = s.Class
		}
	}
	for what, want := range map[string]string{
		"ConfigMap/flux": "flux", "ConfigMap/owned": "owned", "ConfigMap/excluded-tmp": "excluded",
		"ServiceAccount/default": "api-server-default", "Application/an-app": "argocd", "Event": "type",
	} {
		if class[what] != want {
			t.Errorf("%s: skip class %q, want %q (all: %v)", what, class[what], want, class)
		}
	}
	// The system class: objects in kube-system.
	sys := "sys-" + ns[len(ns)-6:]
	kubectl(t, configMap("kube-system", sys, nil, nil), "apply", "-f", "-")
	ps := run(t, options(t, "kube-system"))
	found := false
	for _, s := range ps.Skipped {
		found = found || s.Name == sys && s.Class == "system"
	}
	if !found || len(ps.Objects) != 0 {
		t.Errorf("kube-system: %d objects, system skip found %v", len(ps.Objects), found)
	}
}

// TestGroupsByLabels (moved from cmd/adopt's TestPlanGroupsByLabels):
// objects are grouped by namespace and app.kubernetes.io labels (auto),
// all in one by namespace, and adopt.yaml's naming, export directory and
// destination name the Applications.
func TestGroupsByLabels(t *testing.T) {
	ns := cp.Namespace(t)
	kubectl(t, configMap(ns, "a1", map[string]string{"app.kubernetes.io/part-of": "shop"}, nil), "apply", "-f", "-")
	kubectl(t, configMap(ns, "a2", map[string]string{"app.kubernetes.io/instance": "shop"}, nil), "apply", "-f", "-")
	kubectl(t, configMap(ns, "b1", map[string]string{"app.kubernetes.io/name": "billing"}, nil), "apply", "-f", "-")
	kubectl(t, configMap(ns, "loose", nil, nil), "apply", "-f", "-")
	p := run(t, options(t, ns))
	apps := map[string][]string{}
	for _, a := range p.Applications {
		apps[a.Name+" "+a.SourcePath] = a.Objects
	}
	for k, n := range map[string]int{
		"adopt-" + ns + "-shop adopted/" + ns + "/shop":       2,
		"adopt-" + ns + "-billing adopted/" + ns + "/billing": 1,
		"adopt-" + ns + " adopted/" + ns:                      1,
	} {
		if len(apps[k]) != n {
			t.Errorf("%s: %v (all %v)", k, apps[k], apps)
		}
	}
	o := options(t, ns)
	o.GroupBy = plan.GroupNamespace
	if p := run(t, o); len(p.Applications) != 1 || len(p.Applications[0].Objects) != 4 {
		t.Errorf("grouped by namespace: %+v", p.Applications)
	}
	cfg, err := config.Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\ndestination: {name: prod}\nnaming: \"{key}-{namespace}\"\nexportDir: live\ngroupBy: label\n"))
	if err != nil {
		t.Fatal(err)
	}
	o = options(t, ns)
	o.Config, o.GroupBy = cfg, plan.GroupBy(cfg.GroupBy) // as plan's --group-by defaults to adopt.yaml's
	p = run(t, o)
	var shop *plan.Application
	for i := range p.Applications {
		if p.Applications[i].Name == "shop-"+ns {
			shop = &p.Applications[i]
		}
	}
	if shop == nil || shop.DestinationName != "prod" || shop.DestinationServer != "" || shop.SourcePath != "live/"+ns+"/shop" || p.Settings.GroupBy != "label" {
		t.Fatalf("adopt.yaml: %+v %+v", shop, p.Settings)
	}
}

// TestViewerPlansWhatItMayList (moved from cmd/adopt's
// TestPlanRBACNotScanned): as a user allowed to list only ConfigMaps in
// one namespace, every other type is "not scanned" with the 403, the
// plan still succeeds, and -n's namespace, which the user may not get,
// is planned and said to be unchecked, never called missing.
func TestViewerPlansWhatItMayList(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	kubectl(t, configMap(ns, "visible", nil, nil), "apply", "-f", "-")
	kubectl(t, fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: %s}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: \"nginx:1.27\"}]\n", ns), "apply", "-f", "-")
	cs := cp.Clientset()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "adopt:viewers", APIGroup: "rbac.authorization.k8s.io"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	viewer, err := clientcmd.BuildConfigFromFlags("", cp.ViewerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, optionsFor(connect(t, viewer), ns))
	if object(p, "ConfigMap", ns, "visible") == nil {
		t.Fatal("the allowed type was not scanned")
	}
	if object(p, "Deployment", ns, "web") != nil {
		t.Fatal("a forbidden type was listed")
	}
	reasons := map[string]string{}
	for _, n := range p.NotScanned {
		reasons[n.Type] = n.Reason
	}
	for _, typ := range []string{"deployments.apps", "secrets", "services"} {
		if !strings.Contains(reasons[typ], "403") {
			t.Errorf("%s: not-scanned reason %q", typ, reasons[typ])
		}
	}
	if _, ok := reasons["configmaps"]; ok {
		t.Error("configmaps reported as not scanned")
	}
	if p.Summary.NotScanned != len(p.NotScanned) || p.Summary.NotScanned < 3 {
		t.Errorf("summary %+v", p.Summary)
	}
	unchecked := false
	for _, f := range p.Findings {
		unchecked = unchecked || f.Code == plan.CodeNamespaceUnchecked && f.Severity == plan.Info && strings.Contains(f.Message, "-n "+ns+": not allowed to get this namespace")
	}
	if !unchecked {
		t.Errorf("no %s finding for -n %s: %+v", plan.CodeNamespaceUnchecked, ns, p.Findings)
	}
}
