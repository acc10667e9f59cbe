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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

const argoNS = "argocd"

// perApp is how many objects each Application of the finalize row holds.
const perApp = 100

// finalizeRow adopts three identical sets of ConfigMaps the way the runbook
// and Argo CD leave them (a client-side `kubectl apply`, then Argo CD's
// server-side apply with its tracking id) and removes the stale annotation
// from one set per method.
func (b *bench) finalizeRow(ctx context.Context) error {
	n := b.c.Finalize
	if err := installApplicationCRD(ctx, b); err != nil {
		return err
	}
	dyn, err := b.dynamic()
	if err != nil {
		return err
	}
	start := time.Now()
	sets := []string{"bench-fin-loop", "bench-fin-all", "bench-fin-adopt"}
	var objs []plan.Object
	for _, ns := range sets {
		o, err := adoptedSet(ctx, b, dyn, ns, n)
		if err != nil {
			return err
		}
		if ns == "bench-fin-adopt" {
			objs = o
		}
	}
	b.seeded(3*n, time.Since(start))
	b.c.Log("finalize: 3 sets of %d adopted ConfigMaps in %s", n, time.Since(start).Round(time.Second))
	planFile, err := finalizePlan(ctx, b, dyn, objs)
	if err != nil {
		return err
	}

	kubectl := filepath.Join(b.cp.Bin, "kubectl")
	kc := []string{"--kubeconfig", b.cp.Kubeconfig}
	b.c.Log("  kubectl annotate loop")
	loop := Measurement{What: fmt.Sprintf("kubectl annotate NAME %s- per object, %d objects", budget.LastAppliedKey, n)}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		m, err := measure("kubectl annotate", nil, kubectl, append(kc, "-n", sets[0], "annotate", "configmap", cmName(i), budget.LastAppliedKey+"-")...)
		if err != nil {
			return err
		}
		loop.RSSMB = max(loop.RSSMB, m.RSSMB)
	}
	loop.Seconds = time.Since(t0).Seconds()
	b.c.Log("  kubectl annotate --all")
	all, err := measure(fmt.Sprintf("kubectl annotate configmaps --all %s-, %d objects", budget.LastAppliedKey, n), nil, kubectl,
		append(kc, "-n", sets[1], "annotate", "configmaps", "--all", budget.LastAppliedKey+"-")...)
	if err != nil {
		return err
	}
	b.c.Log("  adopt finalize")
	// --settle 0: the settle window after cleanup is a wait for Argo CD,
	// not work; the row times the cleanup.
	fin, err := measure(fmt.Sprintf("adopt finalize (--parallel 16, --settle 0), %d objects (guarded patches, managedFields cleaned)", n), nil, b.c.Adopt,
		append(kc, "finalize", "--plan", planFile, "-q", "-o", "json", "--poll-interval", "100ms", "--settle", "0")...)
	if err != nil {
		return err
	}
	for _, ns := range sets {
		if left, err := stillAnnotated(ctx, b, ns); err != nil {
			return err
		} else if left > 0 {
			return fmt.Errorf("finalize row: %d ConfigMaps in %s still carry %s", left, ns, budget.LastAppliedKey)
		}
	}
	b.res.Rows = append(b.res.Rows, Row{Name: fmt.Sprintf("4. finalize, %d adopted objects", n),
		Measured: []Measurement{loop, all, fin},
		Ratios: []Ratio{
			ratio("kubectl loop / adopt (speed-up)", loop.Seconds/fin.Seconds, ">= 20", loop.Seconds >= 20*fin.Seconds),
			ratio("adopt / kubectl annotate --all (time)", fin.Seconds/all.Seconds, "<= 1.0", fin.Seconds <= all.Seconds),
		}})
	return nil
}

func (b *bench) dynamic() (dynamic.Interface, error) {
	cfg := b.cp.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	return dynamic.NewForConfig(cfg)
}

func cmName(i int) string { return fmt.Sprintf("hook-%04d", i) }

func appName(ns string, i int) string { return fmt.Sprintf("adopt-%s-%02d", ns, i/perApp) }

var cmGVR = objref.Ref{Version: "v1", Resource: "configmaps"}.GVR()

// adoptedSet creates n ConfigMaps in ns as `kubectl apply` does (the
// last-applied annotation, manager kubectl-client-side-apply), then applies
// them as Argo CD's first sync does (server-side apply by argocd-controller,
// with its tracking id).
func adoptedSet(ctx context.Context, b *bench, dyn dynamic.Interface, ns string, n int) ([]plan.Object, error) {
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	p := newPool()
	objs := make([]plan.Object, n)
	for i := 0; i < n; i++ {
		name := cmName(i)
		objs[i] = plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: appName(ns, i)}
		p.jobs <- func() error {
			m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{"team": "platform"}},
				"data":     map[string]any{"hook.sh": strings.Repeat("echo usage\n", 200)}}
			last, err := json.Marshal(m)
			if err != nil {
				return err
			}
			hand := (&unstructured.Unstructured{Object: m}).DeepCopy()
			hand.SetAnnotations(map[string]string{"team": "platform", budget.LastAppliedKey: string(last) + "\n"})
			if _, err := dyn.Resource(cmGVR).Namespace(ns).Create(ctx, hand, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
				return err
			}
			argo := (&unstructured.Unstructured{Object: m}).DeepCopy()
			argo.SetAnnotations(map[string]string{"team": "platform", argoapp.AnnotationTrackingID: appName(ns, i) + ":/ConfigMap:" + ns + "/" + name})
			_, err = dyn.Resource(cmGVR).Namespace(ns).Apply(ctx, name, argo, metav1.ApplyOptions{FieldManager: finalize.ArgoCDManager, Force: true})
			return err
		}
	}
	return objs, p.wait()
}

// finalizePlan writes the plan finalize reads and the Applications, Synced
// and Healthy after a successful sync, as Argo CD's controller would leave
// them.
func finalizePlan(ctx context.Context, b *bench, dyn dynamic.Interface, objs []plan.Object) (string, error) {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Cluster: plan.Cluster{Server: b.cp.Server},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey, Namespace: argoNS, Version: "v2.14.21", VersionSource: "bench"}}
	byApp := map[string]*plan.Application{}
	for _, o := range objs {
		a := byApp[o.App]
		if a == nil {
			p.Applications = append(p.Applications, plan.Application{Name: o.App, Namespace: o.Namespace, Project: "default", Source: "export", SourcePath: "adopted/" + o.App})
			a = &p.Applications[len(p.Applications)-1]
			byApp[o.App] = a
		}
		a.Objects = append(a.Objects, o.Ref.String())
		p.Objects = append(p.Objects, o)
	}
	status := map[string]any{
		"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)",
			"operation": map[string]any{"sync": map[string]any{"revision": "0123456789abcdef"}},
			"startedAt": "2026-09-08T10:00:00Z", "finishedAt": "2026-09-08T10:00:05Z",
			"syncResult": map[string]any{"revision": "0123456789abcdef"}},
		"history": []any{map[string]any{"id": int64(0), "revision": "0123456789abcdef", "deployedAt": "2026-09-08T10:00:05Z"}},
		"sync":    map[string]any{"status": "Synced", "revision": "0123456789abcdef"},
		"health":  map[string]any{"status": "Healthy"},
	}
	for _, a := range p.Applications {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": a.Name, "namespace": argoNS},
			"spec": map[string]any{"project": "default",
				"source":      map[string]any{"repoURL": "https://git.example.invalid/gitops.git", "path": a.SourcePath, "targetRevision": "main"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": a.Namespace}},
			"status": status,
		}}
		if _, err := dyn.Resource(argoapp.ApplicationGVR).Namespace(argoNS).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	path := filepath.Join(b.cp.Dir, "finalize-plan.yaml")
	return path, plan.WriteFile(path, p)
}

// installApplicationCRD applies Argo CD v2.14.21's Application CRD from
// the module cache, waits until it is served, and creates its namespace.
func installApplicationCRD(ctx context.Context, b *bench) error {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v2@v2.14.21").Output()
	if err != nil {
		return fmt.Errorf("go mod download argo-cd: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download argo-cd: no Dir in %s", out)
	}
	crd, err := os.ReadFile(filepath.Join(mod.Dir, "manifests", "crds", "application-crd.yaml"))
	if err != nil {
		return err
	}
	if out, err := b.cp.Kubectl(ctx, crd, "apply", "--server-side", "--field-manager=bench", "-f", "-"); err != nil {
		return fmt.Errorf("install the Application CRD: %v: %s", err, out)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := b.cs.Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the Application CRD was not served: %w", err)
	}
	_, err = b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func stillAnnotated(ctx context.Context, b *bench, ns string) (int, error) {
	l, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, cm := range l.Items {
		if _, ok := cm.Annotations[budget.LastAppliedKey]; ok {
			n++
		}
	}
	return n, nil
}
