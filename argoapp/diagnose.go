package argoapp

import (
	"context"
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/gitops"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// workloadPods explains the stuck pods of a Deployment, StatefulSet,
// DaemonSet or ReplicaSet, found by its selector.
func workloadPods(ctx context.Context, kube kubernetes.Interface, j *redact.Judge, r ResourceState) []string {
	var sel *metav1.LabelSelector
	apps := kube.AppsV1()
	switch r.Kind {
	case "Deployment":
		if d, err := apps.Deployments(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
			sel = d.Spec.Selector
		}
	case "StatefulSet":
		if d, err := apps.StatefulSets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
			sel = d.Spec.Selector
		}
	case "DaemonSet":
		if d, err := apps.DaemonSets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
			sel = d.Spec.Selector
		}
	case "ReplicaSet":
		if d, err := apps.ReplicaSets(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); err == nil {
			sel = d.Spec.Selector
		}
	}
	if sel == nil {
		return nil
	}
	ls, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil
	}
	pods, err := kube.CoreV1().Pods(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ls.String()})
	if err != nil {
		return []string{"pods not readable: " + gitops.OneLine(err.Error())}
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		probe := ""
		if notReadyRunning(p) {
			probe = lastProbeFailure(ctx, kube, p)
		}
		if why := PodProblem(j, p, probe); why != "" {
			out = append(out, "pod "+p.Name+": "+why)
		}
	}
	return out
}

// PodProblem says in one line why a pod is not ready, or "". probe is the
// latest probe-failure event message, if known. Text from the cluster in
// it has what looks like a secret masked by j (redact.Judge.Mask).
func PodProblem(j *redact.Judge, p *corev1.Pod, probe string) string {
	shown := func(s string) string { return j.Mask(gitops.OneLine(s)) }
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "Pending: " + orUnknown(shown(c.Message))
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			if w.Reason == "CrashLoopBackOff" {
				line := "container " + cs.Name + ": CrashLoopBackOff"
				if t := cs.LastTerminationState.Terminated; t != nil {
					line += fmt.Sprintf(", last exit code %d", t.ExitCode)
					if t.Reason != "" {
						line += " (" + t.Reason + ")"
					}
					if commandMissing(t.Message, t.ExitCode) {
						line += ": the container command does not exist: " + shown(t.Message)
					}
				}
				return line
			}
			if commandMissing(w.Message, 0) {
				return "container " + cs.Name + ": the container command does not exist: " + shown(w.Message)
			}
			return "container " + cs.Name + ": " + w.Reason + ": " + shown(w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			if commandMissing(t.Message, t.ExitCode) {
				return "container " + cs.Name + ": the container command does not exist: " + shown(t.Message)
			}
			return fmt.Sprintf("container %s: exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			line := "container " + cs.Name + ": Running but not Ready"
			switch {
			case probe != "":
				line += ": " + shown(probe)
			case readinessProbe(p, cs.Name) != "":
				line += ": readiness probe " + readinessProbe(p, cs.Name) + " failing"
			}
			return line
		}
	}
	if p.Status.Phase == corev1.PodPending {
		return "Pending: " + orUnknown(shown(p.Status.Reason+" "+p.Status.Message))
	}
	return ""
}

// commandMissing recognises the runtime's answer to a command that does not
// exist (exit code 127, or exec's "not found" messages).
func commandMissing(msg string, code int32) bool {
	return code == 127 || strings.Contains(msg, "executable file not found") ||
		(strings.Contains(msg, "exec") && strings.Contains(msg, "no such file or directory"))
}

func notReadyRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil && !cs.Ready {
			return true
		}
	}
	return false
}

// lastProbeFailure is the message of the pod's latest Unhealthy event.
func lastProbeFailure(ctx context.Context, kube kubernetes.Interface, p *corev1.Pod) string {
	sel := fields.Set{"involvedObject.name": p.Name, "reason": "Unhealthy"}.AsSelector().String()
	evs, err := kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	last := evs.Items[0]
	for _, e := range evs.Items[1:] {
		if e.LastTimestamp.After(last.LastTimestamp.Time) {
			last = e
		}
	}
	return last.Message
}

// readinessProbe describes a container's readiness probe: "http-get :4000/health".
func readinessProbe(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name != container || c.ReadinessProbe == nil {
			continue
		}
		h := c.ReadinessProbe.ProbeHandler
		switch {
		case h.HTTPGet != nil:
			return fmt.Sprintf("http-get :%s%s", h.HTTPGet.Port.String(), h.HTTPGet.Path)
		case h.TCPSocket != nil:
			return "tcp-socket :" + h.TCPSocket.Port.String()
		case h.Exec != nil:
			return "exec " + strings.Join(h.Exec.Command, " ")
		case h.GRPC != nil:
			return fmt.Sprintf("grpc :%d", h.GRPC.Port)
		}
	}
	return ""
}
