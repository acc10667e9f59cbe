package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// SealedSecretsService is the name of the controller's Service, kubeseal's
// default --controller-name. Each instance runs in a namespace of its own,
// so the name never meets another instance's.
const SealedSecretsService = "sealed-secrets-controller"

// SealedSecrets is a real Sealed Secrets controller running out of cluster
// against a control plane, as its Deployment would run in it: with a
// service account token and nothing else (it reads rest.InClusterConfig
// only), keys in its own namespace, and a Service whose proxy subresource
// reaches its HTTP API the way kubeseal reaches it. It dies with this
// process; Stop ends it earlier.
type SealedSecrets struct {
	// Namespace is where it runs: its keys, Service and service account.
	Namespace string
	// Service is its Service in Namespace (SealedSecretsService).
	Service string
	// Watched are the namespaces whose SealedSecrets it unseals: its own,
	// then those StartSealedSecrets was given.
	Watched []string
	// URL is its HTTP API on loopback (/healthz, /v1/cert.pem,
	// /v1/verify), for tests that bypass the API server.
	URL string
	// Bin is the directory holding controller and kubeseal.
	Bin string

	cp    *ControlPlane
	procs *ControlPlane // process holder: spawning, Stop and LogTail
	// binding names the ClusterRole and ClusterRoleBinding of this
	// instance (cluster-scoped, so derived from Namespace).
	binding string
}

// SealedSecretsBinaries builds (once, cached) the controller and kubeseal
// and returns the directory holding them.
func SealedSecretsBinaries() (string, error) {
	return buildTool("Sealed Secrets "+SealedSecretsVersion, "build-sealed-secrets.sh", 3, SealedSecretsVersion)
}

// StartSealedSecrets builds the controller if needed, installs its CRD
// (from the module cache, server-side with the real kubectl) and starts it
// in a fresh namespace, unsealing SealedSecrets there and in namespaces
// (which must exist). It watches nothing else, so tests sharing a control
// plane each run their own and never see one another's SealedSecrets. It
// returns once the controller serves its certificate, directly and
// through the API server's service proxy.
func StartSealedSecrets(ctx context.Context, cp *ControlPlane, namespaces ...string) (*SealedSecrets, error) {
	bin, err := SealedSecretsBinaries()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "adopt-sealed-secrets-")
	if err != nil {
		return nil, err
	}
	ns := "sealed-secrets-" + randomToken()[:8]
	s := &SealedSecrets{Namespace: ns, Service: SealedSecretsService, Watched: append([]string{ns}, namespaces...),
		Bin: bin, cp: cp, procs: &ControlPlane{Dir: work}, binding: "adopt-testenv:" + ns}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("the Sealed Secrets controller %s did not start in namespace %s: %w", SealedSecretsVersion, ns, err)
	}
	return s, nil
}

func (s *SealedSecrets) start(ctx context.Context) error {
	if err := s.installCRD(ctx); err != nil {
		return err
	}
	c := s.cp.Clientset()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	saDir := filepath.Join(s.procs.Dir, "serviceaccount")
	if err := s.serviceAccount(ctx, c, saDir); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := s.expose(ctx, c, ports[0]); err != nil {
		return err
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return fmt.Errorf("unshare not found on PATH (util-linux): the controller reads its token from /var/run/secrets, which it gets in a mount namespace of its own")
	}
	apiPort := s.cp.Server[strings.LastIndex(s.cp.Server, ":")+1:]
	env := []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=" + apiPort}
	// In a mount namespace of its own, a tmpfs on /run (/var/run is a link
	// to it) holds the service account files where rest.InClusterConfig
	// reads them; the host's /run is untouched.
	const script = `mount -t tmpfs -o size=1m,mode=0755 tmpfs /run &&
mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
cp "$1"/token "$1"/ca.crt "$1"/namespace /run/secrets/kubernetes.io/serviceaccount/ &&
shift && exec "$@"`
	args := []string{"-m", "--propagation", "private"}
	if os.Geteuid() != 0 {
		// Not root (make demo on a workstation): a user namespace where
		// the caller is root allows the mount.
		args = append([]string{"--map-root-user"}, args...)
	}
	args = append(args, "sh", "-c", script, "sh", saDir,
		filepath.Join(s.Bin, "controller"),
		"--listen-addr="+strings.TrimPrefix(s.URL, "http://"),
		fmt.Sprintf("--listen-metrics-addr=127.0.0.1:%d", ports[1]),
		"--all-namespaces=false",
		"--additional-namespaces="+strings.Join(s.Watched[1:], ","),
		"--key-renew-period=0",
	)
	proc, err := s.procs.spawnEnv(Options{}, env, "sealed-secrets-controller", unshare, args...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, proc, func() error {
		_, err := s.Cert(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("%w; log: %s", err, lastLines(s.LogTail(4000), 10))
	}
	// The Service's proxy subresource reaches it, as kubeseal does.
	if err := waitFor(ctx, 30*time.Second, proc, func() error {
		_, err := c.CoreV1().Services(s.Namespace).ProxyGet("http", s.Service, "http", "/v1/cert.pem", nil).DoRaw(ctx)
		return err
	}); err != nil {
		return fmt.Errorf("the service proxy does not reach it: %w", err)
	}
	return nil
}

// installCRD applies the SealedSecret CRD of the module's Helm chart, the
// same object every instance applies, and waits until it is served.
func (s *SealedSecrets) installCRD(ctx context.Context) error {
	return InstallSealedSecretsCRD(ctx, s.cp)
}

// InstallSealedSecretsCRD applies the SealedSecret CRD of the Sealed
// Secrets module's Helm chart (SealedSecretsVersion) to cp, without a
// controller, and waits until it is served: for tests that need the type
// known (kubectl auth can-i resolves sealedsecrets.bitnami.com by
// discovery) and nothing running.
func InstallSealedSecretsCRD(ctx context.Context, cp *ControlPlane) error {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/bitnami-labs/sealed-secrets@"+SealedSecretsVersion)
	cmd.Dir = os.TempDir() // outside adopt's module: its go.mod is not read
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go mod download github.com/bitnami-labs/sealed-secrets@%s: %v", SealedSecretsVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download github.com/bitnami-labs/sealed-secrets@%s: no Dir in %s", SealedSecretsVersion, out)
	}
	crds := filepath.Join(mod.Dir, "helm", "sealed-secrets", "crds")
	if out, err := cp.Kubectl(ctx, nil, "apply", "--server-side", "-f", crds); err != nil {
		return fmt.Errorf("apply the CRD from %s: %w: %s", crds, err, out)
	}
	return cp.WaitEstablished(ctx, "sealedsecrets.bitnami.com")
}

// serviceAccount creates the controller's service account, binds it to
// what the controller does (SealedSecrets and their status, Secrets,
// Events, reading Namespaces), and writes token, ca.crt and namespace into
// dir. The token is a TokenRequest's, valid for two days.
func (s *SealedSecrets) serviceAccount(ctx context.Context, c kubernetes.Interface, dir string) error {
	sa, err := c.CoreV1().ServiceAccounts(s.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.Service}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: s.binding}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"bitnami.com"}, Resources: []string{"sealedsecrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"bitnami.com"}, Resources: []string{"sealedsecrets/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	}}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: s.binding},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: s.binding},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: s.Namespace}}}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return err
	}
	ttl := int64(48 * time.Hour / time.Second)
	tr, err := c.CoreV1().ServiceAccounts(s.Namespace).CreateToken(ctx, sa.Name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for service account %s/%s: %w", s.Namespace, sa.Name, err)
	}
	ca, err := os.ReadFile(filepath.Join(s.cp.Dir, "certs", "apiserver.crt")) // the serving certificate and its CA
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": ca, "namespace": []byte(s.Namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// expose makes the Service's proxy subresource reach the controller on
// 127.0.0.1:port. The API server proxies a Service only to an address of
// its Endpoints whose targetRef is a Pod of the same namespace holding
// that IP (pkg/registry/core/service/storage ResourceLocation), and
// refuses loopback addresses in both. So a selector-less Service (port
// "http", as the chart names it) has Endpoints at LoopbackStandIn:port,
// whose Pod stands for the process and holds LoopbackStandIn; the control
// plane's cluster egress (egress.go) dials 127.0.0.1:port for it. The Pod
// carries a scheduling gate, so no scheduler ever binds it to a node.
func (s *SealedSecrets) expose(ctx context.Context, c kubernetes.Interface, port int) error {
	labels := map[string]string{"app.kubernetes.io/name": "sealed-secrets", "app.kubernetes.io/instance": s.Service}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.Service, Labels: labels}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(int32(port))}}}}
	if _, err := c.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: s.Service, Labels: labels}, Spec: corev1.PodSpec{
		SchedulingGates:    []corev1.PodSchedulingGate{{Name: "testenv.adopt.dev/out-of-cluster"}},
		ServiceAccountName: s.Service,
		Containers:         []corev1.Container{{Name: "controller", Image: "testenv.invalid/sealed-secrets-controller:" + SealedSecretsVersion}},
	}}
	pod, err := c.CoreV1().Pods(s.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	pod.Status.PodIP = LoopbackStandIn
	pod.Status.PodIPs = []corev1.PodIP{{IP: LoopbackStandIn}}
	if _, err := c.CoreV1().Pods(s.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("give the controller's Pod the address %s: %w", LoopbackStandIn, err)
	}
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: s.Service, Labels: labels}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: LoopbackStandIn, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: s.Namespace, Name: pod.Name, UID: pod.UID}}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(port), Protocol: corev1.ProtocolTCP}},
	}}}
	// The service proxy reads Endpoints, not EndpointSlices, in 1.34; the
	// API server's deprecation warning for them is noise here.
	cfg := s.cp.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{}
	quiet, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = quiet.CoreV1().Endpoints(s.Namespace).Create(ctx, eps, metav1.CreateOptions{})
	return err
}

// Cert is the controller's certificate, read from its HTTP API directly.
func (s *SealedSecrets) Cert(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/v1/cert.pem", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("GET %s/v1/cert.pem: %s", s.URL, resp.Status)
	}
	return b, nil
}

// Verify posts a SealedSecret (JSON) to the controller's /v1/verify
// directly and returns the status code, its only answer: 200 when it
// decrypts, 409 when it does not, 429 past 2 requests a second.
func (s *SealedSecrets) Verify(ctx context.Context, sealed []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/verify", bytes.NewReader(sealed))
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Kubeseal runs the real kubeseal as admin, reaching this controller
// through the API server (--controller-namespace, --controller-name), with
// stdin, and returns its stdout. Its errors carry stderr, never stdout.
func (s *SealedSecrets) Kubeseal(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	args = append([]string{"--kubeconfig", s.cp.Kubeconfig, "--controller-namespace", s.Namespace, "--controller-name", s.Service}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(s.Bin, "kubeseal"), args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubeseal %s: %v: %s", strings.Join(args[2:], " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// LogTail returns the last n bytes of the controller's log.
func (s *SealedSecrets) LogTail(n int) string { return s.procs.LogTail("sealed-secrets-controller", n) }

// Stop ends the controller (SIGTERM: it shuts its servers down), deletes
// its ClusterRole and ClusterRoleBinding, and removes its directory. Its
// namespace stays, like a test's.
func (s *SealedSecrets) Stop() {
	s.procs.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.cp.Clientset()
	for _, err := range []error{
		c.RbacV1().ClusterRoleBindings().Delete(ctx, s.binding, metav1.DeleteOptions{}),
		c.RbacV1().ClusterRoles().Delete(ctx, s.binding, metav1.DeleteOptions{}),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, "testenv: delete the Sealed Secrets RBAC %s: %v\n", s.binding, err)
		}
	}
}
