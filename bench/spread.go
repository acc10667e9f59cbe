package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spreadRow applies SpreadNamespaces namespaces of SpreadObjects ConfigMaps
// each, as real estates spread a few objects over many namespaces (one
// Application a namespace), against the git CLI committing and pushing
// the same tree (applyAgainstGit). It runs on a control plane of its own,
// so the other rows' objects are not in its plan, nor its in theirs.
func (b *bench) spreadRow(ctx context.Context) error {
	c := b.c
	if c.SpreadNamespaces == 0 {
		return nil
	}
	cp, cs, err := startSeedable(ctx)
	if err != nil {
		return err
	}
	defer cp.Stop()
	start := time.Now()
	p := newPool()
	for n := 0; n < c.SpreadNamespaces; n++ {
		ns := fmt.Sprintf("team-%04d", n)
		p.jobs <- func() error {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			for i := 0; i < c.SpreadObjects; i++ {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%d", i), Namespace: ns,
					Labels: map[string]string{"app.kubernetes.io/part-of": "svc"}},
					Data: map[string]string{"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", i), 20)}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := p.wait(); err != nil {
		return err
	}
	b.seeded(c.SpreadNamespaces*c.SpreadObjects, time.Since(start))
	planFile := filepath.Join(cp.Dir, "spread-plan.yaml")
	if _, err := measure("adopt plan", nil, c.Adopt, "--kubeconfig", cp.Kubeconfig, "plan", "-q", "-A", "--argocd-version", "v2.14.21", "--out", planFile); err != nil {
		return err
	}
	row, err := b.applyAgainstGit(cp, planFile, func(apps, objects int) string {
		return fmt.Sprintf("10. apply, %d namespaces x %d objects (%d Applications, %d objects), pushed over smart HTTP", c.SpreadNamespaces, c.SpreadObjects, apps, objects)
	})
	if err != nil {
		return err
	}
	b.res.Rows = append(b.res.Rows, row)
	return nil
}
