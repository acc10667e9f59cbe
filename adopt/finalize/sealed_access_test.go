package finalize_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
)

// TestOpenChecksTheSealedTakeoverAccess (issue 45): a plan adopting a
// Secret as a SealedSecret, opened by users (impersonated, with real
// RBAC) who may get and patch Secrets and read and sync Applications.
// One may not read SealedSecrets: Open refuses before any write (the
// Secret not marked, no journal), naming get, list and watch of
// sealedsecrets.bitnami.com in the namespace and where to read why. One
// may not patch Secrets: refused, naming it. With --dry-run, which reads
// no SealedSecret and patches nothing, the first passes the check, and
// Open returns its Session (the version is given, so nothing more is
// reached); so does the one granted everything.
func TestOpenChecksTheSealedTakeoverAccess(t *testing.T) {
	ctx := context.Background()
	ns, argoNS := cp.Namespace(t), cp.Namespace(t)
	admin := cp.Clientset()
	secret, err := admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		StringData: map[string]string{"password": "canary-access-Qm4"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	grant := func(user, in string, rules ...rbacv1.PolicyRule) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
		if _, err := admin.RbacV1().Roles(in).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := admin.RbacV1().RoleBindings(in).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	apps := rbacv1.PolicyRule{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get", "patch"}}
	secrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "patch"}}
	readSecrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}
	sealedSecrets := rbacv1.PolicyRule{APIGroups: []string{sealed.Group}, Resources: []string{sealed.Resource}, Verbs: []string{"get", "list", "watch"}}
	grant("no-sealedsecrets", ns, secrets)
	grant("no-sealedsecrets", argoNS, apps)
	grant("no-patch", ns, readSecrets, sealedSecrets)
	grant("no-patch", argoNS, apps)
	grant("granted", ns, secrets, sealedSecrets)
	grant("granted", argoNS, apps)
	as := func(user string) *kubeconn.Cluster {
		t.Helper()
		cfg := cp.RESTConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := kubeconn.New(cfg, "test", "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ref := objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}
	p := &plan.Plan{ID: "plan-sealed-access",
		Objects: []plan.Object{{Ref: ref, App: "shop", SecretForm: &plan.SecretForm{Form: plan.SecretFormSealed, Controller: "kube-system/sealed-secrets-controller",
			Fingerprint: "SHA256:00", UID: string(secret.UID), SealedAt: secret.ResourceVersion}}},
		Applications: []plan.Application{{Name: "shop", Namespace: ns, Objects: []string{ref.String()}}}}
	sel, err := finalize.Select(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sel.SealedTargets()); n != 1 {
		t.Fatalf("the selection holds %d sealed Secrets, want 1", n)
	}
	journal := filepath.Join(t.TempDir(), "plan.yaml.journal")
	open := func(user string, dryRun bool) error {
		t.Helper()
		_, closeConn, err := finalize.Open(ctx, finalize.Options{Plan: p, Selection: sel, JournalFile: journal, Workload: as(user),
			Namespace: argoNS, Version: "v3.2.6", Sync: true, DryRun: dryRun})
		if err == nil {
			closeConn()
		}
		return err
	}

	err = open("no-sealedsecrets", false)
	if err == nil {
		t.Fatal("no-sealedsecrets: Open passed the access check")
	}
	msg := err.Error()
	for _, verb := range []string{"get", "list", "watch"} {
		if want := verb + " sealedsecrets.bitnami.com in " + ns; !strings.Contains(msg, want) {
			t.Errorf("no-sealedsecrets: %v\nwant it to name %q", err, want)
		}
	}
	if !strings.HasPrefix(msg, "missing permissions, nothing was changed: ") || !strings.Contains(msg, "Sealed Secrets takeover") || strings.Contains(msg, "secrets in "+ns+";") || strings.Contains(msg, "API mode") {
		t.Errorf("no-sealedsecrets: %v\nwant only the SealedSecret permissions, saying what needs them", err)
	}
	if err := open("no-patch", false); err == nil || !strings.Contains(err.Error(), "missing permissions, nothing was changed: patch secrets in "+ns) {
		t.Errorf("no-patch: %v, want patch secrets in %s denied", err, ns)
	}
	live, err := admin.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != secret.ResourceVersion || live.Annotations[sealed.ManagedAnnotation] != "" {
		t.Errorf("a refused Open wrote the Secret: resourceVersion %s (was %s), mark %q", live.ResourceVersion, secret.ResourceVersion, live.Annotations[sealed.ManagedAnnotation])
	}
	if _, err := os.Stat(journal); !os.IsNotExist(err) {
		t.Errorf("a refused Open touched the journal: %v", err)
	}

	// Past the check, Open wires the Session (the version is given, so
	// it reaches nothing more): no refusal of access.
	for _, c := range []struct {
		user   string
		dryRun bool
	}{{"no-sealedsecrets", true}, {"granted", false}} {
		if err := open(c.user, c.dryRun); err != nil {
			t.Errorf("%s (dry run %v): %v, want the access check passed", c.user, c.dryRun, err)
		}
	}
}
