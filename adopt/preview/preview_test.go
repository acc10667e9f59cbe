package preview_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's control plane, started once by TestMain.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// handApply applies a manifest with the real `kubectl apply` (client-side),
// as the runbooks did.
func handApply(t *testing.T, ctx context.Context, manifest string) {
	t.Helper()
	if _, err := cp.Kubectl(ctx, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func dyn() dynamic.Interface { return dynamic.NewForConfigOrDie(cp.RESTConfig()) }

func live(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn().Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// run previews the Git manifest gitYAML against the live object.
func run(t *testing.T, ctx context.Context, p *preview.Previewer, gvr schema.GroupVersionResource, gitYAML string) preview.Result {
	t.Helper()
	m := parse(t, gitYAML)
	l := live(t, ctx, gvr, m.GetNamespace(), m.GetName())
	id := fmt.Sprintf("adopted:%s/%s:%s/%s", gvr.Group, m.GetKind(), m.GetNamespace(), m.GetName())
	r, err := p.Object(ctx, preview.Input{Resource: gvr, Manifest: m, Live: l, TrackingID: id})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("preview of %s:\n%s", r.Ref, b)
	return r
}

func configMap(ns, name string, data map[string]string, labels string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if labels != "" {
		fmt.Fprintf(&b, "  labels: {%s}\n", labels)
	}
	b.WriteString("data:\n")
	for k, v := range data {
		j, _ := json.Marshal(v)
		fmt.Fprintf(&b, "  %s: %s\n", k, j)
	}
	return b.String()
}

func deployment(ns, name, image string, replicas int, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  replicas: %[4]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: main
        image: %[3]s
        resources:
          requests: {memory: 64Mi}
%[5]s`, ns, name, image, replicas, extra)
}

func paths(fs []preview.Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

// TestNoOp: the Git copy is what was hand-applied, so the first sync
// changes nothing. The only field waiting to go is the client-side apply
// annotation; server defaults of the Deployment are not reported as
// deletions.
func TestNoOp(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	p := &preview.Previewer{Client: dyn()}
	cm := configMap(ns, "litellm-config", map[string]string{"config.yaml": "model_list: []\n"}, "")
	handApply(t, ctx, cm)
	d := deployment(ns, "litellm", "registry.invalid/litellm:1", 2, "")
	handApply(t, ctx, d)
	for _, c := range []struct {
		gvr  schema.GroupVersionResource
		yaml string
	}{{configMaps, cm}, {deployments, d}} {
		r := run(t, ctx, p, c.gvr, c.yaml)
		if r.Outcome != preview.NoOp || len(r.Changes) != 0 || r.Rollout != nil {
			t.Errorf("%s: outcome %s with %d changes, rollout %v; want no-op", r.Ref, r.Outcome, len(r.Changes), r.Rollout)
		}
		want := "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"
		if got := paths(r.PendingDeletions); len(got) != 1 || got[0] != want {
			t.Errorf("%s: pending deletions %v; want only %s", r.Ref, got, want)
		} else if m := r.PendingDeletions[0].Managers; len(m) != 1 || m[0] != "kubectl-client-side-apply (Update)" {
			t.Errorf("%s: %s owned by %v; want kubectl-client-side-apply (Update)", r.Ref, want, m)
		}
		if r.Column() != "no-op" {
			t.Errorf("%s: column %q, want no-op", r.Ref, r.Column())
		}
	}
}

// TestConfigMapNewerInGit: the incident's test hook ran 8,126 B behind Git.
// The preview names the key and counts the bytes without printing the body.
func TestConfigMapNewerInGit(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	old := "# usage hook\n" + strings.Repeat("x = 1\n", 3000)
	newer := old + strings.Repeat("y", 8126)
	handApply(t, ctx, configMap(ns, "litellm-test-usage-hook", map[string]string{"usage_hook.py": old}, ""))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, configMaps,
		configMap(ns, "litellm-test-usage-hook", map[string]string{"usage_hook.py": newer}, ""))
	if r.Outcome != preview.Changes || len(r.Changes) != 1 {
		t.Fatalf("outcome %s with changes %+v; want exactly one change", r.Outcome, r.Changes)
	}
	c := r.Changes[0]
	want := fmt.Sprintf("data.usage_hook.py +8,126 B (%s B → %s B)", preview.Bytes(len(old)), preview.Bytes(len(newer)))
	if c.Text != want {
		t.Errorf("change text %q, want %q", c.Text, want)
	}
	if c.BeforeBytes != len(old) || c.AfterBytes != len(newer) || len(c.After) > 50 {
		t.Errorf("change %+v: want byte counts %d → %d and a shortened value", c, len(old), len(newer))
	}
	if got := paths(r.PendingDeletions); len(got) != 1 || got[0] != "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration" {
		t.Errorf("pending deletions %v; want only the last-applied annotation", got)
	}
	if r.Column() != "changes 1" {
		t.Errorf("column %q, want changes 1", r.Column())
	}
}

// TestSecretValuesNeverShown: a Secret's changed value appears only as a
// key and byte counts, never as its value or its base64.
func TestSecretValuesNeverShown(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	secret := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: litellm-keys\n  namespace: %s\nstringData:\n  master_key: %q\n  extra: %q\n", ns, v, v+"-extra")
	}
	handApply(t, ctx, secret("sk-live-old-0123456789"))
	gitSecret := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: litellm-keys\n  namespace: %s\ndata:\n  master_key: %s\n",
		ns, base64.StdEncoding.EncodeToString([]byte("sk-live-new-987654321098765")))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, secrets, gitSecret)
	b, _ := json.Marshal(r)
	for _, v := range []string{"sk-live-old-0123456789", "sk-live-new-987654321098765", "c2stbGl2ZS1", "-extra"} {
		if strings.Contains(string(b), v) {
			t.Errorf("the result holds %q: %s", v, b)
		}
	}
	found := false
	for _, c := range r.Changes {
		if c.Path == "data.master_key" {
			found = true
			if c.Text != "data.master_key +5 B (22 B → 27 B)" {
				t.Errorf("change text %q, want byte counts only", c.Text)
			}
		}
	}
	if !found {
		t.Errorf("no change of data.master_key in %+v", r.Changes)
	}
	if !contains(paths(r.PendingDeletions), "data.extra") {
		t.Errorf("pending deletions %v lack data.extra", paths(r.PendingDeletions))
	}
}

// TestPreviewJudgesValues (issue 36): a value that looks like a secret is
// hidden in "before" and "after" although no Secret holds it: a ConfigMap's
// database URL with a password, a token that a chart base64-encoded
// (b64enc) past the known set, a value under a secret-like key. An ordinary
// value is still shown.
func TestPreviewJudgesValues(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	const oldPass, newPass = "Pw0ldK9x2mQ7vR4t", "Pw1newL8y3nS6wT5"
	token := base64.StdEncoding.EncodeToString([]byte("tok-7f3a9c1e5b2d8046aa91c3e7f0d25b64"))
	live := map[string]string{"DATABASE_URL": "postgres://app:" + oldPass + "@db.internal/app", "mode": "a", "encoded": "plain", "smtpPassword": "old-words-here"}
	git := map[string]string{"DATABASE_URL": "postgres://app:" + newPass + "@db.internal/app", "mode": "b", "encoded": token, "smtpPassword": "new-words-here"}
	handApply(t, ctx, configMap(ns, "app-env", live, ""))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, configMaps, configMap(ns, "app-env", git, ""))
	b, _ := json.Marshal(r)
	for _, v := range []string{oldPass, newPass, token, "old-words-here", "new-words-here"} {
		if strings.Contains(string(b), v) {
			t.Errorf("the preview shows %q: %s", v, b)
		}
	}
	byPath := map[string]preview.Change{}
	for _, c := range r.Changes {
		byPath[c.Path] = c
	}
	for _, p := range []string{"data.DATABASE_URL", "data.encoded", "data.smtpPassword"} {
		if c, ok := byPath[p]; !ok || c.After != redact.Shown {
			t.Errorf("%s: %+v, want its values shown as %s", p, c, redact.Shown)
		}
	}
	if c := byPath["data.mode"]; c.Before != "a" || c.After != "b" {
		t.Errorf("data.mode: %+v, want a → b shown", c)
	}
}

// TestDeploymentImageRollout: Git's newer image replaces every pod.
func TestDeploymentImageRollout(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	handApply(t, ctx, deployment(ns, "litellm", "registry.invalid/litellm:1.40", 3, ""))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, deployment(ns, "litellm", "registry.invalid/litellm:1.41", 3, ""))
	want := "spec.template.spec.containers[name=main].image: registry.invalid/litellm:1.40 → registry.invalid/litellm:1.41"
	if r.Outcome != preview.Changes || len(r.Changes) != 1 || r.Changes[0].Text != want {
		t.Fatalf("changes %+v; want exactly %q", r.Changes, want)
	}
	if r.Rollout == nil || r.Rollout.PodsReplaced != 3 || r.Rollout.Text != "rollout: 3 pods replaced" {
		t.Fatalf("rollout %+v; want 3 pods replaced", r.Rollout)
	}
}

// TestImmutableFieldWouldFail: Git gives a Service another clusterIP; the
// API server refuses, and the preview quotes it. The live Service's address
// is allocated by the API server (from the dynamic band); Git's comes from
// the static band, so the two differ.
func TestImmutableFieldWouldFail(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	svc := func(clusterIP string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: litellm
  namespace: %s
spec:
%s  selector: {app: litellm}
  ports:
  - port: 4000
`, ns, clusterIP)
	}
	handApply(t, ctx, svc(""))
	gitIP := cp.StaticClusterIP(t)
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, services, svc("  clusterIP: "+gitIP+"\n"))
	if r.Outcome != preview.WouldFail {
		t.Fatalf("outcome %s, want would-fail", r.Outcome)
	}
	for _, s := range []string{`Service "litellm" is invalid`, "spec.clusterIPs[0]", `["` + gitIP + `"]`, "may not change once set"} {
		if !strings.Contains(r.Verdict, s) {
			t.Errorf("verdict %q does not quote %q", r.Verdict, s)
		}
	}
	if r.Column() != "fails" || preview.Summarize([]preview.Result{r}).WouldFail != 1 {
		t.Errorf("column %q; want fails, counted as would-fail", r.Column())
	}
}

// TestLiveOnlyFieldsArePendingDeletions: the live ConfigMap has a key and a
// label that Git lacks. The first sync keeps them (hand-apply managers
// co-own them); they are named as deletions waiting for finalize.
func TestLiveOnlyFieldsArePendingDeletions(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	handApply(t, ctx, configMap(ns, "hook", map[string]string{"usage_hook.py": "print(1)\n", "debug.py": "print('debug')\n"}, "hotfix: tuesday"))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, configMaps, configMap(ns, "hook", map[string]string{"usage_hook.py": "print(1)\n"}, ""))
	if r.Outcome != preview.NoOp {
		t.Errorf("outcome %s with changes %+v; the first sync keeps co-owned fields, want no-op", r.Outcome, r.Changes)
	}
	got := paths(r.PendingDeletions)
	for _, want := range []string{"data.debug.py", "metadata.labels.hotfix", "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"} {
		if !contains(got, want) {
			t.Errorf("pending deletions %v lack %s", got, want)
		}
	}
	if contains(got, "data.usage_hook.py") {
		t.Errorf("pending deletions %v name a field Git has", got)
	}
	for _, f := range r.PendingDeletions {
		if f.Path == "data.debug.py" && (f.Bytes != len("print('debug')\n") || len(f.Managers) == 0 || f.Managers[0] != "kubectl-client-side-apply (Update)") {
			t.Errorf("data.debug.py: %+v; want %d bytes owned by kubectl-client-side-apply (Update)", f, len("print('debug')\n"))
		}
	}
}

// TestControllerOwnedReplicas: an autoscaler set replicas to 5 and an HPA
// targets the Deployment; Git says 2. The preview reports the change and
// seeds ignoreDifferences for both reasons.
func TestControllerOwnedReplicas(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	d := deployment(ns, "api", "registry.invalid/api:1", 2, "")
	handApply(t, ctx, d)
	_, err := dyn().Resource(deployments).Namespace(ns).Patch(ctx, "api", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`),
		metav1.PatchOptions{FieldManager: "test-autoscaler"})
	if err != nil {
		t.Fatal(err)
	}
	handApply(t, ctx, hpa(ns))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, d)
	if len(r.Changes) != 1 || r.Changes[0].Text != "spec.replicas: 5 → 2" {
		t.Errorf("changes %+v; want spec.replicas: 5 → 2", r.Changes)
	}
	if r.Rollout == nil || r.Rollout.Text != "replicas 5 → 2" {
		t.Errorf("rollout %+v; want replicas 5 → 2", r.Rollout)
	}
	var byManager, byHPA bool
	for _, s := range r.IgnoreDifferences {
		if s.Kind != "Deployment" || s.Group != "apps" || s.Name != "api" {
			t.Errorf("suggestion %+v names another object", s)
		}
		// The manager's entry names the manager only: a field a person
		// changes later changes owner and shows as drift.
		if len(s.ManagedFieldsManagers) == 1 && s.ManagedFieldsManagers[0] == "test-autoscaler" && len(s.JSONPointers) == 0 &&
			strings.Join(s.Fields, ",") == "spec.replicas" && s.Manager == "test-autoscaler" && s.Source == preview.SourceManagedFields {
			byManager = true
		}
		if strings.HasPrefix(s.Reason, "HorizontalPodAutoscaler "+ns+"/api") && strings.Join(s.JSONPointers, ",") == "/spec/replicas" &&
			len(s.ManagedFieldsManagers) == 0 && s.Manager == "test-autoscaler" && strings.HasPrefix(s.Source, "HorizontalPodAutoscaler (") {
			byHPA = true
		}
	}
	if !byManager || !byHPA {
		t.Errorf("ignoreDifferences %+v; want /spec/replicas for manager test-autoscaler and for the HPA", r.IgnoreDifferences)
	}
}

// hpa is an HPA in ns that scales Deployment api on CPU.
func hpa(ns string) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 2
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`, ns)
}

// TestHandEditedFieldIsNotIgnored: a person scaled the Deployment with
// kubectl scale (an Update as kubectl on the scale subresource) although an
// HPA targets it: spec.replicas is not ignored, and a note says why.
func TestHandEditedFieldIsNotIgnored(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	d := deployment(ns, "api", "registry.invalid/api:1", 2, "")
	handApply(t, ctx, d)
	if _, err := cp.Kubectl(ctx, nil, "-n", ns, "scale", "deployment/api", "--replicas=4"); err != nil {
		t.Fatal(err)
	}
	handApply(t, ctx, hpa(ns))
	u := live(t, ctx, deployments, ns, "api")
	editedBy := ""
	for _, m := range u.GetManagedFields() {
		if strings.HasPrefix(m.Manager, "kubectl") && m.Manager != "kubectl-client-side-apply" && m.Operation == metav1.ManagedFieldsOperationUpdate {
			editedBy = m.Manager
		}
	}
	if editedBy == "" {
		t.Fatalf("kubectl scale left no kubectl Update: %+v", u.GetManagedFields())
	}
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, d)
	if len(r.IgnoreDifferences) != 0 {
		t.Errorf("ignoreDifferences %+v; want none: %s changed spec.replicas by hand", r.IgnoreDifferences, editedBy)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "spec.replicas is not ignored although HorizontalPodAutoscaler "+ns+"/api scales it") {
		t.Errorf("notes %q; want spec.replicas not ignored, naming the HPA", r.Notes)
	}
}

// TestInjectedCABundle: a webhook configuration carrying cert-manager's
// inject-ca-from annotation gets a caBundle pointer per webhook, even though
// no cainjector has run.
func TestInjectedCABundle(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	name := "adopt-test-" + ns
	hook := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: %[1]s
  annotations: {cert-manager.io/inject-ca-from: %[2]s/serving}
webhooks:
- name: a.%[1]s.invalid
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  clientConfig: {url: "https://a.invalid/validate"}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps], scope: Namespaced}]
  namespaceSelector: {matchLabels: {never: match}}
`, name, ns)
	handApply(t, ctx, hook)
	t.Cleanup(func() { _, _ = cp.Kubectl(context.Background(), nil, "delete", "validatingwebhookconfiguration", name) })
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, gvr, hook)
	if len(r.IgnoreDifferences) != 1 {
		t.Fatalf("ignoreDifferences %+v; want one", r.IgnoreDifferences)
	}
	d := r.IgnoreDifferences[0]
	if strings.Join(d.JSONPointers, ",") != "/webhooks/0/clientConfig/caBundle" || d.Manager != "cert-manager-cainjector" ||
		!strings.HasPrefix(d.Source, "cert-manager cainjector (") || !strings.Contains(d.Reason, "cert-manager.io/inject-ca-from: "+ns+"/serving") {
		t.Errorf("entry %+v; want the caBundle pointer of webhook 0 from cainjector", d)
	}
}

// TestEntrypointWarning: the post-mortem's `litellm litellm --config`.
func TestEntrypointWarning(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	extra := "        args: [litellm, --config, /app/config.yaml]\n"
	handApply(t, ctx, deployment(ns, "litellm", "ghcr.invalid/berriai/litellm:main", 1, extra))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, deployment(ns, "litellm", "ghcr.invalid/berriai/litellm:main", 1, extra))
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `container "main": args start with "litellm"`) {
		t.Errorf("warnings %q; want the repeated-entrypoint warning for container main", r.Warnings)
	}
}

// TestPreviewWritesNothing watches every object type the previews touch in
// all namespaces, runs every kind of preview (no-op, changes, would-fail,
// pending deletions with the defaults dry-run), then writes one sentinel
// per type. Each watch must see its sentinel as its first event: a write by
// the preview would have come before it. Every resourceVersion is also
// compared.
func TestPreviewWritesNothing(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	cm := configMap(ns, "hook", map[string]string{"usage_hook.py": "a", "debug.py": "b"}, "")
	d := deployment(ns, "litellm", "registry.invalid/litellm:1", 2, "")
	// The live Service's clusterIP is allocated; Git's, from the static
	// band, differs and makes the would-fail case.
	svc := fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: litellm, namespace: %s}\nspec:\n  ports: [{port: 80}]\n", ns)
	gitSvc := strings.Replace(svc, "spec:\n", "spec:\n  clusterIP: "+cp.StaticClusterIP(t)+"\n", 1)
	for _, m := range []string{cm, d, svc} {
		handApply(t, ctx, m)
	}
	gvrs := []schema.GroupVersionResource{configMaps, deployments, services}
	before := map[string]string{}
	watches := map[schema.GroupVersionResource]watch.Interface{}
	for _, gvr := range gvrs {
		list, err := dyn().Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			before[gvr.Resource+" "+it.GetNamespace()+"/"+it.GetName()] = it.GetResourceVersion()
		}
		w, err := dyn().Resource(gvr).Namespace("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watches[gvr] = w
	}

	p := &preview.Previewer{Client: dyn()}
	outcomes := map[preview.Outcome]int{}
	for _, c := range []struct {
		gvr  schema.GroupVersionResource
		yaml string
	}{
		{configMaps, configMap(ns, "hook", map[string]string{"usage_hook.py": "a2"}, "")},
		{deployments, deployment(ns, "litellm", "registry.invalid/litellm:2", 4, "")},
		{deployments, d},
		{services, gitSvc},
	} {
		outcomes[run(t, ctx, p, c.gvr, c.yaml).Outcome]++
	}
	if outcomes[preview.Changes] != 2 || outcomes[preview.NoOp] != 1 || outcomes[preview.WouldFail] != 1 {
		t.Errorf("outcomes %v; the test must exercise changes, no-op and would-fail", outcomes)
	}

	for _, gvr := range gvrs {
		sentinel := &unstructured.Unstructured{}
		sentinel.SetAPIVersion(schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}.String())
		switch gvr {
		case configMaps:
			sentinel.SetKind("ConfigMap")
		case deployments:
			sentinel = parse(t, deployment(ns, "sentinel", "registry.invalid/sentinel:1", 0, ""))
		case services:
			sentinel = parse(t, "apiVersion: v1\nkind: Service\nmetadata: {name: sentinel}\nspec:\n  ports: [{port: 80}]\n")
		}
		sentinel.SetName("sentinel")
		if _, err := dyn().Resource(gvr).Namespace(ns).Create(ctx, sentinel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-watches[gvr].ResultChan():
			u, _ := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || u == nil || u.GetName() != "sentinel" {
				t.Errorf("%s: the first event after the previews is %s %v, not the sentinel: the preview wrote to the cluster", gvr.Resource, ev.Type, describe(ev.Object))
			}
		case <-ctx.Done():
			t.Fatalf("%s: no event for the sentinel: %v", gvr.Resource, ctx.Err())
		}
	}
	for _, gvr := range gvrs {
		list, err := dyn().Resource(gvr).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			k := gvr.Resource + " " + it.GetNamespace() + "/" + it.GetName()
			if it.GetName() == "sentinel" {
				continue
			}
			if rv, ok := before[k]; !ok || rv != it.GetResourceVersion() {
				t.Errorf("%s: resourceVersion %q before, %q after the previews", k, rv, it.GetResourceVersion())
			}
		}
	}
}

func describe(o any) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return fmt.Sprintf("%T", o)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestPreviewHidesSecretValues (issue 26): a change whose value is a
// secret is shown as <redacted> with its byte counts, never the value: a
// Helm password that feeds an env var (the manifest holds the placeholder,
// live the password), a literal that equals the value of a Secret the
// object reads through secretKeyRef, and, when that Secret cannot be read,
// every env value.
func TestPreviewHidesSecretValues(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	helmPW, refPW, unreadPW := "helm-pw-"+fmt.Sprint(time.Now().UnixNano()), "ref-pw-7f3e9a1c", "unread-pw-5b6c7d8e"
	// env is PASSWORD's literal value, then FROM read from Secret s.
	env := func(v, s string) string {
		return fmt.Sprintf("        env:\n        - name: PASSWORD\n          value: %q\n        - name: FROM\n          valueFrom:\n            secretKeyRef: {name: %s, key: password}\n", v, s)
	}
	handApply(t, ctx, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: %s\nstringData:\n  password: %q\n", ns, refPW))
	helmHide := &redact.Set{}
	helmHide.Add(helmPW)
	for _, c := range []struct {
		name, live, git, secret string
		hide                    *redact.Set
		note                    string
	}{
		{name: "helm", live: env(helmPW, "db"), git: env(redact.Placeholder("db.password"), "db"), secret: helmPW, hide: helmHide},
		{name: "ref", live: env(refPW, "db"), git: env("rotated-literal", "db"), secret: refPW},
		{name: "unread", live: env(unreadPW, "missing"), git: env("rotated-literal", "missing"), secret: unreadPW, note: "Secret " + ns + "/missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "app-" + c.name
			handApply(t, ctx, deployment(ns, name, "registry.invalid/app:1", 1, c.live))
			m := parse(t, deployment(ns, name, "registry.invalid/app:1", 1, c.git))
			r, err := (&preview.Previewer{Client: dyn()}).Object(ctx, preview.Input{Resource: deployments, Manifest: m, Live: live(t, ctx, deployments, ns, name), Hide: c.hide})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r)
			if strings.Contains(string(b), c.secret) {
				t.Fatalf("the preview shows the secret: %s", b)
			}
			path := "spec.template.spec.containers[name=main].env[name=PASSWORD].value"
			found := false
			for _, ch := range r.Changes {
				if ch.Path == path {
					found = true
					if ch.Before != redact.Shown || ch.After != redact.Shown || !strings.Contains(ch.Text, redact.Shown) || ch.BeforeBytes != len(c.secret) {
						t.Errorf("change %+v: want %s both sides and the byte count %d", ch, redact.Shown, len(c.secret))
					}
				}
			}
			if !found {
				t.Errorf("no change at %s: %s", path, b)
			}
			if c.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), c.note) {
				t.Errorf("no note naming %s: %v", c.note, r.Notes)
			}
		})
	}
}

// TestKnownScalersAndCABundles: a KEDA ScaledObject (its CRD installed
// here) targeting a Deployment gives /spec/replicas, and an APIService
// whose spec.caBundle another manager wrote and Git leaves out gives
// /spec/caBundle; the same APIService with the caBundle in Git gives none.
func TestKnownScalersAndCABundles(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	handApply(t, ctx, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: scaledobjects.keda.sh}
spec:
  group: keda.sh
  names: {kind: ScaledObject, plural: scaledobjects, singular: scaledobject, listKind: ScaledObjectList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	if _, err := cp.Kubectl(ctx, nil, "wait", "--for=condition=Established", "crd/scaledobjects.keda.sh", "--timeout=60s"); err != nil {
		t.Fatal(err)
	}
	d := deployment(ns, "worker", "registry.invalid/worker:1", 2, "")
	handApply(t, ctx, d)
	handApply(t, ctx, fmt.Sprintf(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: worker, namespace: %s}
spec:
  scaleTargetRef: {name: worker}
  triggers: [{type: cron, metadata: {timezone: UTC, start: "0 8 * * *", end: "0 18 * * *", desiredReplicas: "4"}}]
`, ns))
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, d)
	if len(r.IgnoreDifferences) != 1 || strings.Join(r.IgnoreDifferences[0].JSONPointers, ",") != "/spec/replicas" ||
		!strings.HasPrefix(r.IgnoreDifferences[0].Source, "KEDA ScaledObject (") || !strings.HasPrefix(r.IgnoreDifferences[0].Reason, "KEDA ScaledObject "+ns+"/worker scales it") {
		t.Errorf("ignoreDifferences %+v; want /spec/replicas from the ScaledObject", r.IgnoreDifferences)
	}

	name := "v1." + ns + ".adopt-test.invalid"
	svc := fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %s}
spec:
  group: %s.adopt-test.invalid
  version: v1
  service: {namespace: %s, name: nowhere, port: 443}
  groupPriorityMinimum: 10
  versionPriority: 10
`, name, ns, ns)
	handApply(t, ctx, svc)
	t.Cleanup(func() { _, _ = cp.Kubectl(context.Background(), nil, "delete", "apiservice", name) })
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	ca := base64.StdEncoding.EncodeToString([]byte("not a real CA"))
	if _, err := dyn().Resource(apiServices).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"caBundle":"`+ca+`"}}`),
		metav1.PatchOptions{FieldManager: "ca-installer"}); err != nil {
		t.Fatal(err)
	}
	r = run(t, ctx, &preview.Previewer{Client: dyn()}, apiServices, svc)
	if len(r.IgnoreDifferences) != 1 || strings.Join(r.IgnoreDifferences[0].JSONPointers, ",") != "/spec/caBundle" || r.IgnoreDifferences[0].Manager != "ca-installer" ||
		!strings.HasPrefix(r.IgnoreDifferences[0].Source, "APIService caBundle (") {
		t.Errorf("ignoreDifferences %+v; want /spec/caBundle written by ca-installer", r.IgnoreDifferences)
	}
	r = run(t, ctx, &preview.Previewer{Client: dyn()}, apiServices, svc+"  caBundle: "+ca+"\n")
	if len(r.IgnoreDifferences) != 0 {
		t.Errorf("ignoreDifferences %+v; want none: Git carries the caBundle", r.IgnoreDifferences)
	}
}

// TestRefusalMasksReferencedSecret (issue 36): Git sets a label to the
// value of a Secret the Deployment reads through secretKeyRef; the value is
// no valid label, so the API server refuses the dry run and quotes it. The
// verdict says why with the value hidden. (Before the results were named,
// the deferred mask ran on a copy, and the verdict left unmasked.)
func TestRefusalMasksReferencedSecret(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	const canary = "canary!9f8e7d6c5b4a"
	handApply(t, ctx, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: %s\nstringData:\n  password: %q\n", ns, canary))
	env := "        env:\n        - name: FROM\n          valueFrom:\n            secretKeyRef: {name: db, key: password}\n"
	handApply(t, ctx, deployment(ns, "api", "registry.invalid/api:1", 1, env))
	git := strings.Replace(deployment(ns, "api", "registry.invalid/api:1", 1, env), "  namespace: "+ns+"\n", "  namespace: "+ns+"\n  labels: {tier: \""+canary+"\"}\n", 1)
	r := run(t, ctx, &preview.Previewer{Client: dyn()}, deployments, git)
	if r.Outcome != preview.WouldFail {
		t.Fatalf("outcome %s, want would-fail (the label value is invalid)", r.Outcome)
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), canary) || strings.Contains(string(b), "9f8e7d6c5b4a") {
		t.Fatalf("the refusal quotes the Secret's value: %s", b)
	}
	for _, s := range []string{"metadata.labels", "Invalid value", redact.Shown} {
		if !strings.Contains(r.Verdict, s) {
			t.Errorf("verdict %q does not say %q", r.Verdict, s)
		}
	}
}
