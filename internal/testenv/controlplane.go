// Package testenv starts the real parts that tests and the demo run against:
// a kube-apiserver with an embedded etcd on loopback, and the real kubectl,
// built from the Go module proxy by tools/build.sh and cached outside the
// repo. It is the only place in the project that starts processes.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// Users of the control plane. Admin is in system:masters; Viewer is in no
// group and gets only what RBAC grants it.
const (
	AdminUser  = "admin"
	ViewerUser = "viewer"
)

// ControlPlane is a running kube-apiserver and etcd.
type ControlPlane struct {
	// Dir holds certificates, tokens, data and kubeconfigs; removed on Stop.
	Dir string
	// Bin is the directory with the built binaries.
	Bin string
	// Server is the API server's https URL.
	Server string
	// Kubeconfig is the admin kubeconfig path; ViewerKubeconfig the viewer's.
	Kubeconfig       string
	ViewerKubeconfig string
	AdminToken       string
	ViewerToken      string

	procs    []*process
	stopOnce sync.Once

	// staticIPs are the ClusterIPs StaticClusterIP has handed to tests
	// that are still running.
	staticMu  sync.Mutex
	staticIPs map[string]bool

	// egress is the API server's cluster egress proxy (egress.go).
	egress net.Listener
}

// Options tune Start.
type Options struct {
	// Log receives the components' output; nil discards it.
	Log *os.File
}

// Binaries builds (once, cached) and returns the directory holding
// kube-apiserver, kubectl, kube-scheduler, kube-controller-manager and etcd.
func Binaries() (string, error) {
	script := filepath.Join(moduleRoot(), "internal", "testenv", "tools", "build.sh")
	cmd := exec.Command("bash", script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if os.Getenv("ADOPT_QUIET_BUILD") == "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build control-plane binaries with %s: %v: %s", script, err, errb.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// moduleRoot is the repository root, found from this source file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Start builds the binaries if needed and starts etcd and kube-apiserver on
// random loopback ports. Call Stop when done.
func Start(ctx context.Context, o Options) (*ControlPlane, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "adopt-testenv-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, Bin: bin, AdminToken: randomToken(), ViewerToken: randomToken()}
	if err := cp.start(ctx, o); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, o Options) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcd, err := cp.spawn(o, "etcd", "--data-dir", filepath.Join(cp.Dir, "etcd"), "--client-url", etcdURL, "--peer-url", peerURL)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, etcd, func() error {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(etcdURL, "http://"), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		return fmt.Errorf("etcd did not start: %w", err)
	}

	keyFile := filepath.Join(cp.Dir, "sa.key")
	if err := writeRSAKey(keyFile); err != nil {
		return err
	}
	tokens := filepath.Join(cp.Dir, "tokens.csv")
	csv := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"adopt:viewers\"\n",
		cp.AdminToken, AdminUser, AdminUser, cp.ViewerToken, ViewerUser, ViewerUser)
	if err := atomicfile.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		return err
	}
	egressConfig, err := cp.startEgress()
	if err != nil {
		return err
	}
	port := ports[2]
	cp.Server = fmt.Sprintf("https://127.0.0.1:%d", port)
	api, err := cp.spawn(o, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-signing-key-file="+keyFile,
		"--service-account-key-file="+keyFile,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir="+filepath.Join(cp.Dir, "certs"),
		// A /16 so that the static band, where tests pin ClusterIPs, is a
		// whole /24 the API server never allocates from while the rest has
		// room: it allocates dynamic ClusterIPs from above the first
		// min(max(16, size/16), 256) addresses first, so on a /24 a pinned
		// 10.0.0.201 could already belong to another test's Service. Tests
		// take pinned addresses from StaticClusterIP.
		"--service-cluster-ip-range=10.0.0.0/16",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		// API Priority and Fairness queues requests by their FlowSchema;
		// nothing adopt does depends on it, and off it saves about a
		// third of a core-second per start and its periodic work on each
		// of the ~50 control planes a full run starts.
		"--enable-priority-and-fairness=false",
		"--egress-selector-config-file="+egressConfig,
	)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitFor(ctx, 120*time.Second, api, func() error {
		req, _ := http.NewRequest(http.MethodGet, cp.Server+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.AdminToken)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	cp.ViewerKubeconfig = filepath.Join(cp.Dir, "viewer.kubeconfig")
	if err := WriteKubeconfig(cp.Kubeconfig, cp.Server, AdminUser, cp.AdminToken); err != nil {
		return err
	}
	return WriteKubeconfig(cp.ViewerKubeconfig, cp.Server, ViewerUser, cp.ViewerToken)
}

// WriteKubeconfig writes a bearer-token kubeconfig with context name
// "adopt-local".
func WriteKubeconfig(path, server, user, token string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: adopt-local
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: %s
  user:
    token: %s
contexts:
- name: adopt-local
  context:
    cluster: adopt-local
    user: %s
current-context: adopt-local
`, server, user, token, user)
	return atomicfile.WriteFile(path, []byte(cfg), 0o600)
}

// RESTConfig is the admin's client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		panic(err) // the file was written by Start
	}
	return cfg
}

// Clientset is the admin's typed client.
func (cp *ControlPlane) Clientset() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(cp.RESTConfig())
}

// Kubectl runs the real kubectl as admin with stdin and returns its
// combined output.
func (cp *ControlPlane) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(cp.Bin, "kubectl"), append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Stop kills every process and removes Dir. It is safe to call twice.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		for i := len(cp.procs) - 1; i >= 0; i-- {
			cp.procs[i].stop()
		}
		if cp.egress != nil {
			cp.egress.Close()
		}
		os.RemoveAll(cp.Dir)
	})
}

type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (p *process) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// spawn starts a binary from Bin in its own process group; it dies with
// this process (Pdeathsig), so a killed test leaves nothing behind.
func (cp *ControlPlane) spawn(o Options, name string, args ...string) (*process, error) {
	return cp.spawnEnv(o, nil, name, filepath.Join(cp.Bin, name), args...)
}

func (cp *ControlPlane) spawnEnv(o Options, env []string, name, path string, args ...string) (*process, error) {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), env...)
	logPath := filepath.Join(cp.Dir, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
	} else {
		cmd.Stdout, cmd.Stderr = lf, lf
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	cp.procs = append(cp.procs, p)
	return p, nil
}

// waitFor polls check until it succeeds, the process exits, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, p *process, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v; see %s.log", p.name, p.err, p.name)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if last = check(); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s: %v", p.name, timeout, last)
}

// LogTail returns the last bytes of a component's log, for failure reports.
func (cp *ControlPlane) LogTail(name string, n int) string {
	b, err := os.ReadFile(filepath.Join(cp.Dir, name+".log"))
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomToken() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func writeRSAKey(path string) error {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return atomicfile.WriteFile(path, b, 0o600)
}

// WaitEstablished waits, a minute at most, until each CRD named (plural.group)
// is Established: served by the API server. kubectl wait cannot do it
// right after the apply: it fails at once on a CRD whose status has no
// conditions yet.
func (cp *ControlPlane) WaitEstablished(ctx context.Context, names ...string) error {
	crds := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, name := range names {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" {
					last = fmt.Sprintf("Established %v: %v", m["status"], m["message"])
					return m["status"] == "True", nil
				}
			}
			last = "no Established condition yet"
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s is not served: %v (%s)", name, err, last)
		}
	}
	return nil
}
