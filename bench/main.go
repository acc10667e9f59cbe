// Command bench measures `adopt plan` against the baseline a user would run
// (`kubectl get TYPE -A -o json` for every listable type) on a local control
// plane seeded with 20,000 objects across 20 namespaces and 10 types, some
// with 200 KB annotations. It prints wall time and peak RSS of both, and
// their ratios, in one invocation. It starts the control plane through
// internal/testenv and binds only to loopback.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/internal/testenv"
)

func main() {
	adoptBin := flag.String("adopt", "bin/adopt", "the adopt binary to measure")
	namespaces := flag.Int("namespaces", 20, "namespaces to seed")
	perType := flag.Int("per-type", 100, "objects per type per namespace (10 types)")
	bigEvery := flag.Int("big-every", 100, "every Nth ConfigMap carries a 200 KB annotation")
	hold := flag.Bool("hold", false, "after seeding, print the kubeconfig and wait for a signal instead of measuring")
	flag.Parse()
	if err := run(*adoptBin, *namespaces, *perType, *bigEvery, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// measurement is one command's wall time and peak RSS.
type measurement struct {
	wall   time.Duration
	maxRSS int64 // KiB
}

func run(adoptBin string, namespaces, perType, bigEvery int, hold bool) error {
	bin, err := filepath.Abs(adoptBin)
	if err != nil {
		return err
	}
	ctx := context.Background()
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	start := time.Now()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	n, big, err := seed(ctx, cs, namespaces, perType, bigEvery)
	if err != nil {
		return err
	}
	fmt.Printf("seeded %d objects (%d with a 200 KB annotation) in %d namespaces in %s\n", n, big, namespaces, time.Since(start).Round(time.Second))

	if hold {
		fmt.Printf("kubeconfig: %s\n", cp.Kubeconfig)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return nil
	}
	out := filepath.Join(cp.Dir, "plan.yaml")
	planM, err := measure(bin, "--kubeconfig", cp.Kubeconfig, "plan", "-q", "-o", "json", "--out", out)
	if err != nil {
		return fmt.Errorf("adopt plan: %w", err)
	}
	kubectl := filepath.Join(cp.Bin, "kubectl")
	types, err := listableTypes(kubectl, cp.Kubeconfig)
	if err != nil {
		return err
	}
	var base measurement
	for _, t := range types {
		m, err := measure(kubectl, "--kubeconfig", cp.Kubeconfig, "get", t, "-A", "-o", "json")
		if err != nil {
			continue // a type kubectl cannot list is not part of the baseline
		}
		base.wall += m.wall
		if m.maxRSS > base.maxRSS {
			base.maxRSS = m.maxRSS
		}
	}
	fmt.Printf("\n%-44s %10s %14s\n", "", "wall", "peak RSS")
	fmt.Printf("%-44s %10s %11d MB\n", "adopt plan (all namespaces, JSON + plan file)", planM.wall.Round(time.Millisecond), planM.maxRSS/1024)
	fmt.Printf("%-44s %10s %11d MB\n", fmt.Sprintf("kubectl get TYPE -A -o json (%d types)", len(types)), base.wall.Round(time.Millisecond), base.maxRSS/1024)
	fmt.Printf("%-44s %9.2fx %13.2fx\n", "ratio adopt / kubectl", planM.wall.Seconds()/base.wall.Seconds(), float64(planM.maxRSS)/float64(base.maxRSS))
	if planM.maxRSS/1024 >= 300 {
		return fmt.Errorf("adopt plan peak RSS %d MB is not below 300 MB", planM.maxRSS/1024)
	}
	return nil
}

// measure runs a command and returns its wall time and peak RSS.
func measure(name string, args ...string) (measurement, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout = nil
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	m := measurement{wall: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.maxRSS = ru.Maxrss
	}
	if err != nil {
		return m, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return m, nil
}

// listableTypes is every resource type kubectl can list, as resource.group.
func listableTypes(kubectl, kubeconfig string) ([]string, error) {
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "api-resources", "--verbs=list", "-o", "name").Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl api-resources: %w", err)
	}
	return strings.Fields(string(out)), nil
}

// seed creates perType objects of each of 10 types in each namespace, with
// 16 writers.
func seed(ctx context.Context, cs *kubernetes.Clientset, namespaces, perType, bigEvery int) (int, int, error) {
	type job func() error
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := j(); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	bigValue := strings.Repeat("b", 200*1024)
	total, big := 0, 0
	for i := 0; i < namespaces; i++ {
		ns := fmt.Sprintf("bench-%02d", i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return 0, 0, err
		}
		for k := 0; k < perType; k++ {
			name := fmt.Sprintf("obj-%04d", k)
			meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("app-%d", k%5)}}
			cmMeta := meta
			if bigEvery > 0 && (i*perType+k)%bigEvery == 0 {
				cmMeta.Annotations = map[string]string{"example.com/blob": bigValue}
				big++
			}
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
			creates := []job{
				func() error {
					_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: cmMeta, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
					return err
				},
				func() error {
					_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
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
				jobs <- c
				total++
			}
		}
	}
	close(jobs)
	wg.Wait()
	return total, big, firstErr
}
