package preview

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/adopt-dev/adopt/adopt/capacity"
)

// templatePath is where a kind keeps its pod template; nil for kinds
// without one. Pods keep their spec at the top.
func templatePath(u *unstructured.Unstructured) []string {
	g := u.GroupVersionKind().Group
	switch {
	case g == "apps" && (u.GetKind() == "Deployment" || u.GetKind() == "StatefulSet" || u.GetKind() == "ReplicaSet" || u.GetKind() == "DaemonSet"):
		return []string{"spec", "template"}
	case g == "batch" && u.GetKind() == "Job":
		return []string{"spec", "template"}
	case g == "batch" && u.GetKind() == "CronJob":
		return []string{"spec", "jobTemplate", "spec", "template"}
	}
	return nil
}

// rollout fills r.Rollout for a workload whose pod template or replicas
// change, checks that the new pods fit, and adds the entrypoint warnings
// for any object with a pod template.
func (p *Previewer) rollout(r *Result, live, synced *unstructured.Unstructured) error {
	var tmpl corev1.PodTemplateSpec
	path := templatePath(synced)
	switch {
	case path != nil:
		m, ok, _ := unstructured.NestedMap(synced.Object, path...)
		if !ok {
			return nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl); err != nil {
			return fmt.Errorf("%s: read the pod template: %w", r.Ref, err)
		}
	case synced.GetKind() == "Pod" && synced.GroupVersionKind().Group == "":
		m, _, _ := unstructured.NestedMap(synced.Object, "spec")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tmpl.Spec); err != nil {
			return fmt.Errorf("%s: read the pod spec: %w", r.Ref, err)
		}
	default:
		return nil
	}
	r.Warnings = append(r.Warnings, capacity.EntrypointWarnings(&tmpl.Spec)...)
	if synced.GroupVersionKind().Group != "apps" {
		return nil
	}

	prefix := strings.Join(path, ".") + "."
	templateChanged := false
	for _, c := range r.Changes {
		if strings.HasPrefix(c.Path, prefix) {
			templateChanged = true
		}
	}
	ro := &Rollout{ReplicasBefore: replicas(live), ReplicasAfter: replicas(synced)}
	if live.GetKind() == "DaemonSet" {
		n, _, _ := unstructured.NestedInt64(live.Object, "status", "desiredNumberScheduled")
		ro.ReplicasBefore, ro.ReplicasAfter = int(n), int(n)
	}
	if !templateChanged && ro.ReplicasBefore == ro.ReplicasAfter {
		return nil
	}
	newPods := ro.ReplicasAfter - ro.ReplicasBefore
	var texts []string
	if templateChanged {
		ro.PodsReplaced = ro.ReplicasAfter
		newPods = ro.ReplicasAfter
		texts = append(texts, fmt.Sprintf("rollout: %d pods replaced", ro.PodsReplaced))
	}
	if ro.ReplicasBefore != ro.ReplicasAfter {
		texts = append(texts, fmt.Sprintf("replicas %d → %d", ro.ReplicasBefore, ro.ReplicasAfter))
	}
	ro.Text = strings.Join(texts, "; ")
	r.Rollout = ro

	switch {
	case p.Capacity == nil || newPods <= 0:
	case live.GetKind() == "DaemonSet":
		r.Notes = append(r.Notes, "capacity not checked: a DaemonSet places one pod per node")
	default:
		w := capacity.Workload{Ref: r.Ref, Namespace: live.GetNamespace(), Template: tmpl, Replicas: newPods}
		if templateChanged {
			sel, _, _ := unstructured.NestedMap(live.Object, "spec", "selector")
			var ls metav1.LabelSelector
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls); err == nil {
				if s, err := metav1.LabelSelectorAsSelector(&ls); err == nil {
					w.Replaces = s
				}
			}
		}
		v := capacity.Fit(p.Capacity, w)
		ro.Capacity = &v
	}
	return nil
}

// replicas is spec.replicas, 1 when unset (the API default).
func replicas(u *unstructured.Unstructured) int {
	n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !ok {
		return 1
	}
	return int(n)
}
