package export

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// Options tune Clean.
type Options struct {
	// InstanceLabelKey is Argo CD's instance label, dropped from exports
	// (default app.kubernetes.io/instance).
	InstanceLabelKey string
}

// droppedMetadata are server-owned metadata fields.
var droppedMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "selfLink",
	"managedFields", "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers",
}

// droppedAnnotation reports annotations that record state rather than intent.
func droppedAnnotation(k string) bool {
	switch k {
	case budget.LastAppliedKey,
		argoapp.AnnotationTrackingID,
		argoapp.AnnotationInstallationID,
		"deployment.kubernetes.io/revision",
		"volume.beta.kubernetes.io/storage-provisioner",
		"volume.kubernetes.io/storage-provisioner",
		"volume.kubernetes.io/selected-node",
		"control-plane.alpha.kubernetes.io/leader":
		return true
	}
	return strings.HasPrefix(k, "pv.kubernetes.io/")
}

// Clean returns a clean copy of a live object. Secrets must go through
// SecretPlaceholder instead; Clean refuses them.
func Clean(live *unstructured.Unstructured, o Options) (*unstructured.Unstructured, error) {
	gvk := live.GroupVersionKind()
	if redact.IsSecret(gvk.Group, gvk.Kind) {
		return nil, fmt.Errorf("Secret %s/%s: refusing to export a Secret's values; use a placeholder or a secret-management source", live.GetNamespace(), live.GetName())
	}
	u := live.DeepCopy()
	obj := u.Object
	delete(obj, "status")
	cleanMetadata(obj, o)
	switch {
	case gvk.Group == "" && gvk.Kind == "Service":
		cleanService(obj)
	case gvk.Group == "" && gvk.Kind == "Namespace":
		cleanNamespace(obj)
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		dropIfEqual(obj, "spec", "progressDeadlineSeconds", int64(600))
		dropIfEqual(obj, "spec", "revisionHistoryLimit", int64(10))
		if s, _, _ := unstructured.NestedMap(obj, "spec", "strategy"); equalJSON(s, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}) {
			unstructured.RemoveNestedField(obj, "spec", "strategy")
		}
	case gvk.Group == "apps" && gvk.Kind == "StatefulSet":
		dropIfEqual(obj, "spec", "revisionHistoryLimit", int64(10))
		dropIfEqual(obj, "spec", "podManagementPolicy", "OrderedReady")
		if s, _, _ := unstructured.NestedMap(obj, "spec", "updateStrategy"); equalJSON(s, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": int64(0)}}) {
			unstructured.RemoveNestedField(obj, "spec", "updateStrategy")
		}
		if vcts, ok, _ := unstructured.NestedSlice(obj, "spec", "volumeClaimTemplates"); ok {
			for _, v := range vcts {
				if m, ok := v.(map[string]any); ok {
					delete(m, "status")
					unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
				}
			}
			_ = unstructured.SetNestedSlice(obj, vcts, "spec", "volumeClaimTemplates")
		}
	case gvk.Group == "apps" && (gvk.Kind == "DaemonSet" || gvk.Kind == "ReplicaSet"):
		dropIfEqual(obj, "spec", "revisionHistoryLimit", int64(10))
	case gvk.Group == "batch" && gvk.Kind == "CronJob":
		dropIfEqual(obj, "spec", "concurrencyPolicy", "Allow")
		dropIfEqual(obj, "spec", "suspend", false)
		dropIfEqual(obj, "spec", "successfulJobsHistoryLimit", int64(3))
		dropIfEqual(obj, "spec", "failedJobsHistoryLimit", int64(1))
		unstructured.RemoveNestedField(obj, "spec", "jobTemplate", "metadata", "creationTimestamp")
		if m, ok, _ := unstructured.NestedMap(obj, "spec", "jobTemplate", "metadata"); ok && len(m) == 0 {
			unstructured.RemoveNestedField(obj, "spec", "jobTemplate", "metadata")
		}
	}
	for _, p := range podTemplatePaths(gvk) {
		cleanPodTemplate(obj, p)
	}
	if gvk.Group == "" && gvk.Kind == "Pod" {
		if spec, ok, _ := unstructured.NestedMap(obj, "spec"); ok {
			cleanPodSpec(spec)
			delete(spec, "nodeName")
			_ = unstructured.SetNestedMap(obj, spec, "spec")
		}
	}
	return u, nil
}

func cleanMetadata(obj map[string]any, o Options) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	for _, k := range droppedMetadata {
		delete(md, k)
	}
	if md["name"] != nil {
		delete(md, "generateName")
	}
	if ann, ok := md["annotations"].(map[string]any); ok {
		for k := range ann {
			if droppedAnnotation(k) {
				delete(ann, k)
			}
		}
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if lbl, ok := md["labels"].(map[string]any); ok {
		key := o.InstanceLabelKey
		if key == "" {
			key = "app.kubernetes.io/instance"
		}
		delete(lbl, key)
		if len(lbl) == 0 {
			delete(md, "labels")
		}
	}
}

func cleanService(obj map[string]any) {
	spec, ok, _ := unstructured.NestedMap(obj, "spec")
	if !ok {
		return
	}
	// Allocated addresses go; a headless Service keeps clusterIP: None.
	if ip, _ := spec["clusterIP"].(string); ip != "None" {
		delete(spec, "clusterIP")
	}
	delete(spec, "clusterIPs")
	if spec["ipFamilyPolicy"] == "SingleStack" {
		delete(spec, "ipFamilyPolicy")
		delete(spec, "ipFamilies")
	}
	if spec["sessionAffinity"] == "None" {
		delete(spec, "sessionAffinity")
	}
	if spec["internalTrafficPolicy"] == "Cluster" {
		delete(spec, "internalTrafficPolicy")
	}
	typ, _ := spec["type"].(string)
	needsNodePort := typ == "NodePort" || typ == "LoadBalancer"
	if !needsNodePort {
		if ports, ok := spec["ports"].([]any); ok {
			for _, p := range ports {
				if m, ok := p.(map[string]any); ok {
					delete(m, "nodePort")
				}
			}
		}
	}
	if typ != "LoadBalancer" {
		delete(spec, "healthCheckNodePort")
	}
	if typ == "NodePort" && spec["externalTrafficPolicy"] == "Cluster" {
		delete(spec, "externalTrafficPolicy")
	}
	obj["spec"] = spec
}

func cleanNamespace(obj map[string]any) {
	if f, ok, _ := unstructured.NestedStringSlice(obj, "spec", "finalizers"); ok && len(f) == 1 && f[0] == "kubernetes" {
		unstructured.RemoveNestedField(obj, "spec", "finalizers")
	}
	if s, ok, _ := unstructured.NestedMap(obj, "spec"); ok && len(s) == 0 {
		delete(obj, "spec")
	}
	unstructured.RemoveNestedField(obj, "metadata", "labels", "kubernetes.io/metadata.name")
	if l, ok, _ := unstructured.NestedMap(obj, "metadata", "labels"); ok && len(l) == 0 {
		unstructured.RemoveNestedField(obj, "metadata", "labels")
	}
}

// podTemplatePaths locates pod templates in the workload kinds.
func podTemplatePaths(gvk schema.GroupVersionKind) [][]string {
	switch {
	case gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet" || gvk.Kind == "ReplicaSet"),
		gvk.Group == "batch" && gvk.Kind == "Job",
		gvk.Group == "" && (gvk.Kind == "ReplicationController" || gvk.Kind == "PodTemplate"):
		if gvk.Kind == "PodTemplate" {
			return [][]string{{"template"}}
		}
		return [][]string{{"spec", "template"}}
	case gvk.Group == "batch" && gvk.Kind == "CronJob":
		return [][]string{{"spec", "jobTemplate", "spec", "template"}}
	}
	return nil
}

func cleanPodTemplate(obj map[string]any, path []string) {
	tpl, ok, _ := unstructured.NestedMap(obj, path...)
	if !ok {
		return
	}
	if md, ok := tpl["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
		if len(md) == 0 {
			delete(tpl, "metadata")
		}
	}
	if spec, ok := tpl["spec"].(map[string]any); ok {
		cleanPodSpec(spec)
	}
	_ = unstructured.SetNestedMap(obj, tpl, path...)
}

// cleanPodSpec drops values the API server or admission filled in.
func cleanPodSpec(spec map[string]any) {
	dropIfEqualMap(spec, "dnsPolicy", "ClusterFirst")
	dropIfEqualMap(spec, "restartPolicy", "Always")
	dropIfEqualMap(spec, "schedulerName", "default-scheduler")
	dropIfEqualMap(spec, "terminationGracePeriodSeconds", int64(30))
	if sc, ok := spec["securityContext"].(map[string]any); ok && len(sc) == 0 {
		delete(spec, "securityContext")
	}
	if sa, ok := spec["serviceAccount"]; ok && sa == spec["serviceAccountName"] {
		delete(spec, "serviceAccount") // deprecated alias the server copies
	}
	// The default ServiceAccount token volume (kube-api-access-*) is
	// injected by admission into Pods; it never belongs in Git.
	tokenVol := map[string]bool{}
	if vols, ok := spec["volumes"].([]any); ok {
		kept := vols[:0]
		for _, v := range vols {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if _, projected := m["projected"]; projected && strings.HasPrefix(name, "kube-api-access-") {
				tokenVol[name] = true
				continue
			}
			kept = append(kept, v)
		}
		if len(kept) == 0 {
			delete(spec, "volumes")
		} else {
			spec["volumes"] = kept
		}
	}
	for _, key := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _ := spec[key].([]any)
		for _, c := range cs {
			m, _ := c.(map[string]any)
			if m == nil {
				continue
			}
			dropIfEqualMap(m, "terminationMessagePath", "/dev/termination-log")
			dropIfEqualMap(m, "terminationMessagePolicy", "File")
			if r, ok := m["resources"].(map[string]any); ok && len(r) == 0 {
				delete(m, "resources")
			}
			if mounts, ok := m["volumeMounts"].([]any); ok {
				kept := mounts[:0]
				for _, vm := range mounts {
					mm, _ := vm.(map[string]any)
					if n, _ := mm["name"].(string); tokenVol[n] {
						continue
					}
					kept = append(kept, vm)
				}
				if len(kept) == 0 {
					delete(m, "volumeMounts")
				} else {
					m["volumeMounts"] = kept
				}
			}
		}
	}
}

func dropIfEqual(obj map[string]any, parent, key string, v any) {
	m, ok := obj[parent].(map[string]any)
	if ok {
		dropIfEqualMap(m, key, v)
	}
}

func dropIfEqualMap(m map[string]any, key string, v any) {
	if got, ok := m[key]; ok && got == v {
		delete(m, key)
	}
}

func equalJSON(a, b map[string]any) bool {
	return a != nil && reflect.DeepEqual(a, b)
}
