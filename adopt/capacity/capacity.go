// Package capacity answers one question before a rollout: do the new pods
// fit on the nodes, counted the way kube-scheduler counts? For each node it
// takes allocatable memory and CPU minus the requests of the non-terminal
// pods bound to it, checks the node filters the scheduler runs first
// (unschedulable, NoSchedule taints, nodeSelector) plus readiness, and
// places the new pods one by one. It also owns the entrypoint heuristic.
//
// Fit is arithmetic over a Snapshot and never talks to the cluster; Read is
// the one function that lists nodes and pods, and it only reads.
package capacity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Snapshot is the cluster as the scheduler sees it: nodes and the pods
// bound to them.
type Snapshot struct {
	Nodes []corev1.Node
	Pods  []corev1.Pod
}

// Read lists every node and every non-terminal pod. It only reads.
func Read(ctx context.Context, c kubernetes.Interface) (*Snapshot, error) {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes for the capacity check: %w; grant list on nodes or run without --preview", err)
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, fmt.Errorf("list pods for the capacity check: %w; grant list on pods in all namespaces or run without --preview", err)
	}
	return &Snapshot{Nodes: nodes.Items, Pods: pods.Items}, nil
}

// Workload is the set of pods a rollout will create.
type Workload struct {
	// Ref names the workload, group/kind ns/name.
	Ref       string
	Namespace string
	// Template is the new pod template (after the server's defaulting).
	Template corev1.PodTemplateSpec
	// Replicas is how many new pods the rollout creates.
	Replicas int
	// Replaces selects the workload's current pods in Namespace; their
	// requests are freed, because the rollout replaces them. Nil frees none.
	Replaces labels.Selector
}

// Verdict is the answer for one workload.
type Verdict struct {
	Workload string `json:"workload" yaml:"workload"`
	Replicas int    `json:"replicas" yaml:"replicas"`
	// PerPod is what one new pod requests, as the scheduler sums it.
	PerPod Resources `json:"perPod" yaml:"perPod"`
	Fits   bool      `json:"fits" yaml:"fits"`
	Placed int       `json:"placed" yaml:"placed"`
	// Pending is how many new pods no node can take.
	Pending int `json:"pending" yaml:"pending"`
	// Reasons say why the first pod that does not fit was refused, one
	// entry per reason with the number of nodes, in the scheduler's words.
	Reasons []Reason `json:"reasons,omitempty" yaml:"reasons,omitempty"`
	// Nodes are the figures per node before the rollout, by name.
	Nodes []Node `json:"nodes" yaml:"nodes"`
	// Summary is the one-line verdict.
	Summary string `json:"summary" yaml:"summary"`
}

// Resources are memory in bytes and CPU in millicores.
type Resources struct {
	MemoryBytes int64 `json:"memoryBytes" yaml:"memoryBytes"`
	MilliCPU    int64 `json:"milliCPU" yaml:"milliCPU"`
}

// Node is one node's figures before the rollout.
type Node struct {
	Name        string    `json:"name" yaml:"name"`
	Allocatable Resources `json:"allocatable" yaml:"allocatable"`
	Requested   Resources `json:"requested" yaml:"requested"`
	Free        Resources `json:"free" yaml:"free"`
	// MemoryPercent is requested memory as a percentage of allocatable,
	// rounded to the nearest whole percent.
	MemoryPercent int `json:"memoryPercent" yaml:"memoryPercent"`
	// Excluded says why the new pods may not land here at all (the first
	// failing filter), or is empty.
	Excluded string `json:"excluded,omitempty" yaml:"excluded,omitempty"`
}

// Reason is one of the scheduler's refusal reasons and how many nodes gave it.
type Reason struct {
	Reason string `json:"reason" yaml:"reason"`
	Nodes  int    `json:"nodes" yaml:"nodes"`
}

// String is "<nodes> <reason>", as the scheduler counts it.
func (r Reason) String() string { return fmt.Sprintf("%d %s", r.Nodes, r.Reason) }

// The scheduler's refusal reasons, worded as its filter plugins word them.
const (
	ReasonUnschedulable = "node(s) were unschedulable"
	ReasonSelector      = "node(s) didn't match Pod's node affinity/selector"
	ReasonTaint         = "node(s) had untolerated taint(s)"
	ReasonMemory        = "Insufficient memory"
	ReasonCPU           = "Insufficient cpu"
	ReasonPods          = "Too many pods"
	// ReasonNotReady is not a scheduler filter (the scheduler relies on the
	// not-ready taint): a node whose Ready condition is not True takes no
	// pods that could run.
	ReasonNotReady = "node(s) were not ready"
)

// SchedulerMessage renders reasons the way the scheduler's PodScheduled
// condition does: "0/3 nodes are available: 1 Insufficient memory, 2
// node(s) didn't match Pod's node affinity/selector."
func (v Verdict) SchedulerMessage() string {
	if len(v.Reasons) == 0 {
		return ""
	}
	var parts []string
	for _, r := range v.Reasons {
		parts = append(parts, r.String())
	}
	return fmt.Sprintf("0/%d nodes are available: %s.", len(v.Nodes), strings.Join(parts, ", "))
}

// nodeState is a node's running count while new pods are placed.
type nodeState struct {
	node  *corev1.Node
	alloc Resources
	used  Resources
	pods  int64
	max   int64
}

// Fit places w's new pods on the snapshot's nodes, one at a time, each on
// the admissible node with the most free memory (the scheduler's default
// scoring prefers the least allocated node), and reports how many fit.
func Fit(s *Snapshot, w Workload) Verdict {
	need := PodRequests(&w.Template.Spec)
	v := Verdict{Workload: w.Ref, Replicas: w.Replicas, PerPod: need}
	states := make([]*nodeState, 0, len(s.Nodes))
	byName := map[string]*nodeState{}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		st := &nodeState{node: n, alloc: resourcesOf(n.Status.Allocatable), max: n.Status.Allocatable.Pods().Value()}
		states = append(states, st)
		byName[n.Name] = st
	}
	sort.Slice(states, func(i, j int) bool { return states[i].node.Name < states[j].node.Name })
	for i := range s.Pods {
		p := &s.Pods[i]
		st := byName[p.Spec.NodeName]
		if st == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if w.Replaces != nil && p.Namespace == w.Namespace && w.Replaces.Matches(labels.Set(p.Labels)) {
			continue
		}
		r := PodRequests(&p.Spec)
		st.used.MemoryBytes += r.MemoryBytes
		st.used.MilliCPU += r.MilliCPU
		st.pods++
	}
	for _, st := range states {
		why, detail := excluded(st.node, &w.Template)
		n := Node{Name: st.node.Name, Allocatable: st.alloc, Requested: st.used, Free: free(st), Excluded: why + detail}
		if st.alloc.MemoryBytes > 0 {
			n.MemoryPercent = int((st.used.MemoryBytes*100 + st.alloc.MemoryBytes/2) / st.alloc.MemoryBytes)
		}
		v.Nodes = append(v.Nodes, n)
	}
	for i := 0; i < w.Replicas; i++ {
		var best *nodeState
		reasons := map[string]int{}
		for _, st := range states {
			why, _ := excluded(st.node, &w.Template)
			if why == "" {
				why = strings.Join(insufficient(st, need), "\x00")
			}
			if why != "" {
				for _, r := range strings.Split(why, "\x00") {
					reasons[r]++
				}
				continue
			}
			if best == nil || free(st).MemoryBytes > free(best).MemoryBytes {
				best = st
			}
		}
		if best == nil {
			v.Pending++
			if v.Reasons == nil {
				for r, n := range reasons {
					v.Reasons = append(v.Reasons, Reason{Reason: r, Nodes: n})
				}
				// The scheduler sorts its "<count> <reason>" strings.
				sort.Slice(v.Reasons, func(i, j int) bool { return v.Reasons[i].String() < v.Reasons[j].String() })
			}
			continue
		}
		best.used.MemoryBytes += need.MemoryBytes
		best.used.MilliCPU += need.MilliCPU
		best.pods++
		v.Placed++
	}
	v.Fits = v.Pending == 0
	v.Summary = summary(v)
	return v
}

// excluded returns the first node filter that refuses the pod, in the
// scheduler's order (NodeUnschedulable, TaintToleration, NodeAffinity), with
// readiness checked first, and a detail such as the taint; "" when the node
// may take it.
func excluded(n *corev1.Node, t *corev1.PodTemplateSpec) (reason, detail string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return ReasonNotReady, fmt.Sprintf(" (Ready is %s)", c.Status)
		}
	}
	if n.Spec.Unschedulable && !tolerates(t.Spec.Tolerations, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return ReasonUnschedulable, ""
	}
	for _, taint := range n.Spec.Taints {
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(t.Spec.Tolerations, taint) {
			return ReasonTaint, fmt.Sprintf(" {%s: %s}", taint.Key, taint.Value)
		}
	}
	if !labels.SelectorFromSet(t.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
		return ReasonSelector, ""
	}
	return "", ""
}

func tolerates(ts []corev1.Toleration, taint corev1.Taint) bool {
	for i := range ts {
		if ts[i].ToleratesTaint(&taint) {
			return true
		}
	}
	return false
}

// insufficient lists the NodeResourcesFit reasons for need on st.
func insufficient(st *nodeState, need Resources) []string {
	var out []string
	if st.max > 0 && st.pods+1 > st.max {
		out = append(out, ReasonPods)
	}
	f := free(st)
	if need.MilliCPU > 0 && need.MilliCPU > f.MilliCPU {
		out = append(out, ReasonCPU)
	}
	if need.MemoryBytes > 0 && need.MemoryBytes > f.MemoryBytes {
		out = append(out, ReasonMemory)
	}
	return out
}

func free(st *nodeState) Resources {
	return Resources{MemoryBytes: st.alloc.MemoryBytes - st.used.MemoryBytes, MilliCPU: st.alloc.MilliCPU - st.used.MilliCPU}
}

func resourcesOf(l corev1.ResourceList) Resources {
	return Resources{MemoryBytes: l.Memory().Value(), MilliCPU: l.Cpu().MilliValue()}
}

// PodRequests sums a pod's requests the way the scheduler does: the sum of
// its containers and sidecars (restartable init containers), or the largest
// init container plus the sidecars started before it if that is more, plus
// the pod overhead. A container with a limit and no request requests its
// limit, as the API server defaults it.
func PodRequests(spec *corev1.PodSpec) Resources {
	var sum, sidecars, initMax Resources
	for i := range spec.Containers {
		sum = add(sum, containerRequests(&spec.Containers[i]))
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		r := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = add(sum, r)
			sidecars = add(sidecars, r)
			initMax = maxOf(initMax, sidecars)
			continue
		}
		initMax = maxOf(initMax, add(r, sidecars))
	}
	sum = maxOf(sum, initMax)
	return add(sum, resourcesOf(spec.Overhead))
}

func containerRequests(c *corev1.Container) Resources {
	get := func(name corev1.ResourceName) resource.Quantity {
		if q, ok := c.Resources.Requests[name]; ok {
			return q
		}
		return c.Resources.Limits[name]
	}
	mem, cpu := get(corev1.ResourceMemory), get(corev1.ResourceCPU)
	return Resources{MemoryBytes: mem.Value(), MilliCPU: cpu.MilliValue()}
}

func add(a, b Resources) Resources {
	return Resources{MemoryBytes: a.MemoryBytes + b.MemoryBytes, MilliCPU: a.MilliCPU + b.MilliCPU}
}

func maxOf(a, b Resources) Resources {
	return Resources{MemoryBytes: max(a.MemoryBytes, b.MemoryBytes), MilliCPU: max(a.MilliCPU, b.MilliCPU)}
}

// summary is the one-line verdict, for example "rollout needs 256Mi per
// pod; the most free on any node is 58Mi (node-a is 97% allocated); 1 of 1
// pods would stay Pending".
func summary(v Verdict) string {
	needs := Memory(v.PerPod.MemoryBytes)
	if v.PerPod.MilliCPU > 0 {
		needs += " and " + CPU(v.PerPod.MilliCPU) + " CPU"
	}
	s := "rollout needs " + needs + " per pod"
	var best *Node
	for i := range v.Nodes {
		n := &v.Nodes[i]
		if n.Excluded == "" && (best == nil || n.Free.MemoryBytes > best.Free.MemoryBytes) {
			best = n
		}
	}
	if best == nil {
		s += "; no node admits the pods (" + strings.TrimPrefix(v.SchedulerMessage(), "0/") + ")"
	} else {
		s += fmt.Sprintf("; the most free on any node is %s (%s is %d%% allocated", Memory(best.Free.MemoryBytes), best.Name, best.MemoryPercent)
		if v.PerPod.MilliCPU > 0 {
			s += fmt.Sprintf(", %s CPU free", CPU(best.Free.MilliCPU))
		}
		s += ")"
	}
	if v.Pending == 0 {
		return s + fmt.Sprintf("; all %d pods fit", v.Replicas)
	}
	return s + fmt.Sprintf("; %d of %d pods would stay Pending", v.Pending, v.Replicas)
}

// Memory renders bytes from 1Mi up in Mi, rounded down ("58Mi"), unless
// they are a whole binary unit ("256Mi", "1Gi"); smaller amounts exactly.
func Memory(b int64) string {
	if b >= 1<<20 && b%(1<<20) != 0 {
		return fmt.Sprintf("%dMi", b>>20)
	}
	return resource.NewQuantity(b, resource.BinarySI).String()
}

// CPU renders millicores ("250m", "2").
func CPU(m int64) string {
	return resource.NewMilliQuantity(m, resource.DecimalSI).String()
}
