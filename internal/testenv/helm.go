package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HelmBinaries builds (once, cached) the real helm CLI version (for
// example "v3.18.6") and returns the directory holding it.
func HelmBinaries(version string) (string, error) {
	return buildTool("helm "+version, "build-helm.sh", 1, version)
}

// Helm runs the real helm CLI as admin against a control plane, with its
// own repository config, cache and data directories (nothing of the
// user's ~/.config/helm is read or written).
type Helm struct {
	Bin string
	// Home holds repositories.yaml (RepositoryConfig) and the index cache
	// (RepositoryCache).
	Home             string
	RepositoryConfig string
	RepositoryCache  string
	kubeconfig       string
}

// NewHelm builds helm if needed and prepares its directories under dir.
func NewHelm(cp *ControlPlane, dir string) (*Helm, error) {
	bin, err := HelmBinaries(HelmVersion)
	if err != nil {
		return nil, err
	}
	h := &Helm{Bin: filepath.Join(bin, "helm"), Home: dir, kubeconfig: cp.Kubeconfig,
		RepositoryConfig: filepath.Join(dir, "config", "repositories.yaml"), RepositoryCache: filepath.Join(dir, "cache", "repository")}
	return h, nil
}

// Env is the environment helm (and a process reading Helm's settings the
// way helm does) runs with.
func (h *Helm) Env() []string {
	return []string{
		"HELM_CONFIG_HOME=" + filepath.Join(h.Home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(h.Home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(h.Home, "data"),
		"HELM_REPOSITORY_CONFIG=" + h.RepositoryConfig,
		"HELM_REPOSITORY_CACHE=" + h.RepositoryCache,
	}
}

// Run runs helm with args and returns its combined output.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.Bin, append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), h.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ChartRepo is a Helm chart repository served over HTTP on loopback:
// charts packaged with `helm package` and indexed with `helm repo index`,
// served as static files.
type ChartRepo struct {
	URL string
	Dir string
	srv *http.Server
}

// ServeChartRepo packages each chart directory into a new repository and
// serves it. Close stops it.
func ServeChartRepo(ctx context.Context, h *Helm, charts ...string) (*ChartRepo, error) {
	dir, err := os.MkdirTemp("", "adopt-charts-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &ChartRepo{URL: "http://" + l.Addr().String() + "/charts", Dir: dir}
	r.srv = &http.Server{Handler: http.StripPrefix("/charts", http.FileServer(http.Dir(dir)))}
	go func() { _ = r.srv.Serve(l) }()
	if err := r.Add(ctx, h, charts...); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// Add packages more charts (or versions) into the repository and
// re-indexes it.
func (r *ChartRepo) Add(ctx context.Context, h *Helm, charts ...string) error {
	for _, c := range charts {
		if _, err := h.Run(ctx, "package", c, "-d", r.Dir); err != nil {
			return err
		}
	}
	_, err := h.Run(ctx, "repo", "index", r.Dir, "--url", r.URL)
	return err
}

// Close stops serving and removes the repository's files.
func (r *ChartRepo) Close() {
	_ = r.srv.Close()
	_ = os.RemoveAll(r.Dir)
}
