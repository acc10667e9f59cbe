package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// ArgoCDNamespace is where StartArgoCD installs Argo CD's config and
// Applications. A control plane runs at most one Argo CD.
const ArgoCDNamespace = "argocd"

// ArgoCD is a real Argo CD (redis-server, repo-server, application
// controller and API server) running out of cluster against a ControlPlane,
// all on loopback. The Argo CD binary is built from the Go module proxy by
// tools/build-argocd.sh.
type ArgoCD struct {
	// Version is the Argo CD tag, for example "v2.14.21".
	Version string
	// Dir is the cached build: the argocd binary, crds/ and config/.
	Dir string
	// Namespace is ArgoCDNamespace.
	Namespace string
	// Server is argocd-server's plain-HTTP base URL (it runs --insecure),
	// for example http://127.0.0.1:41234; Address is its host:port.
	Server  string
	Address string
	// RepoServer and Redis are host:port of the other components.
	RepoServer string
	Redis      string
	// AdminPassword is the initial admin password that argocd-server wrote
	// into argocd-initial-admin-secret.
	AdminPassword string
	// Timings records how long each startup step took.
	Timings []Timing

	cp       *ControlPlane
	work     string
	procs    []*process
	stopOnce sync.Once
	// helmDir and kustomizeDir hold the helm and kustomize binaries the
	// repo-server runs.
	helmDir      string
	kustomizeDir string
}

// Timing is one measured startup step.
type Timing struct {
	Step string
	Took time.Duration
}

// ArgoCDBinaries builds (once, cached) Argo CD version and returns the
// cache directory holding argocd, crds/ and config/.
func ArgoCDBinaries(version string) (string, error) {
	return buildTool("Argo CD "+version, "build-argocd.sh", 1, version)
}

// StartArgoCD builds Argo CD version if needed, installs its CRDs
// (server-side, with the real kubectl), its config objects and an AppProject
// "default" that allows everything into namespace argocd, then starts
// redis-server, argocd-repo-server, argocd-application-controller and
// argocd-server on random loopback ports. It returns once the server
// answers /healthz, the admin password exists, and the controller has
// reconciled a probe Application. All processes die with the test process;
// Stop ends them earlier.
func StartArgoCD(ctx context.Context, cp *ControlPlane, version string) (*ArgoCD, error) {
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	a := &ArgoCD{Version: version, Namespace: ArgoCDNamespace, cp: cp}
	step := time.Now()
	dir, err := ArgoCDBinaries(version)
	if err != nil {
		return nil, err
	}
	a.Dir = dir
	// The repo-server renders Helm-sourced Applications with helm from its
	// PATH: the version this Argo CD bundles.
	if a.helmDir, err = HelmBinaries(BundledHelm(version)); err != nil {
		return nil, err
	}
	// It renders kustomize-sourced Applications with kustomize from its
	// PATH: the version this Argo CD bundles.
	if a.kustomizeDir, err = KustomizeBinaries(BundledKustomize(version)); err != nil {
		return nil, err
	}
	a.timing("build or find binary", &step)
	a.work, err = os.MkdirTemp("", "adopt-argocd-")
	if err != nil {
		return nil, err
	}
	if err := a.start(ctx, &step); err != nil {
		a.Stop()
		return nil, fmt.Errorf("Argo CD %s did not start: %w", version, err)
	}
	return a, nil
}

func (a *ArgoCD) timing(name string, since *time.Time) {
	now := time.Now()
	a.Timings = append(a.Timings, Timing{Step: name, Took: now.Sub(*since)})
	*since = now
}

func (a *ArgoCD) start(ctx context.Context, step *time.Time) error {
	if err := a.install(ctx); err != nil {
		return err
	}
	a.timing("install CRDs and config", step)

	ports, err := freePorts(7)
	if err != nil {
		return err
	}
	redisPort, repoPort, repoMetrics, ctrlMetrics, serverPort, serverMetrics, closedPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	a.Redis = fmt.Sprintf("127.0.0.1:%d", redisPort)
	a.RepoServer = fmt.Sprintf("127.0.0.1:%d", repoPort)
	a.Address = fmt.Sprintf("127.0.0.1:%d", serverPort)
	a.Server = "http://" + a.Address

	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found on PATH; run internal/testenv/tools/install-debs.sh")
	}
	redisDir := filepath.Join(a.work, "redis")
	if err := os.MkdirAll(redisDir, 0o700); err != nil {
		return err
	}
	redis, err := a.cp.spawnEnv(Options{}, nil, "argocd-redis", redisBin,
		"--port", fmt.Sprint(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", redisDir)
	if err != nil {
		return err
	}
	a.procs = append(a.procs, redis)
	if err := waitFor(ctx, 60*time.Second, redis, func() error { return redisPing(a.Redis) }); err != nil {
		return fmt.Errorf("redis-server: %w", err)
	}
	a.timing("redis-server ready", step)

	repoArgs := []string{"--address", "127.0.0.1", "--port", fmt.Sprint(repoPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(repoMetrics),
		"--redis", a.Redis, "--disable-tls"}
	if argoMinor(a.Version) >= 305 {
		// Since v3.5 --disable-tls is refused beside a client CA path, and
		// that path defaults to the image's mount point.
		repoArgs = append(repoArgs, "--client-ca-path=")
	}
	repo, err := a.spawn("argocd-repo-server", repoArgs...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, repo, func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", repoMetrics))
	}); err != nil {
		return a.failed("argocd-repo-server", err)
	}
	a.timing("argocd-repo-server healthy", step)

	server, err := a.spawn("argocd-server",
		"--insecure", "--address", "127.0.0.1", "--port", fmt.Sprint(serverPort),
		"--metrics-address", "127.0.0.1", "--metrics-port", fmt.Sprint(serverMetrics),
		"--namespace", a.Namespace, "--redis", a.Redis,
		"--repo-server", a.RepoServer, "--repo-server-plaintext",
		"--staticassets", filepath.Join(a.work, "static"))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, server, func() error { return httpOK(a.Server + "/healthz") }); err != nil {
		return a.failed("argocd-server", err)
	}
	if err := waitFor(ctx, 60*time.Second, server, func() error {
		s, err := a.cp.Clientset().CoreV1().Secrets(a.Namespace).Get(ctx, "argocd-initial-admin-secret", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Data["password"]) == 0 {
			return fmt.Errorf("secret %s/argocd-initial-admin-secret has no password yet", a.Namespace)
		}
		a.AdminPassword = string(s.Data["password"])
		return nil
	}); err != nil {
		return a.failed("argocd-server", err)
	}
	a.timing("argocd-server healthy, admin password written", step)

	ctrl, err := a.spawn("argocd-application-controller",
		"--namespace", a.Namespace, "--redis", a.Redis,
		"--repo-server", a.RepoServer, "--repo-server-plaintext",
		"--metrics-port", fmt.Sprint(ctrlMetrics))
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 120*time.Second, ctrl, func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", ctrlMetrics))
	}); err != nil {
		return a.failed("argocd-application-controller", err)
	}
	if err := a.probeController(ctx, ctrl, closedPort); err != nil {
		return a.failed("argocd-application-controller", err)
	}
	a.timing("argocd-application-controller reconciling", step)
	return nil
}

// failed wraps a component's startup error with the tail of its log.
func (a *ArgoCD) failed(name string, err error) error {
	return fmt.Errorf("%s: %w; log tail: %s", name, err, lastLines(a.cp.LogTail(name, 4000), 8))
}

// spawn starts one component of the multi-call argocd binary.
func (a *ArgoCD) spawn(name string, args ...string) (*process, error) {
	env, err := a.env(name)
	if err != nil {
		return nil, err
	}
	p, err := a.cp.spawnEnv(Options{}, env, name, filepath.Join(a.Dir, "argocd"), args...)
	if err != nil {
		return nil, err
	}
	a.procs = append(a.procs, p)
	return p, nil
}

// env is the environment of an Argo CD component running out of cluster.
// Every path Argo CD would take from its container image (/app/config,
// /tmp sockets) points into this instance's own temp dir, so two instances
// on one machine do not share state.
func (a *ArgoCD) env(name string) ([]string, error) {
	dirs := map[string]string{}
	for _, d := range []string{"tls", "ssh", "gpg", "gpg-source", "tmp", "home", "static", "plugins"} {
		p := filepath.Join(a.work, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		dirs[d] = p
	}
	return []string{
		"ARGOCD_BINARY_NAME=" + name,
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"KUBECONFIG=" + a.cp.Kubeconfig,
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_TLS_DATA_PATH=" + dirs["tls"],
		"ARGOCD_SSH_DATA_PATH=" + dirs["ssh"],
		"ARGOCD_GNUPGHOME=" + dirs["gpg"],
		"ARGOCD_GPG_DATA_PATH=" + dirs["gpg-source"],
		"ARGOCD_PLUGINSOCKFILEPATH=" + dirs["plugins"],
		"ARGOCD_ASK_PASS_SOCK=" + filepath.Join(a.work, "askpass.sock"),
		"TMPDIR=" + dirs["tmp"],
		"HOME=" + dirs["home"],
		"GIT_CONFIG_NOSYSTEM=1",
		// The repo-server runs git with GIT_ASKPASS=argocd, helm,
		// kustomize and (since v3.5, on every manifest generation) the
		// image's git-verify-wrapper.sh, which the build puts beside argocd.
		"PATH=" + strings.Join([]string{a.Dir, a.helmDir, a.kustomizeDir, os.Getenv("PATH")}, string(os.PathListSeparator)),
	}, nil
}

// install applies the CRDs server-side, the config objects and an AppProject
// "default" that allows everything, with the real kubectl.
func (a *ArgoCD) install(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}}
	if _, err := a.cp.Clientset().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", a.Namespace, err)
	}
	// The ApplicationSet CRD is too big for client-side apply (its
	// last-applied annotation would pass the 262144-byte cap).
	if _, err := a.cp.Kubectl(ctx, nil, "apply", "--server-side", "--force-conflicts", "--field-manager=testenv", "-k", filepath.Join(a.Dir, "crds")); err != nil {
		return err
	}
	// Established: the API server serves the new resources.
	dyn := dynamic.NewForConfigOrDie(a.cp.RESTConfig())
	for _, res := range []string{"applications", "appprojects", "applicationsets"} {
		gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: res}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			_, last = dyn.Resource(gvr).Namespace(a.Namespace).List(ctx, metav1.ListOptions{Limit: 1})
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s.argoproj.io applied but not served: %v (%v)", res, err, last)
		}
	}
	if _, err := a.cp.Kubectl(ctx, nil, "apply", "--server-side", "--field-manager=testenv", "-n", a.Namespace, "-k", filepath.Join(a.Dir, "config")); err != nil {
		return err
	}
	project := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: default
  namespace: %s
spec:
  sourceRepos: ["*"]
  destinations: [{server: "*", namespace: "*"}]
  clusterResourceWhitelist: [{group: "*", kind: "*"}]
`, a.Namespace)
	_, err := a.cp.Kubectl(ctx, []byte(project), "apply", "--server-side", "--field-manager=testenv", "-f", "-")
	return err
}

// probeController creates an Application whose repo is a closed loopback
// port and waits for the controller to record a reconcile on it, which
// proves the controller watches Applications and writes their status. The
// probe is then deleted: it has no finalizer, so nothing else goes with it.
func (a *ArgoCD) probeController(ctx context.Context, ctrl *process, closedPort int) error {
	name := "testenv-probe-" + randomToken()[:6]
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: %s
spec:
  project: default
  source: {repoURL: "http://127.0.0.1:%d/probe.git", path: ., targetRevision: HEAD}
  destination: {server: https://kubernetes.default.svc, namespace: default}
`, name, a.Namespace, closedPort)
	if err := a.CreateApplication(ctx, []byte(app)); err != nil {
		return err
	}
	apps := a.applications()
	err := waitFor(ctx, 120*time.Second, ctrl, func() error {
		u, err := apps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if at, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt"); at == "" {
			return fmt.Errorf("probe Application %s/%s not reconciled yet", a.Namespace, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return apps.Delete(ctx, name, metav1.DeleteOptions{})
}

func (a *ArgoCD) applications() dynamic.ResourceInterface {
	gvr := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	return dynamic.NewForConfigOrDie(a.cp.RESTConfig()).Resource(gvr).Namespace(a.Namespace)
}

// CreateApplication applies an Application (or any manifest) from YAML into
// Argo CD's namespace with the real kubectl, server-side, so calling it
// again with the same YAML changes nothing.
func (a *ArgoCD) CreateApplication(ctx context.Context, yaml []byte) error {
	_, err := a.cp.Kubectl(ctx, yaml, "apply", "--server-side", "--field-manager=testenv", "-n", a.Namespace, "-f", "-")
	return err
}

// AddRepository gives Argo CD the credentials of a Git repository: a
// repository Secret named repo-<name> in its namespace.
func (a *ArgoCD) AddRepository(ctx context.Context, name, url, user, password string) error {
	return a.CreateApplication(ctx, []byte(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: repo-%s
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {type: git, url: %q, username: %q, password: %q}
`, name, url, user, password)))
}

// SetConfig sets keys in argocd-cm (for example
// "application.resourceTrackingMethod": "annotation"), which Argo CD picks
// up while running. It reads the ConfigMap and updates it with that
// resourceVersion, retrying on conflict; other keys and the labels Argo CD
// selects its config by stay. Set it before creating the Applications that
// depend on it.
func (a *ArgoCD) SetConfig(ctx context.Context, data map[string]string) error {
	cms := a.cp.Clientset().CoreV1().ConfigMaps(a.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, "argocd-cm", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range data {
			cm.Data[k] = v
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "testenv"})
		return err
	})
	if err != nil {
		return fmt.Errorf("set keys in ConfigMap %s/argocd-cm: %w", a.Namespace, err)
	}
	return nil
}

// AppStatus is the part of an Application's status that tests look at.
type AppStatus struct {
	Sync, Health     string
	Revision         string
	OperationPhase   string
	OperationMessage string
	// Conditions are "Type: message" lines, such as ComparisonError.
	Conditions []string
	// Resources are the last sync's per-object results, as
	// "Kind ns/name: status: message" lines (status Synced or SyncFailed).
	Resources []string
	// Refresh is the argocd.argoproj.io/refresh annotation asked for and
	// not done yet ("normal" or "hard"); "" when there is none.
	Refresh string
}

// Failed reports whether the last sync failed for some object. Automated
// sync retries, so the operation phase alone flips back to Running.
func (s AppStatus) Failed() bool {
	for _, r := range s.Resources {
		if strings.Contains(r, ": SyncFailed: ") {
			return true
		}
	}
	return s.OperationPhase == "Failed" || s.OperationPhase == "Error"
}

func (s AppStatus) String() string {
	out := fmt.Sprintf("sync=%s health=%s", s.Sync, s.Health)
	if s.OperationPhase != "" {
		out += fmt.Sprintf(" operation=%s %q", s.OperationPhase, s.OperationMessage)
	}
	if len(s.Conditions) > 0 {
		out += " conditions=[" + strings.Join(s.Conditions, "; ") + "]"
	}
	if len(s.Resources) > 0 {
		out += " resources=[" + strings.Join(s.Resources, "; ") + "]"
	}
	return out
}

// ApplicationStatus reads Application name in Argo CD's namespace.
func (a *ArgoCD) ApplicationStatus(ctx context.Context, name string) (AppStatus, error) {
	u, err := a.applications().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return AppStatus{}, fmt.Errorf("argoproj.io/Application %s/%s: %w", a.Namespace, name, err)
	}
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		return s
	}
	st := AppStatus{
		Sync:             str("status", "sync", "status"),
		Health:           str("status", "health", "status"),
		Revision:         str("status", "sync", "revision"),
		OperationPhase:   str("status", "operationState", "phase"),
		OperationMessage: str("status", "operationState", "message"),
		Refresh:          u.GetAnnotations()["argocd.argoproj.io/refresh"],
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			st.Conditions = append(st.Conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
		}
	}
	results, _, _ := unstructured.NestedSlice(u.Object, "status", "operationState", "syncResult", "resources")
	for _, r := range results {
		if m, ok := r.(map[string]any); ok {
			st.Resources = append(st.Resources, fmt.Sprintf("%v %v/%v: %v: %v", m["kind"], m["namespace"], m["name"], m["status"], m["message"]))
		}
	}
	return st, nil
}

// WaitApplication polls Application name until done returns true, and
// returns the last status seen. It waits as long as ctx allows; on timeout
// the error carries the last status.
func (a *ArgoCD) WaitApplication(ctx context.Context, name string, done func(AppStatus) bool) (AppStatus, error) {
	var last AppStatus
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		st, err := a.ApplicationStatus(ctx, name)
		if err != nil {
			lastErr = err
			return false, nil
		}
		last, lastErr = st, nil
		return done(st), nil
	})
	if err != nil {
		return last, fmt.Errorf("waiting for argoproj.io/Application %s/%s: %v; last status: %s (last error: %v)", a.Namespace, name, err, last, lastErr)
	}
	return last, nil
}

// SyncedHealthy is a WaitApplication condition.
func SyncedHealthy(s AppStatus) bool { return s.Sync == "Synced" && s.Health == "Healthy" }

// Token logs in to argocd-server as admin through the API (POST
// /api/v1/session) and returns a bearer token for API mode. Errors never
// carry the password or the token.
func (a *ArgoCD) Token(ctx context.Context) (string, error) {
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": a.AdminPassword})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.Server+"/api/v1/session", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", fmt.Errorf("log in to argocd-server at %s: %w", a.Server, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("log in to argocd-server at %s as admin: %s; check the password in secret %s/argocd-initial-admin-secret", a.Server, resp.Status, a.Namespace)
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil || out.Token == "" {
		return "", fmt.Errorf("log in to argocd-server at %s: no token in the response", a.Server)
	}
	return out.Token, nil
}

// Manifests asks argocd-server for the target manifests of Application
// name (GET /api/v1/applications/{name}/manifests): what the repo-server
// renders from its source at its target revision, with helm, kustomize or
// plain files, and the tracking label or annotation set. Each manifest is
// decoded into a map. A source that does not render is an error carrying
// Argo CD's message.
func (a *ArgoCD) Manifests(ctx context.Context, name string) ([]map[string]any, error) {
	token, err := a.Token(ctx)
	if err != nil {
		return nil, err
	}
	url := a.Server + "/api/v1/applications/" + name + "/manifests"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask argocd-server at %s for the manifests of Application %s/%s: %w", a.Server, a.Namespace, name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	// Manifests are JSON documents inside JSON strings.
	var out struct {
		Manifests []string `json:"manifests"`
		Message   string   `json:"message"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("manifests of Application %s/%s: %s: %w", a.Namespace, name, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("Argo CD %s did not render Application %s/%s: %s: %s", a.Version, a.Namespace, name, resp.Status, out.Message)
	}
	objs := make([]map[string]any, 0, len(out.Manifests))
	for i, m := range out.Manifests {
		var obj map[string]any
		if err := json.Unmarshal([]byte(m), &obj); err != nil {
			return nil, fmt.Errorf("manifest %d of Application %s/%s: %w", i, a.Namespace, name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// ServerVersion asks argocd-server for its version (GET /api/version).
func (a *ArgoCD) ServerVersion(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Server+"/api/version", nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", fmt.Errorf("ask argocd-server at %s for its version: %w", a.Server, err)
	}
	defer resp.Body.Close()
	var out struct {
		Version string `json:"Version"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return "", fmt.Errorf("ask argocd-server at %s for its version: %s: %w", a.Server, resp.Status, err)
	}
	return out.Version, nil
}

// LogTail returns the end of a component's log ("argocd-server",
// "argocd-repo-server", "argocd-application-controller", "argocd-redis").
func (a *ArgoCD) LogTail(component string, n int) string { return a.cp.LogTail(component, n) }

// Stop ends every Argo CD process and removes its temp dir. The cluster
// objects stay. Safe to call twice.
func (a *ArgoCD) Stop() {
	a.stopOnce.Do(func() {
		for i := len(a.procs) - 1; i >= 0; i-- {
			a.procs[i].stop()
		}
		if a.work != "" {
			os.RemoveAll(a.work)
		}
	})
}

// redisPing sends PING and wants +PONG.
func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis at %s answered %q to PING", addr, strings.TrimSpace(line))
	}
	return nil
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
