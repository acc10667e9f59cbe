package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	corev1 "k8s.io/api/core/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const argoNS = "argocd"

// installApplicationCRDOn applies Argo CD v2.14.21's Application CRD from
// the module cache to c and creates the argocd namespace.
func installApplicationCRDOn(t *testing.T, c *testenv.ControlPlane) {
	t.Helper()
	if err := applicationCRDOn(c); err != nil {
		t.Fatal(err)
	}
}

// sharedCRDsOn installs on the package's shared plane, before any test
// runs, the CRDs its tests need: Argo CD v2.14.21's Application and
// ApplicationSet (with the argocd namespace), Sealed Secrets' and External
// Secrets'.
func sharedCRDsOn(c *testenv.ControlPlane) error {
	set, err := argoCDModuleRead("manifests/crds/applicationset-crd.yaml")
	if err != nil {
		return err
	}
	if out, err := c.Kubectl(context.Background(), set, "apply", "--server-side", "--force-conflicts", "--field-manager=finalize-test", "-f", "-"); err != nil {
		return fmt.Errorf("install the ApplicationSet CRD: %v: %s", err, out)
	}
	if err := testenv.InstallSealedSecretsCRD(context.Background(), c); err != nil {
		return err
	}
	if err := testenv.InstallExternalSecretsCRDs(context.Background(), c); err != nil {
		return err
	}
	if err := applicationCRDOn(c); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Clientset().Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
		return err == nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "applicationsets" }), nil
	})
}

// applicationCRDOn is installApplicationCRDOn without a t.
func applicationCRDOn(c *testenv.ControlPlane) error {
	crd, err := argoCDModuleRead("manifests/crds/application-crd.yaml")
	if err != nil {
		return err
	}
	// --force-conflicts: an Argo CD test may have installed another
	// version's CRD before (field manager testenv).
	if out, err := c.Kubectl(context.Background(), crd, "apply", "--server-side", "--force-conflicts", "--field-manager=finalize-test", "-f", "-"); err != nil {
		return fmt.Errorf("install the Application CRD: %v: %s", err, out)
	}
	// Served once discovery lists it; wait for that, bounded.
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.Clientset().Discovery().ServerResourcesForGroupVersion("argoproj.io/v1alpha1")
		return err == nil && slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == "applications" }), nil
	})
	if err != nil {
		return fmt.Errorf("the Application CRD was not served: %v", err)
	}
	_, err = c.Clientset().CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// argoCDModuleFile reads a file (path rel) of Argo CD v2.14.21's module
// from the module cache.
func argoCDModuleFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := argoCDModuleRead(rel)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// argoCDModuleRead is argoCDModuleFile without a t.
func argoCDModuleRead(rel string) ([]byte, error) {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v2@v2.14.21").Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download argo-cd: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download argo-cd: no Dir in %s", out)
	}
	return os.ReadFile(filepath.Join(mod.Dir, filepath.FromSlash(rel)))
}

func kc(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	if out, err := cp.Kubectl(context.Background(), stdin, args...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func dynClient(t *testing.T) dynamic.Interface {
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// object is a manifest with the given annotations, as JSON.
func object(obj map[string]any, annotations map[string]string) []byte {
	c := map[string]any{}
	for k, v := range obj {
		c[k] = v
	}
	md := map[string]any{}
	for k, v := range obj["metadata"].(map[string]any) {
		md[k] = v
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	c["metadata"] = md
	b, _ := json.Marshal(c)
	return b
}

// handThenArgo applies obj the runbook way (client-side, then
// --server-side), then the way Argo CD's first sync does.
func handThenArgo(t *testing.T, obj map[string]any, trackingID string) {
	t.Helper()
	ns := obj["metadata"].(map[string]any)["namespace"].(string)
	hand := object(obj, map[string]string{"team": "platform"})
	kc(t, hand, "-n", ns, "apply", "-f", "-")
	kc(t, hand, "-n", ns, "apply", "--server-side", "-f", "-")
	argoApply(t, obj, trackingID)
}

func argoApply(t *testing.T, obj map[string]any, trackingID string) {
	t.Helper()
	ns := obj["metadata"].(map[string]any)["namespace"].(string)
	kc(t, object(obj, map[string]string{"team": "platform", argoapp.AnnotationTrackingID: trackingID}),
		"-n", ns, "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-")
}

func configMap(ns string, data map[string]string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "usage-hook", "namespace": ns}, "data": data}
}

// writePlan writes a plan adopting objs into one Application per
// namespace, named adopt-<namespace>, for the test control plane.
func writePlan(t *testing.T, objs ...plan.Object) string {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Cluster: plan.Cluster{Server: cp.Server},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey, Namespace: argoNS}}
	for _, o := range objs {
		o.App = "adopt-" + o.Namespace
		p.Objects = append(p.Objects, o)
		p.Applications = append(p.Applications, plan.Application{Name: o.App, Namespace: o.Namespace, Project: "default",
			SourcePath: "adopted/" + o.Namespace, Objects: []string{o.Ref.String()}})
	}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	writePlanFile(t, path, p)
	return path
}

// putApplication creates or replaces the Application with status, as Argo
// CD's controller would write it (the CRD has no status subresource).
func putApplication(t *testing.T, name, destNS string, status map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": name, "namespace": argoNS},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": "https://git.example.invalid/gitops.git", "path": "adopted/" + destNS, "targetRevision": "main"},
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": destNS},
		},
	}}
	if status != nil {
		u.Object["status"] = status
	}
	apps := dynClient(t).Resource(argoapp.ApplicationGVR).Namespace(argoNS)
	if old, err := apps.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		u.SetResourceVersion(old.GetResourceVersion())
		if _, err := apps.Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := apps.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func syncedStatus(health string, resources ...any) map[string]any {
	return map[string]any{
		"operationState": map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)",
			"operation": map[string]any{"sync": map[string]any{"revision": "0123456789abcdef"}},
			"startedAt": "2026-09-08T10:00:00Z", "finishedAt": "2026-09-08T10:00:05Z",
			"syncResult": map[string]any{"revision": "0123456789abcdef"}},
		"history":   []any{map[string]any{"id": int64(0), "revision": "0123456789abcdef", "deployedAt": "2026-09-08T10:00:05Z"}},
		"sync":      map[string]any{"status": "Synced", "revision": "0123456789abcdef"},
		"health":    map[string]any{"status": health},
		"resources": resources,
	}
}

func getCM(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	u, err := dynClient(t).Resource(objref.Ref{Version: "v1", Resource: "configmaps"}.GVR()).Namespace(ns).Get(context.Background(), "usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func cmObject(ns string) plan.Object {
	return plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: "usage-hook"}}
}

func TestFinalizeCommand(t *testing.T) {
	ns := cp.Namespace(t)
	app := "adopt-" + ns
	data := map[string]string{"a": "1", "b": "2"}
	handThenArgo(t, configMap(ns, data), app+":/ConfigMap:"+ns+"/usage-hook")
	planFile := writePlan(t, cmObject(ns))
	putApplication(t, app, ns, syncedStatus("Healthy"))
	before := getCM(t, ns)
	if _, ok := before.GetAnnotations()[budget.LastAppliedKey]; !ok {
		t.Fatal("starting state lacks the annotation")
	}

	// Dry run: the guarded patch is printed, nothing changes.
	out, errOut, code := adopt(t, "finalize", "--plan", planFile, "--dry-run", "--poll-interval", "100ms")
	if code != ExitOK || !strings.Contains(out, "would-finalize") || !strings.Contains(out, `"op":"test","path":"/metadata/resourceVersion"`) ||
		!strings.Contains(out, `"op":"remove","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"`) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	if getCM(t, ns).GetResourceVersion() != before.GetResourceVersion() {
		t.Fatal("dry run wrote to the object")
	}
	if _, err := os.Stat(planFile + ".journal"); !os.IsNotExist(err) {
		t.Fatalf("dry run wrote a journal: %v", err)
	}

	out, errOut, code = adopt(t, "finalize", "--plan", planFile, "--revision", "0123456789abcdef", "--poll-interval", "100ms")
	t.Logf("finalize:\n%s%s", out, errOut)
	if code != ExitOK || !strings.Contains(out, "finalized") || !strings.Contains(out, "kubectl (Apply)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	after := getCM(t, ns)
	if _, ok := after.GetAnnotations()[budget.LastAppliedKey]; ok {
		t.Fatal("annotation still there")
	}
	if after.GetAnnotations()["team"] != "platform" {
		t.Fatalf("other annotations changed: %v", after.GetAnnotations())
	}
	if _, err := os.Stat(planFile + ".journal"); err != nil {
		t.Fatalf("no journal next to the plan: %v", err)
	}

	// Re-running is safe and says so.
	out, _, code = adopt(t, "finalize", "--plan", planFile, "-o", "json", "--poll-interval", "100ms")
	var rep finalize.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if rep.Total.Already != 1 || rep.Objects[0].Status != finalize.StatusAlready {
		t.Fatalf("second run: %+v", rep.Total)
	}
	if getCM(t, ns).GetResourceVersion() != after.GetResourceVersion() {
		t.Fatal("second run wrote to the object")
	}

	// The decisive check, end to end.
	delete(data, "a")
	argoApply(t, configMap(ns, data), app+":/ConfigMap:"+ns+"/usage-hook")
	if got, _, _ := unstructured.NestedStringMap(getCM(t, ns).Object, "data"); !reflect.DeepEqual(got, data) {
		t.Fatalf("after finalize, the next sync left data %v, want %v", got, data)
	}

	// --undo over a journal it can only partly read refuses, in one line
	// naming the line, and restores nothing.
	journal, err := os.ReadFile(planFile + ".journal")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planFile+".journal", append([]byte("{\"not\": a journal line}\n"), journal...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = adopt(t, "finalize", "--plan", planFile, "--undo")
	if code != ExitUsage || !strings.Contains(errOut, ":1") || !strings.Contains(errOut, "Nothing was restored") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("undo over a damaged journal: exit %d, %q", code, errOut)
	}
	if _, ok := getCM(t, ns).GetAnnotations()[budget.LastAppliedKey]; ok {
		t.Fatal("undo over a damaged journal restored something")
	}
	if err := os.WriteFile(planFile+".journal", journal, 0o600); err != nil {
		t.Fatal(err)
	}

	// --undo puts the annotation back.
	out, errOut, code = adopt(t, "finalize", "--plan", planFile, "--undo")
	if code != ExitOK || !strings.Contains(out, "restored") {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := getCM(t, ns).GetAnnotations()[budget.LastAppliedKey]; got != before.GetAnnotations()[budget.LastAppliedKey] {
		t.Fatalf("undo restored %d B, want %d B", len(got), len(before.GetAnnotations()[budget.LastAppliedKey]))
	}
}

func TestFinalizeUnhealthyDeploymentIsExplainedAndUntouched(t *testing.T) {
	ctx := context.Background()
	sched, err := testenv.StartScheduling(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	ns := cp.Namespace(t)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cp.RegisterNode(ctx, ns+"-"+n, "2", "1936Mi"); err != nil {
			t.Fatal(err)
		}
	}
	app := "adopt-" + ns
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "litellm", "namespace": ns},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": map[string]any{"app": "litellm"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "litellm"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "litellm", "image": "litellm:main",
					"resources": map[string]any{"requests": map[string]any{"memory": "64Gi"}},
				}}},
			},
		}}
	handThenArgo(t, dep, app+":apps/Deployment:"+ns+"/litellm")
	reason, err := cp.WaitUnschedulable(ctx, ns, "app=litellm")
	if err != nil {
		t.Fatal(err)
	}
	planFile := writePlan(t, plan.Object{Ref: objref.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: ns, Name: "litellm"}})
	putApplication(t, app, ns, syncedStatus("Progressing", map[string]any{
		"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "litellm", "status": "Synced",
		"health": map[string]any{"status": "Progressing", "message": `Waiting for rollout to finish: 0 of 1 updated replicas are available...`},
	}))

	out, errOut, code := adopt(t, "finalize", "--plan", planFile, "--timeout", "1s", "--poll-interval", "100ms")
	t.Logf("finalize:\n%s%s", out, errOut)
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d (not finalized)", code, ExitPartial)
	}
	for _, want := range []string{
		"apps/Deployment " + ns + "/litellm: Progressing: Waiting for rollout to finish",
		"Pending: " + strings.Join(strings.Fields(reason), " "),
		"Insufficient memory",
		"left untouched",
		"skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "1 of 1 objects not finalized: apps/Deployment "+ns+"/litellm") {
		t.Errorf("error line lacks the object: %s", errOut)
	}
	d, err := cp.Clientset().AppsV1().Deployments(ns).Get(ctx, "litellm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations[budget.LastAppliedKey]; !ok {
		t.Fatal("the annotation of an unhealthy Application's object was removed")
	}
	for _, m := range d.ManagedFields {
		if m.Manager == finalize.DefaultFieldManager {
			t.Fatalf("finalize wrote to the Deployment of an unhealthy Application: %v", d.ManagedFields)
		}
	}
}

// syncedConfigMap is a hand-applied ConfigMap in a new namespace, synced
// as Argo CD does by Application adopt-<ns> (Synced and Healthy), and the
// plan adopting it.
func syncedConfigMap(t *testing.T) (ns, planFile string) {
	t.Helper()
	ns = cp.Namespace(t)
	app := "adopt-" + ns
	handThenArgo(t, configMap(ns, map[string]string{"a": "1"}), app+":/ConfigMap:"+ns+"/usage-hook")
	planFile = writePlan(t, cmObject(ns))
	putApplication(t, app, ns, syncedStatus("Healthy"))
	return ns, planFile
}

func TestFinalizeChecksPermissionsBeforeWriting(t *testing.T) {
	ns, planFile := syncedConfigMap(t)
	before := getCM(t, ns)
	_, errOut, code := adopt(t, "--kubeconfig", cp.ViewerKubeconfig, "finalize", "--plan", planFile)
	if code != ExitError {
		t.Fatalf("exit %d, want %d: %s", code, ExitError, errOut)
	}
	for _, want := range []string{"missing permissions, nothing was changed", "patch configmaps in " + ns, "get applications.argoproj.io in " + argoNS} {
		if !strings.Contains(errOut, want) {
			t.Errorf("error lacks %q: %s", want, errOut)
		}
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("error is not one line: %q", errOut)
	}
	if getCM(t, ns).GetResourceVersion() != before.GetResourceVersion() {
		t.Fatal("the object was written without permission checks passing")
	}
}

func TestFinalizeSyncSetsOperationOnce(t *testing.T) {
	ns := cp.Namespace(t)
	app := "adopt-" + ns
	handThenArgo(t, configMap(ns, map[string]string{"a": "1"}), app+":/ConfigMap:"+ns+"/usage-hook")
	planFile := writePlan(t, cmObject(ns))
	putApplication(t, app, ns, nil)

	out, errOut, code := adopt(t, "finalize", "--plan", planFile, "--sync", "--revision", "cafe0001", "--timeout", "500ms", "--poll-interval", "100ms")
	if code != ExitPartial || !strings.Contains(out, "sync started by adopt") || !strings.Contains(out, "a sync operation is running") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	apps := dynClient(t).Resource(argoapp.ApplicationGVR).Namespace(argoNS)
	u, err := apps.Get(context.Background(), app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	op, _, _ := unstructured.NestedMap(u.Object, "operation")
	want := map[string]any{"initiatedBy": map[string]any{"username": "adopt"},
		"sync": map[string]any{"prune": false, "revision": "cafe0001", "syncOptions": []any{"ServerSideApply=true"}}}
	if !reflect.DeepEqual(op, want) {
		t.Fatalf(".operation = %v, want %v", op, want)
	}
	// A second run does not start another operation while one is pending.
	out, _, _ = adopt(t, "finalize", "--plan", planFile, "--sync", "--timeout", "300ms", "--poll-interval", "100ms")
	if strings.Contains(out, "sync started by adopt") {
		t.Fatalf("second run started another sync:\n%s", out)
	}
	if err := argoapp.TriggerSync(context.Background(), dynClient(t), argoNS, app, ""); err == nil || !strings.Contains(err.Error(), "another operation is running") {
		t.Fatalf("TriggerSync while an operation is pending: %v", err)
	}
	if _, ok := getCM(t, ns).GetAnnotations()[budget.LastAppliedKey]; !ok {
		t.Fatal("an object was finalized before its first sync")
	}
}
