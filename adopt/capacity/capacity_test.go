package capacity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

const mi = int64(1 << 20)

func node(name, cpu, mem string, mod ...func(*corev1.Node)) corev1.Node {
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")}
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Allocatable: l, Capacity: l,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mod {
		m(&n)
	}
	return n
}

func container(name, cpu, mem string) corev1.Container {
	r := corev1.ResourceList{}
	if cpu != "" {
		r[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		r[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.Container{Name: name, Image: "registry.invalid/" + name, Resources: corev1.ResourceRequirements{Requests: r}}
}

func pod(ns, name, nodeName string, phase corev1.PodPhase, lbl map[string]string, cs ...corev1.Container) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: cs},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func template(cs ...corev1.Container) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}
}

// TestFit covers the scheduler's arithmetic and filters on small cases.
func TestFit(t *testing.T) {
	// The post-mortem's e2-small: 1936Mi allocatable, 97% requested.
	alloc := 1936 * mi
	filler := int64(float64(alloc) * 0.97)
	fillerPod := pod("kube-system", "filler", "node-a", corev1.PodRunning, nil, container("filler", "10m", resource.NewQuantity(filler, resource.BinarySI).String()))
	app := map[string]string{"app": "litellm"}
	cases := []struct {
		name        string
		nodes       []corev1.Node
		pods        []corev1.Pod
		w           Workload
		wantPending int
		wantReasons string
		wantSummary string
	}{{
		name:        "post-mortem: 97% allocated node refuses a 256Mi pod",
		nodes:       []corev1.Node{node("node-a", "2", "1936Mi")},
		pods:        []corev1.Pod{fillerPod},
		w:           Workload{Replicas: 3, Template: template(container("litellm", "", "256Mi"))},
		wantPending: 3,
		wantReasons: "0/1 nodes are available: 1 Insufficient memory.",
		wantSummary: "rollout needs 256Mi per pod; the most free on any node is 58Mi (node-a is 97% allocated); 3 of 3 pods would stay Pending",
	}, {
		name:        "the replaced pods' requests are freed; terminal and unbound pods are not counted",
		nodes:       []corev1.Node{node("node-a", "2", "1Gi")},
		pods:        []corev1.Pod{pod("ns", "old-1", "node-a", corev1.PodRunning, app, container("c", "", "400Mi")), pod("ns", "old-2", "node-a", corev1.PodRunning, app, container("c", "", "400Mi")), pod("ns", "done", "node-a", corev1.PodSucceeded, nil, container("c", "", "900Mi")), pod("ns", "pending", "", corev1.PodPending, nil, container("c", "", "900Mi"))},
		w:           Workload{Namespace: "ns", Replicas: 2, Template: template(container("c", "", "500Mi")), Replaces: labels.SelectorFromSet(app)},
		wantSummary: "rollout needs 500Mi per pod; the most free on any node is 1Gi (node-a is 0% allocated); all 2 pods fit",
	}, {
		name:        "a scale-up without replacement counts the running pods",
		nodes:       []corev1.Node{node("node-a", "2", "1Gi")},
		pods:        []corev1.Pod{pod("ns", "old-1", "node-a", corev1.PodRunning, app, container("c", "", "400Mi")), pod("ns", "old-2", "node-a", corev1.PodRunning, app, container("c", "", "400Mi"))},
		w:           Workload{Namespace: "ns", Replicas: 1, Template: template(container("c", "", "400Mi"))},
		wantPending: 1,
		wantReasons: "0/1 nodes are available: 1 Insufficient memory.",
	}, {
		name:        "each node takes what fits (324Mi and 512Mi free); 1 of 3 stays Pending",
		nodes:       []corev1.Node{node("node-a", "2", "1Gi"), node("node-b", "2", "512Mi")},
		pods:        []corev1.Pod{pod("x", "p", "node-a", corev1.PodRunning, nil, container("c", "", "700Mi"))},
		w:           Workload{Replicas: 3, Template: template(container("c", "", "300Mi"))},
		wantPending: 1,
		wantReasons: "0/2 nodes are available: 2 Insufficient memory.",
		wantSummary: "rollout needs 300Mi per pod; the most free on any node is 512Mi (node-b is 0% allocated); 1 of 3 pods would stay Pending",
	}, {
		name:        "cpu counts too",
		nodes:       []corev1.Node{node("node-a", "1", "8Gi")},
		pods:        []corev1.Pod{pod("x", "p", "node-a", corev1.PodRunning, nil, container("c", "900m", "1Gi"))},
		w:           Workload{Replicas: 1, Template: template(container("c", "250m", "1Gi"))},
		wantPending: 1,
		wantReasons: "0/1 nodes are available: 1 Insufficient cpu.",
		wantSummary: "rollout needs 1Gi and 250m CPU per pod; the most free on any node is 7Gi (node-a is 13% allocated, 100m CPU free); 1 of 1 pods would stay Pending",
	}, {
		name: "filters: unschedulable, untolerated taint, NotReady, nodeSelector",
		nodes: []corev1.Node{
			node("cordoned", "2", "4Gi", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
			node("gpu", "2", "4Gi", func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
			}),
			node("spot", "2", "4Gi", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }),
			node("other-pool", "2", "4Gi"),
		},
		w: Workload{Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "small"}, Containers: []corev1.Container{container("c", "", "64Mi")}}}},
		wantPending: 1,
		wantReasons: "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were not ready, 1 node(s) were unschedulable.",
		wantSummary: "rollout needs 64Mi per pod; no node admits the pods (4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), 1 node(s) were not ready, 1 node(s) were unschedulable.); 1 of 1 pods would stay Pending",
	}, {
		name: "a tolerated taint admits",
		nodes: []corev1.Node{node("gpu", "2", "4Gi", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		})},
		w: Workload{Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{container("c", "", "64Mi")}}}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Fit(&Snapshot{Nodes: c.nodes, Pods: c.pods}, c.w)
			if v.Pending != c.wantPending || v.Placed != c.w.Replicas-c.wantPending || v.Fits != (c.wantPending == 0) {
				t.Errorf("placed %d, pending %d, fits %v; want pending %d", v.Placed, v.Pending, v.Fits, c.wantPending)
			}
			if got := v.SchedulerMessage(); got != c.wantReasons {
				t.Errorf("reasons %q\n want %q", got, c.wantReasons)
			}
			if c.wantSummary != "" && v.Summary != c.wantSummary {
				t.Errorf("summary %q\n want %q", v.Summary, c.wantSummary)
			}
		})
	}
}

// TestPodRequests: containers add up; an init container counts when it is
// the largest; sidecars add to both; overhead adds; limits stand in for
// missing requests.
func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container("proxy", "100m", "64Mi")
	sidecar.RestartPolicy = &always
	limitsOnly := corev1.Container{Name: "l", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want Resources
	}{
		{"containers add", corev1.PodSpec{Containers: []corev1.Container{container("a", "100m", "128Mi"), container("b", "50m", "64Mi")}}, Resources{192 * mi, 150}},
		{"large init container wins", corev1.PodSpec{InitContainers: []corev1.Container{container("migrate", "1", "512Mi")}, Containers: []corev1.Container{container("a", "100m", "128Mi")}}, Resources{512 * mi, 1000}},
		{"sidecar adds to containers and to later init containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar, container("migrate", "100m", "480Mi")},
			Containers:     []corev1.Container{container("a", "100m", "128Mi")}}, Resources{544 * mi, 200}},
		{"overhead", corev1.PodSpec{Overhead: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}, Containers: []corev1.Container{container("a", "", "128Mi")}}, Resources{144 * mi, 0}},
		{"limit without request", corev1.PodSpec{Containers: []corev1.Container{limitsOnly}}, Resources{32 * mi, 0}},
	}
	for _, c := range cases {
		if got := PodRequests(&c.spec); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestEntrypointWarnings: the post-mortem's doubled entrypoint is flagged,
// ordinary commands are not.
func TestEntrypointWarnings(t *testing.T) {
	c := func(image string, command, args []string) corev1.Container {
		return corev1.Container{Name: "main", Image: image, Command: command, Args: args}
	}
	cases := []struct {
		c    corev1.Container
		want string
	}{
		{c("ghcr.io/berriai/litellm:main-stable", nil, []string{"litellm", "--config", "/app/config.yaml"}), `args start with "litellm", the image's name`},
		{c("ghcr.io/berriai/litellm@sha256:abc", []string{"litellm"}, []string{"litellm", "--config", "c.yaml"}), `starts "litellm" "litellm"`},
		{c("ghcr.io/berriai/litellm:main", []string{"/app/.venv/bin/litellm"}, []string{"--config", "c.yaml"}), ""},
		{c("nginx:1.27", []string{"nginx", "-g", "daemon off;"}, nil), ""},
		{c("busybox", nil, []string{"sleep", "3600"}), ""},
	}
	for _, tc := range cases {
		got := EntrypointWarnings(&corev1.PodSpec{Containers: []corev1.Container{tc.c}})
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s %q %q: unexpected warning %q", tc.c.Image, tc.c.Command, tc.c.Args, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s %q %q: warnings %q, want one containing %q", tc.c.Image, tc.c.Command, tc.c.Args, got, tc.want)
		}
	}
}
