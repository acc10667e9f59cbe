package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// fleetStatusTypes are the types seedNamespaces creates, as kubectl names
// them.
const fleetStatusTypes = "configmaps,secrets,services,serviceaccounts,roles,rolebindings,deployments,networkpolicies,poddisruptionbudgets,resourcequotas"

// fleetStatusRow is the fleet status row: FleetStatusClusters real control
// planes (each its own kube-apiserver and etcd) with FleetStatusNamespaces
// x 10 types x 10 objects each, planned into one fleet plan (plan
// --contexts, not measured). It measures `adopt status --plan DIR` of that
// fleet plan, without and with coverage, against `kubectl get` of the same
// objects cluster by cluster (one kubectl per cluster: every type of the
// seeded objects, all namespaces, selected by the label they all carry,
// -o json), interleaved, the median of -repeat runs each. Goal: status
// without coverage at most 1x kubectl; status with coverage (which also
// lists every object of those namespaces) is reported.
func (b *bench) fleetStatusRow(ctx context.Context) error {
	c := b.c
	if c.FleetStatusClusters == 0 {
		return nil
	}
	n := c.FleetStatusNamespaces * 10 * 10
	kubeconfigs := map[string]string{}
	var contexts []string
	for i := 1; i <= c.FleetStatusClusters; i++ {
		cp, cs, err := startSeedable(ctx)
		if err != nil {
			return err
		}
		defer cp.Stop()
		start := time.Now()
		if _, err := seedNamespaces(ctx, cs, 0, c.FleetStatusNamespaces, 10, 0, 1); err != nil {
			return fmt.Errorf("seed fleet status cluster %d: %w", i, err)
		}
		b.seeded(n, time.Since(start))
		name := fmt.Sprintf("cluster-%02d", i)
		c.Log("fleet status: %s seeded with %d objects in %s", name, n, time.Since(start).Round(time.Second))
		kubeconfigs[name], contexts = cp.Kubeconfig, append(contexts, name)
	}
	dir := filepath.Join(b.cp.Dir, "fleetstatus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "fleet.kubeconfig")
	if err := mergeKubeconfigs(kubeconfig, kubeconfigs); err != nil {
		return err
	}
	plans := filepath.Join(dir, "plans")
	c.Log("  adopt plan --contexts (not measured)")
	if out, err := exec.Command(c.Adopt, "--kubeconfig", kubeconfig, "plan", "--contexts", strings.Join(contexts, ","), "-q", "-o", "json", "--out-dir", plans).CombinedOutput(); err != nil {
		return fmt.Errorf("plan the fleet: %v: %s", err, tail(string(out), 2000))
	}
	status := []string{"--kubeconfig", kubeconfig, "status", "--plan", plans, "-o", "json"}
	// The status must cover every seeded object, or the row compares
	// different work; the plan also proposes each seeded Namespace, which
	// status reads and kubectl does not.
	out, err := exec.Command(c.Adopt, append(status, "--no-coverage")...).Output()
	if err != nil {
		return fmt.Errorf("adopt status of the fleet plan: %v", err)
	}
	var r struct {
		Clusters []struct {
			Counts map[string]int `json:"counts"`
		} `json:"clusters"`
		Objects []json.RawMessage `json:"objects"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return err
	}
	if want := len(contexts) * (n + c.FleetStatusNamespaces); len(r.Clusters) != len(contexts) || len(r.Objects) != want {
		return fmt.Errorf("adopt status of the fleet plan reports %d clusters and %d objects, want %d and %d", len(r.Clusters), len(r.Objects), len(contexts), want)
	}
	kubectl := filepath.Join(b.cp.Bin, "kubectl")
	var loop strings.Builder
	for _, name := range contexts {
		fmt.Fprintf(&loop, "%s --kubeconfig %s --context %s get %s -A -l app.kubernetes.io/part-of -o json >/dev/null || exit 1\n", kubectl, kubeconfig, name, fleetStatusTypes)
	}
	total := len(contexts) * n
	c.Log("  adopt status --plan DIR / kubectl get per cluster")
	ms, err := measureInterleaved(c.Repeat,
		command{fmt.Sprintf("adopt status --plan DIR --no-coverage (%d clusters, %d objects)", len(contexts), total), c.Adopt, append(status, "--no-coverage"), nil},
		command{fmt.Sprintf("adopt status --plan DIR, with coverage (%d objects)", total), c.Adopt, status, nil},
		command{fmt.Sprintf("kubectl get, one per cluster (%d objects)", total), "sh", []string{"-c", loop.String()}, nil},
	)
	if err != nil {
		return err
	}
	row := Row{Name: fmt.Sprintf("11. status of a %d-cluster fleet plan (%d control planes x %d objects)", len(contexts), len(contexts), n), Measured: ms}
	row.Ratios = []Ratio{
		ratio("adopt status --no-coverage / kubectl get (time)", ms[0].Seconds/ms[2].Seconds, "<= 1.0", ms[0].Seconds <= ms[2].Seconds),
		reported("adopt status with coverage / kubectl get (time)", ms[1].Seconds/ms[2].Seconds),
	}
	b.res.Rows = append(b.res.Rows, row)
	return nil
}
