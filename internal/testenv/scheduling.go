package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Scheduling is a running kube-scheduler and kube-controller-manager against
// a ControlPlane: Deployments get ReplicaSets and pods, and pods are placed
// on (or refused by) Node objects registered with RegisterNode. There is no
// kubelet: nothing runs, and a bound pod stays as its status says.
type Scheduling struct {
	procs []*process
}

// StartScheduling starts kube-controller-manager and kube-scheduler as the
// control plane's admin, with their secure ports on random loopback ports.
// The node-lifecycle and taint-eviction controllers are off: with no kubelet
// they would mark every node unreachable, taint it and evict its pods.
// Both die with the test process; Stop ends them earlier. controllerArgs
// are added to kube-controller-manager's flags (for example a shorter
// --horizontal-pod-autoscaler-sync-period).
func StartScheduling(ctx context.Context, cp *ControlPlane, controllerArgs ...string) (*Scheduling, error) {
	s := &Scheduling{}
	components := []string{"kube-controller-manager", "kube-scheduler"}
	ports, err := freePorts(len(components))
	if err != nil {
		return nil, err
	}
	for i, name := range components {
		args := []string{
			"--kubeconfig=" + cp.Kubeconfig,
			"--authentication-kubeconfig=" + cp.Kubeconfig,
			"--authorization-kubeconfig=" + cp.Kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", ports[i]),
			"--cert-dir=" + filepath.Join(cp.Dir, name+"-certs"),
		}
		if name == "kube-controller-manager" {
			args = append(args,
				"--controllers=*,-node-lifecycle-controller,-taint-eviction-controller,-device-taint-eviction-controller",
				"--service-account-private-key-file="+filepath.Join(cp.Dir, "sa.key"),
				"--use-service-account-credentials=false",
			)
			args = append(args, controllerArgs...)
		}
		p, err := cp.spawn(Options{}, name, args...)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.procs = append(s.procs, p)
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[i])
		if err := waitFor(ctx, 120*time.Second, p, func() error { return httpOK(url) }); err != nil {
			s.Stop()
			return nil, fmt.Errorf("%s did not become healthy: %w; log tail: %s", name, err, cp.LogTail(name, 2000))
		}
	}
	return s, nil
}

// Stop ends the scheduler and the controller manager. Safe to call twice.
func (s *Scheduling) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
}

// httpOK GETs url (self-signed TLS allowed) and wants 200.
func httpOK(url string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// RegisterNode creates a Node with no kubelet behind it: Ready, schedulable,
// with capacity and allocatable set to cpu and memory (quantities such as
// "2" and "1936Mi") and room for 110 pods. The Node carries the label
// testenv.adopt.dev/node=<name> so a workload can be pinned to it.
// Registering an existing node again resets its status.
func (cp *ControlPlane) RegisterNode(ctx context.Context, name, cpu, memory string) (*corev1.Node, error) {
	cpuQ, err := resource.ParseQuantity(cpu)
	if err != nil {
		return nil, fmt.Errorf("node %s: cpu %q: %w", name, cpu, err)
	}
	memQ, err := resource.ParseQuantity(memory)
	if err != nil {
		return nil, fmt.Errorf("node %s: memory %q: %w", name, memory, err)
	}
	nodes := cp.Clientset().CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", NodeLabel: name},
	}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", name, err)
	}
	list := corev1.ResourceList{
		corev1.ResourceCPU:    cpuQ,
		corev1.ResourceMemory: memQ,
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	// Both writes carry the resourceVersion just read, so a concurrent
	// writer (the controller manager's ttl controller annotates new nodes)
	// makes them fail; then read again and retry.
	node, err = updateNode(ctx, cp, node, nodes.UpdateStatus, func(node *corev1.Node) bool {
		now := metav1.Now()
		node.Status.Capacity = list
		node.Status.Allocatable = list
		node.Status.Phase = corev1.NodeRunning
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "registered by testenv; no kubelet", LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("set status of node %s: %w", name, err)
	}
	// The apiserver's TaintNodesByCondition admission taints a new node
	// not-ready; the node-lifecycle controller (off here) would lift it once
	// Ready is true. Lift it the same way.
	node, err = updateNode(ctx, cp, node, nodes.Update, func(node *corev1.Node) bool {
		var keep []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady {
				keep = append(keep, t)
			}
		}
		if len(keep) == len(node.Spec.Taints) {
			return false
		}
		node.Spec.Taints = keep
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("remove the not-ready taint from node %s: %w", name, err)
	}
	return node, nil
}

// NodeLabel is the label RegisterNode puts on each node, valued with its name.
const NodeLabel = "testenv.adopt.dev/node"

// FillerNamespace holds the pods FillNode binds.
const FillerNamespace = "kube-system"

// FillNode binds a "filler" pod to node that requests fraction (0 < f < 1)
// of its allocatable memory, as the system components and other workloads
// did on the post-mortem's e2-small nodes (about 0.97). The pod is bound
// directly (spec.nodeName), so the scheduler counts it without placing it,
// and its status is set to Running. It lives in FillerNamespace as
// filler-<node>; calling again with the same node returns the existing pod.
func (cp *ControlPlane) FillNode(ctx context.Context, node string, fraction float64) (*corev1.Pod, error) {
	if fraction <= 0 || fraction >= 1 {
		return nil, fmt.Errorf("fill node %s: fraction %v must be between 0 and 1", node, fraction)
	}
	cs := cp.Clientset()
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("fill node %s: %w; register it first with RegisterNode", node, err)
	}
	alloc := n.Status.Allocatable[corev1.ResourceMemory]
	mem := resource.NewQuantity(int64(float64(alloc.Value())*fraction), resource.BinarySI)
	pods := cs.CoreV1().Pods(FillerNamespace)
	name := "filler-" + node
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "filler", NodeLabel: node}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name:  "filler",
				Image: "registry.invalid/filler:never-pulled",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceMemory: *mem,
					corev1.ResourceCPU:    resource.MustParse("10m"),
				}},
			}},
		},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return pods.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create filler pod %s/%s on node %s: %w", FillerNamespace, name, node, err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("set status of filler pod %s/%s: %w", FillerNamespace, name, err)
	}
	return pod, nil
}

// WaitUnschedulable waits until a pod in namespace ns matching
// labelSelector has PodScheduled=False with reason Unschedulable, and
// returns the scheduler's message, for example "0/1 nodes are available:
// 1 Insufficient memory. …". It waits as long as ctx allows.
func (cp *ControlPlane) WaitUnschedulable(ctx context.Context, ns, labelSelector string) (string, error) {
	pods := cp.Clientset().CoreV1().Pods(ns)
	var msg string
	var seen []string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labelSelector})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					seen = append(seen, fmt.Sprintf("%s: %s/%s %s", p.Name, c.Status, c.Reason, c.Message))
					if c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
						msg = c.Message
						return true, nil
					}
				}
			}
			if len(p.Status.Conditions) == 0 {
				seen = append(seen, p.Name+": no conditions yet")
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("no unschedulable pod in namespace %s matching %q (%v); pods seen: [%s]", ns, labelSelector, err, strings.Join(seen, "; "))
	}
	return msg, nil
}

// updateNode applies change to node and writes it with write, guarded by
// its resourceVersion; on a conflict it reads the node again and retries.
// change reports whether there is anything to write.
func updateNode(ctx context.Context, cp *ControlPlane, node *corev1.Node,
	write func(context.Context, *corev1.Node, metav1.UpdateOptions) (*corev1.Node, error),
	change func(*corev1.Node) bool) (*corev1.Node, error) {
	nodes := cp.Clientset().CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !change(node) {
			return nil
		}
		updated, err := write(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := nodes.Get(ctx, node.Name, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
			return err
		}
		if err == nil {
			node = updated
		}
		return err
	})
	return node, err
}
