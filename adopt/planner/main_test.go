package planner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// handApply hand-applies objects (maps, as JSON) with the real kubectl apply.
func handApply(t *testing.T, ctx context.Context, objs ...map[string]any) {
	t.Helper()
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := cp.Kubectl(ctx, b, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v: %s", err, out)
		}
	}
}

// widgets installs a namespaced custom resource Widget of group whose
// spec holds anything (as Helm values do), and returns its resource.
func widgets(t *testing.T, ctx context.Context, group string) schema.GroupVersionResource {
	t.Helper()
	handApply(t, ctx, map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	})
	if out, err := cp.Kubectl(ctx, nil, "wait", "--for=condition=Established", "crd/widgets."+group, "--timeout=60s"); err != nil {
		t.Fatalf("CRD widgets.%s: %v: %s", group, err, out)
	}
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
}

func widget(group, ns, name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
}

// scan is the plan pipeline's options for the control plane and the
// namespaces, as `adopt plan -n` makes them (no repo).
func scan(t *testing.T, namespaces string, preview bool) planner.Options {
	t.Helper()
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 300
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	must(err)
	mc, err := metadata.NewForConfig(cfg)
	must(err)
	dyn, err := dynamic.NewForConfig(cfg)
	must(err)
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	must(err)
	lists, err := discover.ListClient(cfg)
	must(err)
	kube, err := kubernetes.NewForConfig(cfg)
	must(err)
	return planner.Options{
		Clients: discover.Clients{Discovery: dc, Metadata: mc, Dynamic: dyn, Core: core.CoreV1(), Lists: lists},
		Kube:    kube, Dynamic: dyn, Cluster: plan.Cluster{Server: cfg.Host, Namespace: namespaces},
		ArgoCDNamespace: "argocd", ChunkSize: 500, Preview: preview,
	}
}
