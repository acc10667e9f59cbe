// Package export turns live objects read from the API server into clean
// manifests for Git: what a person would have written, without what the
// server or a controller added. It drops status, server-owned metadata,
// last-applied copies, Argo CD tracking marks and server-assigned values,
// keeps meaningful empty values (emptyDir: {}), and encodes one object per
// file with a stable field order and a predictable name. It never writes a
// Secret's values anywhere: a Secret becomes at most a placeholder with its
// keys. It reads from the cluster and never writes to it.
package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/pager"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/adopt/yamlenc"
)

// SecretMode says what to do with a Secret.
type SecretMode string

// Secret modes.
const (
	// SecretsSkip leaves Secrets out entirely (the default).
	SecretsSkip SecretMode = "skip"
	// SecretsPlaceholder writes the Secret with its keys and empty values.
	SecretsPlaceholder SecretMode = "placeholder"
)

// PlaceholderAnnotation marks a Secret placeholder written by adopt.
const PlaceholderAnnotation = "adopt.dev/secret-placeholder"

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
		"argocd.argoproj.io/tracking-id",
		"argocd.argoproj.io/installation-id",
		"deployment.kubernetes.io/revision",
		"volume.beta.kubernetes.io/storage-provisioner",
		"volume.kubernetes.io/storage-provisioner",
		"volume.kubernetes.io/selected-node",
		"control-plane.alpha.kubernetes.io/leader":
		return true
	}
	return strings.HasPrefix(k, "pv.kubernetes.io/")
}

// Fetch reads one live object.
func Fetch(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	var r dynamic.ResourceInterface = c.Resource(gvr)
	if namespace != "" {
		r = c.Resource(gvr).Namespace(namespace)
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// listPage bounds a List's page: exported objects can weigh up to the
// 1.5 MB object limit, so pages stay small. ConfigMaps and Secrets are
// paged by bytes (discover.BodyPages), so their pages can hold more.
const (
	listPage     = 100
	bodyListPage = 500
)

// List reads every object of gvr in namespace ("" for all namespaces or a
// cluster-scoped resource) page by page and hands each to fn. With core
// set (a client of discover.ProtobufConfig), core/v1 ConfigMaps and
// Secrets are read as protobuf through it, without their managedFields
// (listCore); everything else as JSON through the dynamic client c.
func List(ctx context.Context, c dynamic.Interface, core corev1client.CoreV1Interface, gvr schema.GroupVersionResource, namespace string, fn func(*unstructured.Unstructured) error) error {
	if kind := bodyKind(gvr); kind != "" && core != nil {
		return listCore(ctx, core, kind, namespace, fn)
	}
	var r dynamic.ResourceInterface = c.Resource(gvr)
	if namespace != "" {
		r = c.Resource(gvr).Namespace(namespace)
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) })
	p.PageSize, p.PageBufferSize = listPage, 1
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("unexpected list item %T", o)
		}
		return fn(u)
	})
}

// bodyKind is the kind of a core/v1 ConfigMap or Secret resource, else "".
func bodyKind(gvr schema.GroupVersionResource) string {
	if gvr.Group != "" || gvr.Version != "v1" {
		return ""
	}
	switch gvr.Resource {
	case "configmaps":
		return "ConfigMap"
	case "secrets":
		return "Secret"
	}
	return ""
}

// listCore lists kind (ConfigMap or Secret) in namespace as protobuf,
// paged by bytes, and hands each item to fn as the dynamic client's JSON
// list gives it, but for managedFields, which it leaves out (Clean drops
// them, and a placeholder never reads them; converting their fieldsV1
// JSON was most of the conversion's cost): the typed object converted to
// an unstructured map, with apiVersion v1 and its kind. Decoding protobuf
// and converting is several times cheaper than decoding JSON into maps.
func listCore(ctx context.Context, core corev1client.CoreV1Interface, kind, namespace string, fn func(*unstructured.Unstructured) error) error {
	p := pager.New(discover.BodyPages(core, kind, namespace, bodyListPage))
	p.PageSize, p.PageBufferSize = bodyListPage, 1
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		return fn(u)
	})
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

// SecretPlaceholder returns a Secret with the live Secret's name, namespace,
// labels, type and keys, and every value empty. Annotations are dropped:
// a Secret's last-applied copy holds its values.
func SecretPlaceholder(live *unstructured.Unstructured, o Options) *unstructured.Unstructured {
	keys := SecretKeys(live)
	data := map[string]any{}
	for _, k := range keys {
		data[k] = ""
	}
	md := map[string]any{"name": live.GetName(), "annotations": map[string]any{PlaceholderAnnotation: "keys only; supply the values from a secret-management source (SealedSecret, ExternalSecret, SOPS)"}}
	if ns := live.GetNamespace(); ns != "" {
		md["namespace"] = ns
	}
	if l := live.GetLabels(); len(l) > 0 {
		lm := map[string]any{}
		for k, v := range l {
			if k != o.InstanceLabelKey && k != "app.kubernetes.io/instance" {
				lm[k] = v
			}
		}
		if len(lm) > 0 {
			md["labels"] = lm
		}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md, "stringData": data}
	if t, ok := live.Object["type"].(string); ok && t != "" {
		obj["type"] = t
	}
	return &unstructured.Unstructured{Object: obj}
}

// SecretKeys lists a Secret's keys (from data and stringData), sorted.
func SecretKeys(live *unstructured.Unstructured) []string {
	seen := map[string]bool{}
	for _, f := range []string{"data", "stringData"} {
		if m, ok := live.Object[f].(map[string]any); ok {
			for k := range m {
				seen[k] = true
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FileName is the predictable file name of an object: <kind>-<name>.yaml,
// with the group added for kinds outside Kubernetes' own groups.
func FileName(group, kind, name string) string {
	k := strings.ToLower(kind)
	if group != "" && strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io") {
		k += "." + group
	}
	return k + "-" + name + ".yaml"
}

// topOrder and metaOrder put the fields people look for first; everything
// else follows in alphabetical order.
var (
	topOrder  = []string{"apiVersion", "kind", "metadata"}
	metaOrder = []string{"name", "namespace", "labels", "annotations"}
)

// Marshal encodes obj as YAML with a stable field order: apiVersion, kind,
// metadata (name, namespace, labels, annotations first), then the rest
// alphabetically at every level. The bytes are yaml.v3's (marshalYAMLv3),
// written by yamlenc; an object with a value yamlenc does not know goes
// through yaml.v3 whole.
func Marshal(obj map[string]any) ([]byte, error) {
	b, err := marshalFast(obj)
	if errors.Is(err, yamlenc.ErrShape) {
		return marshalYAMLv3(obj)
	}
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return b, nil
}

// marshalFast is Marshal through yamlenc: the root and metadata as
// Mappings in Marshal's order, every other map in yaml.v3's.
func marshalFast(obj map[string]any) ([]byte, error) {
	root := yamlenc.Ordered(obj, topOrder)
	for i, p := range root {
		if md, ok := p.Value.(map[string]any); ok && p.Key == "metadata" {
			root[i].Value = yamlenc.Ordered(md, metaOrder)
		}
	}
	w := yamlenc.New()
	w.Buf = make([]byte, 0, 2048) // most manifests, without growing
	if err := w.Doc(reflect.ValueOf(root)); err != nil {
		return nil, err
	}
	return w.Buf, nil
}

// marshalYAMLv3 is Marshal through yaml.v3 alone: the map encoded as a
// node (keys in yaml.v3's order), the root's and metadata's keys moved
// by reorder, the node encoded with an indent of 2.
func marshalYAMLv3(obj map[string]any) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	reorder(&n, topOrder)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "metadata" {
			reorder(n.Content[i+1], metaOrder)
		}
	}
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(&n); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// reorder moves the listed keys of a mapping node to the front, in order;
// the other keys keep their (sorted) order.
func reorder(n *yaml.Node, first []string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	rank := map[string]int{}
	for i, k := range first {
		rank[k] = i
	}
	type pair struct{ k, v *yaml.Node }
	var head, tail []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := pair{n.Content[i], n.Content[i+1]}
		if _, ok := rank[p.k.Value]; ok {
			head = append(head, p)
		} else {
			tail = append(tail, p)
		}
	}
	sort.SliceStable(head, func(i, j int) bool { return rank[head[i].k.Value] < rank[head[j].k.Value] })
	n.Content = n.Content[:0]
	for _, p := range append(head, tail...) {
		n.Content = append(n.Content, p.k, p.v)
	}
}
