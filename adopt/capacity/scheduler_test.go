package capacity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/capacity"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/internal/testenv"
)

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// TestRolloutDoesNotFitAgreesWithScheduler is the post-mortem's case on the
// real control plane: an e2-small-like node (1936Mi) already 97% requested,
// a second node tainted for other work, and a hand-applied litellm
// Deployment whose three 16Mi pods the real scheduler placed. Git raises
// the request to 256Mi. The preview must say the rollout does not fit, with
// the node's figures; then the same manifest is applied for real, as Argo
// CD would, and the real kube-scheduler's Pending message must give the
// same reasons for the same nodes.
func TestRolloutDoesNotFitAgreesWithScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cp, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatalf("the local control plane did not start: %v", err)
	}
	t.Cleanup(cp.Stop)
	sched, err := testenv.StartScheduling(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Stop()

	const nodeA, nodeB = "e2-small-a", "e2-small-b"
	for _, n := range []string{nodeA, nodeB} {
		if _, err := cp.RegisterNode(ctx, n, "2", "1936Mi"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cp.FillNode(ctx, nodeA, 0.97); err != nil {
		t.Fatal(err)
	}
	// testenv has no taint helper: add one here rather than edit it.
	taint(t, ctx, cp, nodeB, corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule})

	ns := cp.Namespace(t)
	deploy := func(memory string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: litellm
  namespace: %s
spec:
  replicas: 3
  selector:
    matchLabels: {app: litellm}
  template:
    metadata:
      labels: {app: litellm}
    spec:
      containers:
      - name: litellm
        image: registry.invalid/berriai/litellm:main
        resources:
          requests: {memory: %s}
`, ns, memory)
	}
	if _, err := cp.Kubectl(ctx, []byte(deploy("16Mi")), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ctx, cp, ns, "app=litellm", 3, nodeA)

	snap, err := capacity.Read(ctx, cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.RESTConfig())
	live, err := dyn.Resource(deployments).Namespace(ns).Get(ctx, "litellm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	git := parse(t, deploy("256Mi"))
	p := &preview.Previewer{Client: dyn, Capacity: snap}
	r, err := p.Object(ctx, preview.Input{Resource: deployments, Manifest: git, Live: live, TrackingID: "litellm:apps/Deployment:" + ns + "/litellm"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rollout == nil || r.Rollout.Capacity == nil {
		t.Fatalf("no rollout or capacity verdict in %+v", r)
	}
	v := r.Rollout.Capacity
	t.Logf("preview: %s; %s", r.Rollout.Text, v.Summary)
	t.Logf("preview's reasons: %s", v.SchedulerMessage())
	if r.Rollout.Text != "rollout: 3 pods replaced" {
		t.Errorf("rollout %q, want rollout: 3 pods replaced", r.Rollout.Text)
	}
	want := "rollout needs 256Mi per pod; the most free on any node is 58Mi (e2-small-a is 97% allocated); 3 of 3 pods would stay Pending"
	if v.Fits || v.Pending != 3 || v.Summary != want {
		t.Errorf("capacity: fits %v, pending %d, summary %q\n want %q", v.Fits, v.Pending, v.Summary, want)
	}
	if !r.WouldNotFit() || preview.Summarize([]preview.Result{r}).WouldNotFit != 1 {
		t.Errorf("the result does not count as would-not-fit")
	}

	// Now let the real scheduler try: apply Git's manifest the way Argo CD
	// does (server-side, argocd-controller, force).
	body, err := git.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := dyn.Resource(deployments).Namespace(ns).Patch(ctx, "litellm", types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: preview.FieldManager, Force: &force}); err != nil {
		t.Fatal(err)
	}
	msg, err := cp.WaitUnschedulable(ctx, ns, "app=litellm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-scheduler: %s", msg)
	if mine := v.SchedulerMessage(); mine == "" || !strings.HasPrefix(msg, mine) {
		t.Errorf("the scheduler says %q; the preview says %q", msg, mine)
	}
}

// taint adds a taint to a node, retrying when the controller manager
// writes the node at the same time.
func taint(t *testing.T, ctx context.Context, cp *testenv.ControlPlane, name string, tt corev1.Taint) {
	t.Helper()
	nodes := cp.Clientset().CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, tt)
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("taint node %s: %v", name, err)
	}
}

// waitBound waits (as long as ctx allows) until n pods matching selector
// are bound, and checks they are on node.
func waitBound(t *testing.T, ctx context.Context, cp *testenv.ControlPlane, ns, selector string, n int, node string) {
	t.Helper()
	pods := cp.Clientset().CoreV1().Pods(ns)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		bound := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				if p.Spec.NodeName != node {
					t.Fatalf("pod %s bound to %s, want %s", p.Name, p.Spec.NodeName, node)
				}
				bound++
			}
		}
		if bound == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d pods matching %s bound: %v", bound, n, selector, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}
