package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// writers is how many requests seeding keeps in flight.
const writers = 32

// dataBytes is a normal ConfigMap's and Secret's data value size;
// bigData the extra data a 200 KB-annotated ConfigMap gets at 4x.
const (
	dataBytes = 1024
	bigData   = 600 * 1024
	bigAnno   = 200 * 1024
)

// pool runs jobs with writers goroutines and keeps the first error.
type pool struct {
	jobs chan func() error
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

func newPool() *pool {
	p := &pool{jobs: make(chan func() error)}
	for w := 0; w < writers; w++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for j := range p.jobs {
				if err := j(); err != nil {
					p.mu.Lock()
					if p.err == nil {
						p.err = err
					}
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func (p *pool) wait() error {
	close(p.jobs)
	p.wg.Wait()
	return p.err
}

func nsName(i int) string { return fmt.Sprintf("bench-%03d", i) }

func isBig(i, k, perType, bigEvery int) bool { return bigEvery > 0 && (i*perType+k)%bigEvery == 0 }

// seedNamespaces creates namespaces from..to-1, each with perType objects of
// 10 types; ConfigMap and Secret data are scale x dataBytes.
func seedNamespaces(ctx context.Context, cs *kubernetes.Clientset, from, to, perType, bigEvery, scale int) (int, error) {
	p := newPool()
	bigValue := strings.Repeat("b", bigAnno)
	data := strings.Repeat("d", scale*dataBytes)
	total := 0
	for i := from; i < to; i++ {
		ns := nsName(i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			p.wait()
			return 0, err
		}
		for k := 0; k < perType; k++ {
			name := fmt.Sprintf("obj-%04d", k)
			meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("app-%d", k%5)}}
			cmMeta := meta
			if isBig(i, k, perType, bigEvery) {
				cmMeta.Annotations = map[string]string{"example.com/blob": bigValue}
			}
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
			creates := []func() error{
				func() error {
					_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: cmMeta, Data: map[string]string{"k": data}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": data}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: sel, Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}}}}}
					_, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: meta, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: meta}, metav1.CreateOptions{})
					return err
				},
			}
			for _, c := range creates {
				p.jobs <- c
				total++
			}
		}
	}
	return total, p.wait()
}

// scaleBodies rewrites every ConfigMap's and Secret's data of namespaces
// 0..n-1 to scale x dataBytes; at scale 4 the 200 KB-annotated ConfigMaps
// also get bigData more, so that every such body is about 4x its size.
func scaleBodies(ctx context.Context, cs *kubernetes.Clientset, n, perType, bigEvery, scale int) error {
	p := newPool()
	data := strings.Repeat("d", scale*dataBytes)
	var big any // nil removes the key in a merge patch
	if scale > 1 {
		big = strings.Repeat("x", bigData)
	}
	for i := 0; i < n; i++ {
		ns := nsName(i)
		for k := 0; k < perType; k++ {
			name := fmt.Sprintf("obj-%04d", k)
			cm := map[string]any{"k": data}
			if isBig(i, k, perType, bigEvery) {
				cm["big"] = big
			}
			cmPatch, _ := json.Marshal(map[string]any{"data": cm})
			secPatch, _ := json.Marshal(map[string]any{"data": map[string]any{"k": base64.StdEncoding.EncodeToString([]byte(data))}})
			p.jobs <- func() error {
				_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, cmPatch, metav1.PatchOptions{})
				return err
			}
			p.jobs <- func() error {
				_, err := cs.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, secPatch, metav1.PatchOptions{})
				return err
			}
		}
	}
	return p.wait()
}
