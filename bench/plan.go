package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// planSet is the three plan measurements at one size.
type planSet struct {
	adopt, kubectl, raw Measurement
}

// measurePlan runs adopt plan and the raw list in turn (measureInterleaved),
// then the kubectl loop once: it takes ten to forty seconds.
func (b *bench) measurePlan(objects int, withKubectl bool) (planSet, error) {
	var s planSet
	var err error
	out := filepath.Join(b.cp.Dir, "plan.yaml")
	self, err := os.Executable()
	if err != nil {
		return s, err
	}
	b.c.Log("  adopt plan and raw list, interleaved")
	ms, err := measureInterleaved(b.c.PlanRepeat,
		command{fmt.Sprintf("adopt plan -A --out plan.yaml (%d objects)", objects), b.c.Adopt,
			[]string{"--kubeconfig", b.cp.Kubeconfig, "plan", "-q", "-o", "json", "--out", out}, nil},
		command{"raw paginated client-go list, the types and fields adopt reads", self, []string{"-rawlist", b.cp.Kubeconfig}, nil})
	if err != nil {
		return s, err
	}
	s.adopt, s.raw = ms[0], ms[1]
	if !withKubectl {
		return s, nil
	}
	b.c.Log("  kubectl loop")
	kubectl := filepath.Join(b.cp.Bin, "kubectl")
	types, err := exec.Command(kubectl, "--kubeconfig", b.cp.Kubeconfig, "api-resources", "--verbs=list", "-o", "name").Output()
	if err != nil {
		return s, fmt.Errorf("kubectl api-resources: %w", err)
	}
	n := 0
	for _, t := range strings.Fields(string(types)) {
		m, err := measure("", nil, kubectl, "--kubeconfig", b.cp.Kubeconfig, "get", t, "-A", "-o", "json")
		if err != nil {
			continue // a type kubectl cannot list is not part of the baseline
		}
		n++
		s.kubectl.Seconds += m.Seconds
		s.kubectl.RSSMB = max(s.kubectl.RSSMB, m.RSSMB)
	}
	s.kubectl.What = fmt.Sprintf("kubectl get TYPE -A -o json, %d types one after another", n)
	return s, nil
}

// planRows seeds the plan row, measures it, grows the bodies 4x, measures
// again, shrinks them back, seeds up to the linear row and measures it.
func (b *bench) planRows(ctx context.Context) error {
	c := b.c
	n := c.Namespaces * c.PerType * 10
	start := time.Now()
	if _, err := seedNamespaces(ctx, b.cs, 0, c.Namespaces, c.PerType, c.BigEvery, 1); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	b.seeded(n, time.Since(start))
	c.Log("seeded %d objects in %s", n, time.Since(start).Round(time.Second))
	base, err := b.measurePlan(n, true)
	if err != nil {
		return err
	}
	b.res.Rows = append(b.res.Rows, Row{Name: fmt.Sprintf("1. plan, %d objects", n),
		Measured: []Measurement{base.adopt, base.kubectl, base.raw},
		Ratios: []Ratio{
			ratio("adopt / kubectl loop (time)", base.adopt.Seconds/base.kubectl.Seconds, "<= 0.4", base.adopt.Seconds <= 0.4*base.kubectl.Seconds),
			ratio("adopt / raw list (time)", base.adopt.Seconds/base.raw.Seconds, "<= 1.3", base.adopt.Seconds <= 1.3*base.raw.Seconds),
		}})

	c.Log("bodies x4")
	if err := scaleBodies(ctx, b.cs, c.Namespaces, c.PerType, c.BigEvery, 4); err != nil {
		return fmt.Errorf("grow bodies: %w", err)
	}
	big, err := b.measurePlan(n, false)
	if err != nil {
		return err
	}
	big.adopt.What = fmt.Sprintf("adopt plan, %d objects, ConfigMap and Secret bodies 4x", n)
	big.raw.What = "raw list, bodies 4x"
	b.res.Rows = append(b.res.Rows, Row{Name: fmt.Sprintf("3. plan, %d objects with 4x larger bodies", n),
		Measured: []Measurement{base.adopt, big.adopt, big.raw},
		Ratios: []Ratio{ratio("peak RSS, 4x bodies / normal bodies", float64(big.adopt.RSSMB)/float64(base.adopt.RSSMB), "<= 1.2",
			float64(big.adopt.RSSMB) <= 1.2*float64(base.adopt.RSSMB))}})
	if err := scaleBodies(ctx, b.cs, c.Namespaces, c.PerType, c.BigEvery, 1); err != nil {
		return fmt.Errorf("shrink bodies: %w", err)
	}

	if c.LargeNamespaces > c.Namespaces {
		nl := c.LargeNamespaces * c.PerType * 10
		start := time.Now()
		if _, err := seedNamespaces(ctx, b.cs, c.Namespaces, c.LargeNamespaces, c.PerType, c.BigEvery, 1); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		b.seeded(nl-n, time.Since(start))
		c.Log("seeded up to %d objects in %s", nl, time.Since(start).Round(time.Second))
		large, err := b.measurePlan(nl, true)
		if err != nil {
			return err
		}
		want := 1.1 * float64(nl) / float64(n)
		b.res.Rows = append(b.res.Rows, Row{Name: fmt.Sprintf("2. plan, %d objects", nl),
			Measured: []Measurement{base.adopt, large.adopt, large.kubectl, large.raw},
			Ratios: []Ratio{
				ratio(fmt.Sprintf("time %d / time %d objects", nl, n), large.adopt.Seconds/base.adopt.Seconds, fmt.Sprintf("<= %.1f", want), large.adopt.Seconds <= want*base.adopt.Seconds),
				ratio("peak RSS (MB)", float64(large.adopt.RSSMB), "<= 300", large.adopt.RSSMB <= 300),
				reported("adopt / kubectl loop (time)", large.adopt.Seconds/large.kubectl.Seconds),
				reported("adopt / raw list (time)", large.adopt.Seconds/large.raw.Seconds),
			}})
	}
	// Keep the rows in goal order.
	rows := b.res.Rows
	if len(rows) == 3 {
		rows[1], rows[2] = rows[2], rows[1]
	}
	return nil
}
