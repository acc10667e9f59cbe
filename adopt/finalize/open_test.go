package finalize_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestOpenChoosesTheModeFromAccess: Open's access check and mode choice
// on a real kube-apiserver, for users (impersonated, with real RBAC) of
// whom one may get and patch the plan's ConfigMaps but not read
// Applications, and one may only get them. Without a fallback, or with
// one that has no token, the first is refused before any connection,
// the error naming the Application permission and API mode. With a
// fallback and a token, Open says it falls back and reaches for
// argocd-server at the fallback's address (closed here: the error names
// it). The second is refused even with the fallback: API mode does not
// patch ConfigMaps for it.
func TestOpenChoosesTheModeFromAccess(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	admin := cp.Clientset()
	grant := func(user string, verbs ...string) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: verbs}}}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant("finalizer", "get", "patch")
	grant("reader", "get")
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
	tg := target(ns)
	p := &plan.Plan{ID: "plan-open", Objects: []plan.Object{{Ref: tg.Ref, App: tg.App}},
		Applications: []plan.Application{{Name: tg.App, Namespace: ns, Objects: []string{tg.Ref.String()}}}}
	sel, err := finalize.Select(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	open := func(user string, fallback *argoapp.APIOptions) ([]string, error) {
		t.Helper()
		var notes []string
		s, closeConn, err := finalize.Open(ctx, finalize.Options{Plan: p, Selection: sel, JournalFile: filepath.Join(t.TempDir(), "journal"),
			Workload: as(user), Namespace: "argocd", Version: "v3.2.6", Fallback: fallback, Note: func(line string) { notes = append(notes, line) }})
		if err == nil {
			closeConn()
			t.Fatalf("%s: Open connected (%s), want a refusal", user, s.ArgoCD)
		}
		return notes, err
	}
	apiMode := &argoapp.APIOptions{Server: closed, Token: "t0ken", PlainText: true}

	for _, fb := range []*argoapp.APIOptions{nil, {Server: closed, Token: " ", PlainText: true}} {
		notes, err := open("finalizer", fb)
		if msg := err.Error(); !strings.Contains(msg, "missing permissions, nothing was changed: get applications.argoproj.io in argocd.") ||
			!strings.Contains(msg, "or use Argo CD API mode") || strings.Contains(msg, "configmaps") || len(notes) > 0 {
			t.Errorf("fallback %+v: %v (notes %q), want only the Application permission denied, and nothing noted", fb, err, notes)
		}
	}

	notes, err := open("finalizer", apiMode)
	if len(notes) != 1 || notes[0] != "may not get applications.argoproj.io in argocd through the Kubernetes API; using Argo CD API mode with $ARGOCD_SERVER "+closed {
		t.Errorf("notes %q, want the fallback to API mode at %s", notes, closed)
	}
	if err == nil || !strings.Contains(err.Error(), closed) || strings.Contains(err.Error(), "missing permissions") {
		t.Errorf("Open in API mode at a closed port: %v, want argocd-server at %s unreachable", err, closed)
	}

	notes, err = open("reader", apiMode)
	if msg := err.Error(); !strings.Contains(msg, "patch configmaps in "+ns) || strings.Contains(msg, "or use Argo CD API mode") || len(notes) > 0 {
		t.Errorf("reader with a fallback: %v (notes %q), want patch configmaps denied and no fallback", err, notes)
	}
}
