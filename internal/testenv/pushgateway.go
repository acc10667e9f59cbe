package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Pushgateway is a real Prometheus Pushgateway on a random loopback port,
// where `adopt reconcile --metrics-pushgateway` pushes. It dies with this
// process; Stop ends it earlier.
type Pushgateway struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL   string
	procs *ControlPlane // process holder: spawning, Stop and LogTail
}

// StartPushgateway builds the Pushgateway once (cached outside the repo)
// and starts it with its data in memory.
func StartPushgateway(ctx context.Context) (*Pushgateway, error) {
	dir, err := buildTool("the Pushgateway", "build-pushgateway.sh", 3)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "adopt-pushgateway-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p := &Pushgateway{URL: "http://" + addr, procs: &ControlPlane{Dir: work}}
	proc, err := p.procs.spawnEnv(Options{}, nil, "pushgateway", filepath.Join(dir, "pushgateway"), "--web.listen-address="+addr)
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, 60*time.Second, proc, func() error { return httpOK(p.URL + "/-/ready") }); err != nil {
		p.Stop()
		return nil, fmt.Errorf("the Pushgateway did not start: %w; log: %s", err, lastLines(p.procs.LogTail("pushgateway", 2000), 5))
	}
	return p, nil
}

// Metrics is what the Pushgateway serves to Prometheus (GET /metrics).
func (p *Pushgateway) Metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/metrics: %s", p.URL, resp.Status)
	}
	return string(b), nil
}

// Stop ends the Pushgateway and removes its directory.
func (p *Pushgateway) Stop() { p.procs.Stop() }
