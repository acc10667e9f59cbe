package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startTestControlPlane starts a control plane of its own for one test and
// stops it when the test ends. A control plane that cannot start fails the
// test: it is never a skip. When the test fails and ADOPT_TESTENV_LOGS names
// a directory, the components' logs are copied there first.
func startTestControlPlane(t *testing.T) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	cp, err := Start(ctx, Options{})
	if err != nil {
		t.Fatalf("the local control plane did not start: %v", err)
	}
	t.Cleanup(func() {
		if dir := os.Getenv("ADOPT_TESTENV_LOGS"); dir != "" && t.Failed() {
			keepLogs(t, cp.Dir, filepath.Join(dir, nonName.ReplaceAllString(strings.ToLower(t.Name()), "-")))
		}
		cp.Stop()
	})
	t.Logf("control plane %s ready in %s", cp.Server, time.Since(start).Round(time.Millisecond))
	return cp
}

func keepLogs(t *testing.T, from, to string) {
	logs, _ := filepath.Glob(filepath.Join(from, "*.log"))
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Logf("keep logs: %v", err)
		return
	}
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			_ = os.WriteFile(filepath.Join(to, filepath.Base(l)), b, 0o644)
		}
	}
	t.Logf("component logs kept in %s", to)
}

// TestSchedulingInsufficientMemory registers an e2-small-like node with no
// kubelet, binds a filler pod requesting 97% of its memory, hand-applies a
// Deployment with the real kubectl, and expects the real controller manager
// to create its pods and the real scheduler to leave them Pending with
// "Insufficient memory". A Deployment that fits is placed on the same node.
func TestSchedulingInsufficientMemory(t *testing.T) {
	t.Parallel() // on a control plane of its own
	cp := startTestControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	s, err := StartScheduling(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	t.Logf("kube-controller-manager and kube-scheduler healthy in %s", time.Since(start).Round(time.Millisecond))

	node := "e2-small-" + randomToken()[:6]
	if _, err := cp.RegisterNode(ctx, node, "2", "1936Mi"); err != nil {
		t.Fatal(err)
	}
	filler, err := cp.FillNode(ctx, node, 0.97)
	if err != nil {
		t.Fatal(err)
	}
	got := filler.Spec.Containers[0].Resources.Requests.Memory().Value()
	alloc := int64(1936 << 20)
	if want := int64(float64(alloc) * 0.97); got != want {
		t.Fatalf("filler requests %d bytes, want %d", got, want)
	}

	ns := cp.Namespace(t)
	deploy := func(name, memory string) []byte {
		return []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      nodeSelector: {%[3]s: %[4]s}
      containers:
      - name: main
        image: registry.invalid/%[1]s:1
        resources:
          requests: {memory: %[5]s}
`, name, ns, NodeLabel, node, memory))
	}
	if out, err := cp.Kubectl(ctx, deploy("litellm", "256Mi"), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	} else {
		t.Log(strings.TrimSpace(out))
	}
	msg, err := cp.WaitUnschedulable(ctx, ns, "app=litellm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scheduler: %s", msg)
	if !strings.Contains(msg, "Insufficient memory") {
		t.Fatalf("PodScheduled message %q does not say Insufficient memory", msg)
	}

	// A pod that fits in the remaining 3% lands on the same node, so the
	// refusal above is about memory and not about the node.
	if _, err := cp.Kubectl(ctx, deploy("small", "16Mi"), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	pods := cp.Clientset().CoreV1().Pods(ns)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=small"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 && list.Items[0].Spec.NodeName != "" {
			if list.Items[0].Spec.NodeName != node {
				t.Fatalf("small pod bound to %q, want %q", list.Items[0].Spec.NodeName, node)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pod that fits was never bound: %v", ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
