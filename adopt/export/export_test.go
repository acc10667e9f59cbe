package export

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: issuers.certs.example.com
spec:
  group: certs.example.com
  scope: Namespaced
  names: {plural: issuers, singular: issuer, kind: Issuer}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

// manifests are applied client-side with the real kubectl, as by hand, so
// the live objects carry last-applied copies, managedFields and defaults.
const manifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web, app.kubernetes.io/instance: old-app}
  annotations: {argocd.argoproj.io/tracking-id: "old-app:apps/Deployment:x/web", team: blue}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        volumeMounts: [{name: scratch, mountPath: /scratch}]
      volumes:
      - name: scratch
        emptyDir: {}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: hook}
data:
  usage_hook.py: |
    def hook(x):
        return x
binaryData:
  blob.bin: AAEC/w==
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: job, image: busybox:1.36, args: [date]}]
---
apiVersion: certs.example.com/v1
kind: Issuer
metadata: {name: self}
spec:
  selfSigned: {}
`

func live(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := Fetch(context.Background(), dyn, gvr, ns, name)
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return u
}

func cleanYAML(t *testing.T, u *unstructured.Unstructured) (map[string]any, string) {
	t.Helper()
	c, err := Clean(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("export is not YAML: %v\n%s", err, b)
	}
	return m, string(b)
}

func has(m map[string]any, path ...string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(m, path...)
	return ok
}

// TestExportRealObjects reads real objects back from the API server and
// asserts, per kind, which fields are dropped and which are kept.
func TestExportRealObjects(t *testing.T) {
	ctx := context.Background()
	if out, err := cp.Kubectl(ctx, []byte(crd), "apply", "-f", "-"); err != nil {
		t.Fatalf("install CRD: %v: %s", err, out)
	}
	if out, err := cp.Kubectl(ctx, nil, "wait", "--for=condition=Established", "crd/issuers.certs.example.com", "--timeout=60s"); err != nil {
		t.Fatalf("CRD not established: %v: %s", err, out)
	}
	ns := cp.Namespace(t)
	if out, err := cp.Kubectl(ctx, []byte(manifests), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	common := func(t *testing.T, m map[string]any, text string) {
		t.Helper()
		for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink"} {
			if has(m, "metadata", f) {
				t.Errorf("metadata.%s kept", f)
			}
		}
		if has(m, "status") || strings.Contains(text, "last-applied-configuration") || strings.Contains(text, "tracking-id") || strings.Contains(text, "app.kubernetes.io/instance") {
			t.Errorf("status, last-applied, tracking id or instance label kept:\n%s", text)
		}
		if !strings.HasPrefix(text, "apiVersion: ") || !strings.Contains(text, "\nkind: ") || !strings.Contains(text, "\nmetadata:\n  name: ") {
			t.Errorf("field order is not apiVersion, kind, metadata.name:\n%s", text)
		}
		if m["metadata"].(map[string]any)["namespace"] != ns {
			t.Errorf("namespace not kept")
		}
	}

	t.Run("Deployment", func(t *testing.T) {
		m, text := cleanYAML(t, live(t, dyn, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web"))
		common(t, m, text)
		vols, _, _ := unstructured.NestedSlice(m, "spec", "template", "spec", "volumes")
		if len(vols) != 1 || !has(vols[0].(map[string]any), "emptyDir") || len(vols[0].(map[string]any)["emptyDir"].(map[string]any)) != 0 {
			t.Errorf("emptyDir: {} lost: %v", vols)
		}
		if !strings.Contains(text, "emptyDir: {}") {
			t.Errorf("emptyDir: {} not written:\n%s", text)
		}
		for _, p := range [][]string{{"spec", "template", "metadata", "creationTimestamp"}, {"spec", "progressDeadlineSeconds"}, {"spec", "revisionHistoryLimit"}, {"spec", "strategy"}, {"spec", "template", "spec", "dnsPolicy"}, {"spec", "template", "spec", "schedulerName"}, {"spec", "template", "spec", "securityContext"}, {"metadata", "annotations", "deployment.kubernetes.io/revision"}} {
			if has(m, p...) {
				t.Errorf("%s kept", strings.Join(p, "."))
			}
		}
		if r, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "replicas"); r != float64(2) {
			t.Errorf("replicas = %v", r)
		}
		if a, _, _ := unstructured.NestedString(m, "metadata", "annotations", "team"); a != "blue" {
			t.Errorf("user annotation lost")
		}
		if l, _, _ := unstructured.NestedString(m, "metadata", "labels", "app"); l != "web" {
			t.Errorf("user label lost")
		}
	})

	t.Run("Service/ClusterIP", func(t *testing.T) {
		u := live(t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns, "web")
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip == "" {
			t.Fatal("fixture: no clusterIP allocated")
		}
		m, text := cleanYAML(t, u)
		common(t, m, text)
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "sessionAffinity", "internalTrafficPolicy"} {
			if has(m, "spec", f) {
				t.Errorf("spec.%s kept:\n%s", f, text)
			}
		}
		ports, _, _ := unstructured.NestedSlice(m, "spec", "ports")
		p := ports[0].(map[string]any)
		if p["port"] != float64(80) || p["targetPort"] != float64(8080) || p["protocol"] != "TCP" || p["nodePort"] != nil {
			t.Errorf("ports: %v", p)
		}
	})

	t.Run("Service/NodePort", func(t *testing.T) {
		u := live(t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns, "web-np")
		ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
		liveNodePort := ports[0].(map[string]any)["nodePort"]
		m, text := cleanYAML(t, u)
		common(t, m, text)
		if has(m, "spec", "clusterIP") || has(m, "spec", "clusterIPs") {
			t.Errorf("clusterIP kept")
		}
		ports, _, _ = unstructured.NestedSlice(m, "spec", "ports")
		if got := ports[0].(map[string]any)["nodePort"]; got == nil || fmt.Sprint(got) != fmt.Sprint(liveNodePort) {
			t.Errorf("NodePort Service lost its nodePort %v: %v", liveNodePort, got)
		}
		if m["spec"].(map[string]any)["type"] != "NodePort" {
			t.Errorf("type lost")
		}
	})

	t.Run("Service/headless", func(t *testing.T) {
		m, _ := cleanYAML(t, live(t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "services"}, ns, "web-headless"))
		if ip, _, _ := unstructured.NestedString(m, "spec", "clusterIP"); ip != "None" {
			t.Errorf("headless Service lost clusterIP: None")
		}
	})

	t.Run("ConfigMap/binaryData", func(t *testing.T) {
		m, text := cleanYAML(t, live(t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "hook"))
		common(t, m, text)
		if b, _, _ := unstructured.NestedString(m, "binaryData", "blob.bin"); b != "AAEC/w==" {
			t.Errorf("binaryData = %q", b)
		}
		if d, _, _ := unstructured.NestedString(m, "data", "usage_hook.py"); d != "def hook(x):\n    return x\n" {
			t.Errorf("data = %q", d)
		}
		if !strings.Contains(text, "usage_hook.py: |") {
			t.Errorf("multi-line data not a literal block:\n%s", text)
		}
	})

	t.Run("CronJob", func(t *testing.T) {
		m, text := cleanYAML(t, live(t, dyn, schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}, ns, "nightly"))
		common(t, m, text)
		for _, p := range [][]string{{"spec", "concurrencyPolicy"}, {"spec", "suspend"}, {"spec", "successfulJobsHistoryLimit"}, {"spec", "failedJobsHistoryLimit"}, {"spec", "jobTemplate", "metadata"}, {"spec", "jobTemplate", "spec", "template", "metadata"}} {
			if has(m, p...) {
				t.Errorf("%s kept:\n%s", strings.Join(p, "."), text)
			}
		}
		if rp, _, _ := unstructured.NestedString(m, "spec", "jobTemplate", "spec", "template", "spec", "restartPolicy"); rp != "OnFailure" {
			t.Errorf("restartPolicy OnFailure lost")
		}
		if s, _, _ := unstructured.NestedString(m, "spec", "schedule"); s != "0 3 * * *" {
			t.Errorf("schedule lost")
		}
	})

	t.Run("CRD instance", func(t *testing.T) {
		gvr := schema.GroupVersionResource{Group: "certs.example.com", Version: "v1", Resource: "issuers"}
		u := live(t, dyn, gvr, ns, "self")
		u.Object["status"] = map[string]any{"ready": true}
		if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("set status: %v", err)
		}
		m, text := cleanYAML(t, live(t, dyn, gvr, ns, "self"))
		common(t, m, text)
		if s, ok, _ := unstructured.NestedMap(m, "spec", "selfSigned"); !ok || len(s) != 0 || !strings.Contains(text, "selfSigned: {}") {
			t.Errorf("selfSigned: {} lost:\n%s", text)
		}
		if FileName("certs.example.com", "Issuer", "self") != "issuer.certs.example.com-self.yaml" {
			t.Errorf("file name %s", FileName("certs.example.com", "Issuer", "self"))
		}
	})

	t.Run("stable", func(t *testing.T) {
		u := live(t, dyn, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web")
		_, a := cleanYAML(t, u)
		_, b := cleanYAML(t, live(t, dyn, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, "web"))
		if a != b {
			t.Errorf("two exports differ:\n%s\n---\n%s", a, b)
		}
	})
}

// TestSecretPlaceholder: a real Secret, applied client-side (so its
// last-applied copy holds the value), becomes keys only.
func TestSecretPlaceholder(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	const value = "sup3r-s3cret-value-0451"
	secret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db, labels: {app: db}}\ntype: Opaque\nstringData: {password: %s, user: admin}\n", value)
	if out, err := cp.Kubectl(ctx, []byte(secret), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	dyn, _ := dynamic.NewForConfig(cp.RESTConfig())
	u := live(t, dyn, schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, ns, "db")
	if _, err := Clean(u, Options{}); err == nil {
		t.Fatal("Clean exported a Secret")
	}
	b, err := Marshal(SecretPlaceholder(u, Options{}).Object)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Contains(text, value) || strings.Contains(text, "c3VwM3Itc") || strings.Contains(text, "admin") {
		t.Fatalf("placeholder carries a value:\n%s", text)
	}
	for _, want := range []string{"password: \"\"", "user: \"\"", "type: Opaque", "name: db", "app: db", PlaceholderAnnotation} {
		if !strings.Contains(text, want) {
			t.Errorf("placeholder lacks %q:\n%s", want, text)
		}
	}
}
