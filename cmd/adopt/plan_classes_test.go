package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanProvenanceAndSkipClasses creates one object per provenance class
// with the real kubectl and client-go, and one per skip class, and checks
// each verdict, its confidence and where it lands in the plan.
func TestPlanProvenanceAndSkipClasses(t *testing.T) {
	ctx := context.Background()
	plEnsureAppCRD(t)
	ns := cp.Namespace(t)
	plKubectl(t, plCM(ns, "csa", nil, nil), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "ssa", nil, nil), "apply", "--server-side", "-f", "-")
	plKubectl(t, plCM(ns, "imperative", nil, nil), "create", "-f", "-")
	plKubectl(t, plCM(ns, "helm", map[string]string{"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "litellm-0.4.2"},
		map[string]string{"meta.helm.sh/release-name": "litellm", "meta.helm.sh/release-namespace": ns}), "create", "-f", "-")
	plKubectl(t, plCM(ns, "flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps"}, nil), "create", "-f", "-")
	plKubectl(t, plCM(ns, "excluded-tmp", nil, nil), "create", "-f", "-")
	cs := cp.Clientset()
	op := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, op, metav1.CreateOptions{FieldManager: "my-operator"}); err != nil {
		t.Fatal(err)
	}
	owner, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "operator", UID: owner.UID}}}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, owned, metav1.CreateOptions{FieldManager: "my-operator"}); err != nil {
		t.Fatal(err)
	}
	plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default, namespace: %s}\n", ns), "create", "-f", "-")
	plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: %s}\nstringData: {password: canary-secret-4411}\n", ns), "apply", "-f", "-")
	plKubectl(t, fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: %s}\ninvolvedObject: {kind: ConfigMap, name: csa, namespace: %s}\nreason: R\nmessage: m\n", ns, ns), "create", "-f", "-")
	plCreateApp(t, ns, "an-app")

	cfg := filepath.Join(t.TempDir(), "adopt.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nexclusions:\n- kinds: [ConfigMap]\n  names: [\"*-tmp\"]\nproject: platform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := adopt(t, "plan", "-n", ns, "-q", "-o", "yaml", "--config", cfg)
	if code != 0 || strings.Contains(out, "canary-secret-4411") {
		t.Fatalf("exit %d, or the Secret's value is in the plan", code)
	}
	p := planJSON(t, "-n", ns, "--config", cfg)
	obj := plNames(p, ns)
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
	h := obj["helm"]
	var helmApp *plan.Application
	for i := range p.Applications {
		if p.Applications[i].Source == "helm" {
			helmApp = &p.Applications[i]
		}
	}
	// The object says Helm, but no release record exists: it is not
	// adopted (no Application), blocked with a critical finding that says
	// so, never exported raw. (helm_argocd_test.go adopts real releases.)
	if h == nil || helmApp != nil || h.App != "" || !hasFinding(h, plan.CodeHelm) || !hasFinding(h, plan.CodeHelmBlocked) || h.Risk != plan.Critical {
		t.Errorf("helm: %+v in %+v", h, helmApp)
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
	plKubectl(t, plCM("kube-system", "sys-"+ns[len(ns)-6:], nil, nil), "apply", "-f", "-")
	ps := planJSON(t, "-n", "kube-system")
	found := false
	for _, s := range ps.Skipped {
		if s.Name == "sys-"+ns[len(ns)-6:] && s.Class == "system" {
			found = true
		}
	}
	if !found || len(ps.Objects) != 0 {
		t.Errorf("kube-system: %d objects, system skip found %v", len(ps.Objects), found)
	}
}

// TestPlanGroupsByLabels checks grouping by namespace and
// app.kubernetes.io labels, --group-by namespace, and adopt.yaml naming and
// destination.
func TestPlanGroupsByLabels(t *testing.T) {
	ns := cp.Namespace(t)
	plKubectl(t, plCM(ns, "a1", map[string]string{"app.kubernetes.io/part-of": "shop"}, nil), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "a2", map[string]string{"app.kubernetes.io/instance": "shop"}, nil), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "b1", map[string]string{"app.kubernetes.io/name": "billing"}, nil), "apply", "-f", "-")
	plKubectl(t, plCM(ns, "loose", nil, nil), "apply", "-f", "-")
	p := planJSON(t, "-n", ns)
	apps := map[string][]string{}
	for _, a := range p.Applications {
		apps[a.Name+" "+a.SourcePath] = a.Objects
	}
	want := map[string]int{
		"adopt-" + ns + "-shop adopted/" + ns + "/shop":       2,
		"adopt-" + ns + "-billing adopted/" + ns + "/billing": 1,
		"adopt-" + ns + " adopted/" + ns:                      1,
	}
	for k, n := range want {
		if len(apps[k]) != n {
			t.Errorf("%s: %v (all %v)", k, apps[k], apps)
		}
	}
	p = planJSON(t, "-n", ns, "--group-by", "namespace")
	if len(p.Applications) != 1 || len(p.Applications[0].Objects) != 4 {
		t.Fatalf("--group-by namespace: %+v", p.Applications)
	}
	cfg := filepath.Join(t.TempDir(), "adopt.yaml")
	os.WriteFile(cfg, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\ndestination: {name: prod}\nnaming: \"{key}-{namespace}\"\nexportDir: live\ngroupBy: label\n"), 0o644)
	p = planJSON(t, "-n", ns, "--config", cfg)
	var shop *plan.Application
	for i := range p.Applications {
		if p.Applications[i].Name == "shop-"+ns {
			shop = &p.Applications[i]
		}
	}
	if shop == nil || shop.DestinationName != "prod" || shop.DestinationServer != "" || shop.SourcePath != "live/"+ns+"/shop" || p.Settings.GroupBy != "label" {
		t.Fatalf("config: %+v %+v", shop, p.Settings)
	}
	if _, errOut, code := adopt(t, "plan", "-n", ns, "--group-by", "colour"); code != ExitUsage || !strings.Contains(errOut, "--group-by") {
		t.Fatalf("bad --group-by: %d %s", code, errOut)
	}
}

// TestPlanRBACNotScanned runs plan as the non-admin viewer, allowed to list
// only ConfigMaps in one namespace: every other type is "not scanned" with
// the 403, and the scan still succeeds.
func TestPlanRBACNotScanned(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	plKubectl(t, plCM(ns, "visible", nil, nil), "apply", "-f", "-")
	plKubectl(t, fmt.Sprintf(plWeb, ns), "apply", "-f", "-")
	cs := cp.Clientset()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewers", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "adopt:viewers", APIGroup: "rbac.authorization.k8s.io"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, errOut, code := planVia(t, cp.ViewerKubeconfig, ns)
	if code != 0 {
		t.Fatalf("viewer plan exited %d: %s", code, errOut)
	}
	if findObject(p, "ConfigMap", ns, "visible") == nil {
		t.Fatal("the allowed type was not scanned")
	}
	if findObject(p, "Deployment", ns, "web") != nil {
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
	// The viewer may not get namespaces: -n's namespace is planned, said
	// to be unchecked, never called missing.
	unchecked := false
	for _, f := range p.Findings {
		unchecked = unchecked || f.Code == plan.CodeNamespaceUnchecked && f.Severity == plan.Info && strings.Contains(f.Message, "-n "+ns+": not allowed to get this namespace")
	}
	if !unchecked {
		t.Errorf("no %s finding for -n %s: %+v", plan.CodeNamespaceUnchecked, ns, p.Findings)
	}
}
