package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fleetRow is row 6: FleetClusters real control planes (each its own
// kube-apiserver and etcd) with FleetNamespaces x PerType x 10 objects
// each. It measures adopt plan of each cluster alone, then adopt plan
// --contexts of all of them (--parallel 4), and compares the fleet's wall
// time with the slowest single-cluster plan of the same run (and, reported,
// with the sum of them: what planning one cluster after another costs);
// the fleet's peak RSS is reported.
func (b *bench) fleetRow(ctx context.Context) error {
	c := b.c
	if c.FleetClusters == 0 {
		return nil
	}
	n := c.FleetNamespaces * c.PerType * 10
	kubeconfigs := map[string]string{}
	var contexts []string
	for i := 1; i <= c.FleetClusters; i++ {
		cp, cs, err := startSeedable(ctx)
		if err != nil {
			return err
		}
		defer cp.Stop()
		start := time.Now()
		if _, err := seedNamespaces(ctx, cs, 0, c.FleetNamespaces, c.PerType, c.BigEvery, 1); err != nil {
			return fmt.Errorf("seed fleet cluster %d: %w", i, err)
		}
		b.seeded(n, time.Since(start))
		name := fmt.Sprintf("cluster-%d", i)
		c.Log("fleet: %s seeded with %d objects in %s", name, n, time.Since(start).Round(time.Second))
		kubeconfigs[name], contexts = cp.Kubeconfig, append(contexts, name)
	}
	dir := filepath.Join(b.cp.Dir, "fleet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "fleet.kubeconfig")
	if err := mergeKubeconfigs(kubeconfig, kubeconfigs); err != nil {
		return err
	}
	row := Row{Name: fmt.Sprintf("6. fleet plan, %d clusters x %d objects", c.FleetClusters, n)}
	var slowest Measurement
	sum := 0.0
	for _, name := range contexts {
		c.Log("  adopt plan --context %s", name)
		m, err := c.measureRepeat(fmt.Sprintf("adopt plan --context %s (%d objects)", name, n), nil, c.Adopt,
			"--kubeconfig", kubeconfig, "--context", name, "plan", "-q", "-o", "json", "--out", filepath.Join(dir, name+".yaml"))
		if err != nil {
			return err
		}
		row.Measured = append(row.Measured, m)
		sum += m.Seconds
		if m.Seconds > slowest.Seconds {
			slowest = m
		}
	}
	c.Log("  adopt plan --contexts")
	fleet, err := c.measureRepeat(fmt.Sprintf("adopt plan --contexts (%d clusters, --parallel 4)", c.FleetClusters), nil, c.Adopt,
		"--kubeconfig", kubeconfig, "plan", "--contexts", strings.Join(contexts, ","), "-q", "-o", "json", "--out-dir", filepath.Join(dir, "plans"))
	if err != nil {
		return err
	}
	row.Measured = append(row.Measured, fleet)
	row.Ratios = []Ratio{
		ratio("fleet plan / slowest single-cluster plan (time)", fleet.Seconds/slowest.Seconds, "<= 1.5", fleet.Seconds <= 1.5*slowest.Seconds),
		reported("fleet plan / sum of the single-cluster plans (time)", fleet.Seconds/sum),
		reported("fleet plan peak RSS (MB)", float64(fleet.RSSMB)),
	}
	b.res.Rows = append(b.res.Rows, row)
	return nil
}

// mergeKubeconfigs writes one kubeconfig whose contexts are the current
// contexts of the given files, renamed by the map's keys.
func mergeKubeconfigs(path string, files map[string]string) error {
	out := clientcmdapi.NewConfig()
	for name, file := range files {
		cfg, err := clientcmd.LoadFromFile(file)
		if err != nil {
			return err
		}
		cur := cfg.Contexts[cfg.CurrentContext]
		out.Clusters[name] = cfg.Clusters[cur.Cluster]
		out.AuthInfos[name] = cfg.AuthInfos[cur.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		out.CurrentContext = name
	}
	return clientcmd.WriteToFile(*out, path)
}
