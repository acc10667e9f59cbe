package testenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartApplicationSetController starts Argo CD's real ApplicationSet
// controller (the multi-call argocd binary as
// argocd-applicationset-controller) against this Argo CD's control plane
// and repo-server, with its metrics, probe and webhook endpoints on random
// loopback ports, and returns once it serves its metrics. The
// ApplicationSet CRD is installed by StartArgoCD. It stops with Stop.
func (a *ArgoCD) StartApplicationSetController(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	addr := func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }
	p, err := a.spawn("argocd-applicationset-controller",
		"--namespace", a.Namespace,
		"--argocd-repo-server", a.RepoServer, "--repo-server-plaintext",
		"--metrics-addr", addr(ports[0]), "--probe-addr", addr(ports[1]), "--webhook-addr", addr(ports[2]))
	if err != nil {
		return err
	}
	// Its manager registers no health check; /metrics answers once it
	// runs, and the ApplicationSet informers are synced before it serves.
	if err := waitFor(ctx, 120*time.Second, p, func() error { return httpOK("http://" + addr(ports[0]) + "/metrics") }); err != nil {
		return a.failed("argocd-applicationset-controller", err)
	}
	return nil
}

// RegisterCluster registers workload cluster w with this Argo CD the way
// `argocd cluster add` does (see RegisterClusterOn). It returns the token,
// for tests that check it never leaks.
func (a *ArgoCD) RegisterCluster(ctx context.Context, name string, w *ControlPlane, labels map[string]string) (string, error) {
	return RegisterClusterOn(ctx, a.cp, a.Namespace, name, w, labels)
}

// RegisterClusterOn registers workload cluster w in namespace ns of
// management cluster mgmt (which need not run Argo CD) the way `argocd
// cluster add` does: a ServiceAccount argocd-manager in w's kube-system
// bound to cluster-admin, a token for it from the TokenRequest API, and a
// cluster Secret in ns named cluster-<name> with name, server, labels and
// config (the bearer token and w's serving CA). It returns the token.
func RegisterClusterOn(ctx context.Context, mgmt *ControlPlane, ns, name string, w *ControlPlane, labels map[string]string) (string, error) {
	kube := w.Clientset()
	const sa, saNS = "argocd-manager", "kube-system"
	if _, err := kube.CoreV1().ServiceAccounts(saNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ServiceAccount %s/%s on %s: %w", saNS, sa, w.Server, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: saNS}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("bind %s to cluster-admin on %s: %w", sa, w.Server, err)
	}
	expiry := int64(24 * 3600)
	tr, err := kube.CoreV1().ServiceAccounts(saNS).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for %s/%s on %s: %w", saNS, sa, w.Server, err)
	}
	ca, err := os.ReadFile(filepath.Join(w.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return "", fmt.Errorf("read the workload cluster's serving certificate: %w", err)
	}
	config, err := json.Marshal(map[string]any{
		"bearerToken":     tr.Status.Token,
		"tlsClientConfig": map[string]any{"insecure": false, "caData": base64.StdEncoding.EncodeToString(ca)},
	})
	if err != nil {
		return "", err
	}
	l := map[string]string{"argocd.argoproj.io/secret-type": "cluster"}
	for k, v := range labels {
		l[k] = v
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: ns, Labels: l},
		StringData: map[string]string{"name": name, "server": w.Server, "config": string(config)},
	}
	if _, err := mgmt.Clientset().CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create cluster Secret %s/%s: %w", ns, s.Name, err)
	}
	return tr.Status.Token, nil
}
