package testenv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ExternalSecrets is a real External Secrets Operator controller running
// out of cluster against a control plane, with the admin kubeconfig
// (it honours KUBECONFIG). It watches one namespace only (--namespace),
// and its cluster-wide reconcilers (ClusterSecretStore,
// ClusterExternalSecret, ClusterPushSecret) are off, so instances on a
// shared control plane never meet. It serves no webhook (the root command
// starts none) and no health probe; its metrics listen on loopback. It
// dies with this process; Stop ends it earlier.
type ExternalSecrets struct {
	// Namespace is the one namespace whose SecretStores, ExternalSecrets
	// and PushSecrets it reconciles.
	Namespace string
	// MetricsURL is its metrics endpoint on loopback.
	MetricsURL string
	// Bin is the directory holding external-secrets.
	Bin string

	cp    *ControlPlane
	procs *ControlPlane // process holder: spawning, Stop and LogTail
}

// ExternalSecretsBinaries builds (once, cached) the controller and
// returns the directory holding it.
func ExternalSecretsBinaries() (string, error) {
	return buildTool("the External Secrets Operator "+ExternalSecretsVersion, "build-external-secrets.sh", 3, ExternalSecretsVersion)
}

// The External Secrets resources the tests and adopt use.
var (
	SecretStoreGVR    = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "secretstores"}
	ExternalSecretGVR = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1", Resource: "externalsecrets"}
	PushSecretGVR     = schema.GroupVersionResource{Group: "external-secrets.io", Version: "v1alpha1", Resource: "pushsecrets"}
)

// StartExternalSecrets builds the controller if needed, installs its
// CRDs (the module's deploy/crds/bundle.yaml, from the module cache,
// server-side with the real kubectl: the same objects every instance
// applies) and starts it watching namespace, which must exist. It returns
// once the controller serves its metrics, its caches being synced.
func StartExternalSecrets(ctx context.Context, cp *ControlPlane, namespace string) (*ExternalSecrets, error) {
	bin, err := ExternalSecretsBinaries()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "adopt-external-secrets-")
	if err != nil {
		return nil, err
	}
	e := &ExternalSecrets{Namespace: namespace, Bin: bin, cp: cp, procs: &ControlPlane{Dir: work}}
	if err := e.start(ctx); err != nil {
		e.Stop()
		return nil, fmt.Errorf("the External Secrets Operator %s did not start for namespace %s: %w", ExternalSecretsVersion, namespace, err)
	}
	return e, nil
}

func (e *ExternalSecrets) start(ctx context.Context) error {
	if err := InstallExternalSecretsCRDs(ctx, e.cp); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", ports[0])
	e.MetricsURL = "http://" + metrics + "/metrics"
	args := []string{
		"--namespace=" + e.Namespace,
		"--metrics-addr=" + metrics,
		"--enable-cluster-store-reconciler=false",
		"--enable-cluster-external-secret-reconciler=false",
		"--enable-cluster-push-secret-reconciler=false",
		"--enable-leader-election=false",
		"--zap-time-encoding=iso8601",
	}
	proc, err := e.procs.spawnEnv(Options{}, []string{"KUBECONFIG=" + e.cp.Kubeconfig}, "external-secrets",
		filepath.Join(e.Bin, "external-secrets"), args...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, proc, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.MetricsURL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", e.MetricsURL, resp.Status)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("%w; log: %s", err, lastLines(e.LogTail(4000), 10))
	}
	return nil
}

// InstallExternalSecretsCRDs applies the External Secrets Operator
// module's CRD bundle to cp (server-side: the same objects every caller
// applies) and waits until the ones adopt uses are served; no controller
// is started (for tests that only need the API, such as RBAC checks).
func InstallExternalSecretsCRDs(ctx context.Context, cp *ControlPlane) error {
	mod := "github.com/external-secrets/external-secrets@" + ExternalSecretsVersion
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir() // outside adopt's module: its go.mod is not read
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %v", mod, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return fmt.Errorf("go mod download %s: no Dir in %s", mod, out)
	}
	bundle := filepath.Join(m.Dir, "deploy", "crds", "bundle.yaml")
	if out, err := cp.Kubectl(ctx, nil, "apply", "--server-side", "--force-conflicts", "-f", bundle); err != nil {
		return fmt.Errorf("apply the CRDs from %s: %w: %s", bundle, err, lastLines(out, 5))
	}
	var crds []string
	for _, r := range []string{"secretstores", "clustersecretstores", "externalsecrets", "pushsecrets", "clusterexternalsecrets", "clusterpushsecrets"} {
		crds = append(crds, r+".external-secrets.io")
	}
	return cp.WaitEstablished(ctx, append(crds, "generatorstates.generators.external-secrets.io")...)
}

// KubernetesStore creates a SecretStore name in the watched namespace
// whose kubernetes provider keeps its values as Secrets in
// remoteNamespace of this same control plane (created if missing),
// reached at the API server's URL with a service account of the watched
// namespace that may read and write Secrets there and nothing else. It
// returns once the controller reports the store Ready, with its
// capabilities.
func (e *ExternalSecrets) KubernetesStore(ctx context.Context, name, remoteNamespace string) error {
	c := e.cp.Clientset()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remoteNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sa := name + "-store"
	if _, err := c.CoreV1().ServiceAccounts(e.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}}
	if _, err := c.RbacV1().Roles(remoteNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: e.Namespace}}}
	if _, err := c.RbacV1().RoleBindings(remoteNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(e.cp.Dir, "certs", "apiserver.crt"))
	if err != nil {
		return err
	}
	store := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
		"metadata": map[string]any{"name": name, "namespace": e.Namespace},
		"spec": map[string]any{"provider": map[string]any{"kubernetes": map[string]any{
			"remoteNamespace": remoteNamespace,
			// caBundle is []byte in the API: base64 in JSON.
			"server": map[string]any{"url": e.cp.Server, "caBundle": base64.StdEncoding.EncodeToString(ca)},
			"auth":   map[string]any{"serviceAccount": map[string]any{"name": sa}},
		}}},
	}}
	dyn, err := dynamic.NewForConfig(e.cp.RESTConfig())
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(SecretStoreGVR).Namespace(e.Namespace).Create(ctx, store, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create SecretStore %s/%s: %w", e.Namespace, name, err)
	}
	var last string
	for {
		s, err := dyn.Resource(SecretStoreGVR).Namespace(e.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Ready" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				if m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("SecretStore %s/%s is not Ready (%s): %w; log: %s", e.Namespace, name, last, ctx.Err(), lastLines(e.LogTail(4000), 10))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// LogTail returns the last n bytes of the controller's log.
func (e *ExternalSecrets) LogTail(n int) string { return e.procs.LogTail("external-secrets", n) }

// Log returns the controller's whole log, for tests that search it.
func (e *ExternalSecrets) Log() string { return e.procs.LogTail("external-secrets", 1<<30) }

// Stop ends the controller and removes its directory. The CRDs and the
// namespaces stay, like a test's.
func (e *ExternalSecrets) Stop() {
	e.procs.Stop()
}
