package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// The namespaces of TestAdoptedStaysSynced, one Application each.
const (
	nsHeld   = "held"   // replica-manager owns spec.replicas; the plan's entry is written
	nsFought = "fought" // the same, with --no-ignore-differences: the fight
	nsScaled = "scaled" // the real HPA controller scales it on an external metric
)

// replicaManager is the second writer of spec.replicas, a server-side apply
// under its own field manager, as an autoscaler would write.
const replicaManager = "replica-manager"

// TestAdoptedStaysSynced is issue 30's proof on the current Argo CD: a
// Deployment applied by hand whose spec.replicas another writer owns, and
// Git says 2. After plan --preview, apply (auto-sync, self-heal on), merge,
// the first sync and finalize, the Application is Synced and replicas keep
// the other writer's value, and stay Synced while it changes them again.
// The same with --no-ignore-differences shows the fight. The real HPA
// controller, scaling on an External metric the test serves through the
// real aggregation layer, gives jsonPointers [/spec/replicas] and the
// Application stays Synced while it scales. And a replica count a person
// changes with kubectl after the plan is not ignored: Argo CD sets it back.
func TestAdoptedStaysSynced(t *testing.T) {
	t.Parallel() // its own control plane, git server and Argo CD
	// The current GA only, to keep e2e's time: v2.14.21, the oldest,
	// runs the end-to-end story (TestEndToEnd).
	for _, v := range []string{testenv.ArgoCDCurrent} {
		t.Run(v, func(t *testing.T) { staysSynced(t, v) })
	}
}

func staysSynced(t *testing.T, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ph := &phases{t: t, last: time.Now()}
	defer ph.print()
	cp := startControlPlane(ctx, t)
	sched, err := testenv.StartScheduling(ctx, cp, "--horizontal-pod-autoscaler-sync-period=1s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sched.Stop)
	argo := startArgoCD(ctx, t, cp, version)
	ph.done("control plane, controller manager, argo cd")

	gs, err := testenv.StartGitServer("adopt", "git-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gs.Close)
	files := map[string]string{}
	for _, ns := range []string{nsHeld, nsFought, nsScaled} {
		files["apps/"+ns+"/deployment.yaml"] = deploymentYAML(ns, 2)
	}
	files["apps/"+nsScaled+"/hpa.yaml"] = hpaYAML
	repoURL, err := gs.CreateRepo("synced", files)
	if err != nil {
		t.Fatal(err)
	}
	if err := argo.AddRepository(ctx, "synced", repoURL, gs.User, gs.Password); err != nil {
		t.Fatal(err)
	}

	// The estate, by hand: each Deployment at 1 replica, then the second
	// writer's 3 on held and fought, and the HPA's on scaled.
	d := dynamic.NewForConfigOrDie(cp.RESTConfig())
	deploys := func(ns string) dynamic.ResourceInterface {
		return d.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	}
	for _, ns := range []string{nsHeld, nsFought, nsScaled} {
		kubectl(t, cp, "create", "namespace", ns)
		work := t.TempDir()
		writeFile(t, filepath.Join(work, "d.yaml"), deploymentYAML(ns, 1))
		kubectl(t, cp, "apply", "-f", filepath.Join(work, "d.yaml"))
	}
	setReplicas := func(ns string, n int) {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":%q},"spec":{"replicas":%d}}`, ns, n)
		force := true
		if _, err := deploys(ns).Patch(ctx, "api", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: replicaManager, Force: &force}); err != nil {
			t.Fatal(err)
		}
	}
	setReplicas(nsHeld, 3)
	setReplicas(nsFought, 3)
	metric := &atomic.Int64{}
	metric.Store(3)
	serveExternalMetric(ctx, t, cp, metric)
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "hpa.yaml"), hpaYAML)
	kubectl(t, cp, "apply", "-f", filepath.Join(work, "hpa.yaml"))
	waitReplicas(ctx, t, deploys(nsScaled), 3, "the HPA scaling to the external metric's 3")
	if got := replicaOwners(t, deploys(nsScaled)); !slices.Contains(got, "kube-controller-manager (Update, scale)") {
		t.Fatalf("scaled: spec.replicas owned by %v, want the HPA controller (kube-controller-manager on the scale subresource)", got)
	}
	ph.done("estate")

	// plan --preview, with the fight's Application turned off.
	cfg := filepath.Join(work, "adopt.yaml")
	writeFile(t, cfg, syncedConfig)
	planFile := filepath.Join(work, "plan.yaml")
	gitEnv := []string{"ADOPT_GIT_USERNAME=" + gs.User, "ADOPT_GIT_TOKEN=" + gs.Password}
	r := runAdopt(t, cp.Kubeconfig, gitEnv, "plan", "-A", "--repo", repoURL, "--config", cfg, "--preview", "--out", planFile,
		"--argocd-version", version, "--no-ignore-differences", "*"+nsFought+"*")
	if r.code != 0 {
		t.Fatalf("adopt plan: %s", r)
	}
	p := readPlan(t, planFile)
	held, fought, scaled := appOf(t, p, nsHeld), appOf(t, p, nsFought), appOf(t, p, nsScaled)
	for _, a := range []*plan.Application{held, fought} {
		if len(a.IgnoreDifferences) != 1 || !slices.Equal(a.IgnoreDifferences[0].ManagedFieldsManagers, []string{replicaManager}) ||
			len(a.IgnoreDifferences[0].JSONPointers) != 0 || a.IgnoreDifferences[0].Name != "api" || a.IgnoreDifferences[0].Group != "apps" {
			t.Fatalf("plan: %s records ignoreDifferences %+v; want managedFieldsManagers [%s] for apps/Deployment api\n%s", a.Name, a.IgnoreDifferences, replicaManager, r.out)
		}
	}
	if held.IgnoreDifferencesOff != "" || fought.IgnoreDifferencesOff != "turned off by --no-ignore-differences" {
		t.Fatalf("plan: %s off %q, %s off %q; want only %s turned off", held.Name, held.IgnoreDifferencesOff, fought.Name, fought.IgnoreDifferencesOff, fought.Name)
	}
	byHPA := false
	for _, e := range scaled.IgnoreDifferences {
		byHPA = byHPA || slices.Equal(e.JSONPointers, []string{"/spec/replicas"}) && strings.HasPrefix(e.Source, "HorizontalPodAutoscaler")
	}
	if !byHPA {
		t.Fatalf("plan: %s records %+v; want jsonPointers [/spec/replicas] from the HPA", scaled.Name, scaled.IgnoreDifferences)
	}
	ph.done("plan")

	// apply with auto-sync, merge, and the Applications with self-heal on
	// (the user's choice after review), applied by hand: no root syncs
	// this repo's apps directory.
	r = runAdopt(t, cp.Kubeconfig, []string{"ADOPT_GIT_TOKEN=" + gs.Password}, "apply", "--plan", planFile, "--repo", repoURL,
		"--git-user", gs.User, "--author", "adopt e2e <e2e@example.invalid>", "--auto-sync")
	if r.code != 0 {
		t.Fatalf("adopt apply: %s", r)
	}
	bare := gs.BarePath("synced")
	branch := git(t, bare, "for-each-ref", "--format=%(refname)", "refs/heads/adopt/")
	git(t, bare, "update-ref", "refs/heads/main", git(t, bare, "rev-parse", branch))
	checkout := filepath.Join(work, "checkout")
	git(t, "", "clone", "-q", bare, checkout)
	for _, a := range []*plan.Application{held, fought, scaled} {
		file := filepath.Join(checkout, p.Settings.AppsDir, a.Name+".yaml")
		app, err := argoapp.DecodeApplication(readFile(t, file))
		if err != nil {
			t.Fatal(err)
		}
		respect := app.Spec.SyncPolicy.SyncOptions.HasOption(argoapp.SyncOptionRespectIgnoreDifferences)
		if a == fought && (len(app.Spec.IgnoreDifferences) != 0 || respect) || a != fought && (len(app.Spec.IgnoreDifferences) != len(a.IgnoreDifferences) || !respect) {
			t.Fatalf("%s as written: ignoreDifferences %+v, RespectIgnoreDifferences %v; want the plan's %d entries (none for %s)", a.Name, app.Spec.IgnoreDifferences, respect, len(a.WrittenIgnoreDifferences()), fought.Name)
		}
		manifest := strings.Replace(string(readFile(t, file)), "selfHeal: false", "selfHeal: true", 1)
		writeFile(t, file, manifest)
		kubectl(t, cp, "apply", "-n", argo.Namespace, "-f", file)
	}
	ph.done("apply + merge + Applications")

	// The first syncs (automated). finalize waits for held and scaled,
	// cleans up, and watches them over the settle window.
	r = runAdopt(t, cp.Kubeconfig, nil, "finalize", "--plan", planFile, "--app", held.Name, "--app", scaled.Name,
		"--allow-health", "Suspended", "--timeout", "3m", "--poll-interval", "500ms", "--settle", "10s", "-o", "json")
	if r.code != 0 {
		st, _ := argo.ApplicationStatus(ctx, held.Name)
		t.Fatalf("finalize: %s\n%s: %s", r, held.Name, st)
	}
	var rep finalize.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("finalize -o json: %v\n%s", err, r.out)
	}
	for _, a := range rep.Apps {
		if !a.Ready || a.Settle == nil || !a.Settle.Synced {
			t.Errorf("finalize: %s %+v (settle %+v); want ready and Synced over the settle window", a.Name, a, a.Settle)
		}
	}
	if got := replicas(t, deploys(nsHeld)); got != 3 {
		t.Errorf("%s after the first sync: replicas %d, want %s's 3 (Git says 2)", nsHeld, got, replicaManager)
	}
	if got := replicas(t, deploys(nsScaled)); got != 3 {
		t.Errorf("%s after the first sync: replicas %d, want the HPA's 3 (Git says 2)", nsScaled, got)
	}
	// The fight, first round: the sync took spec.replicas back to Git's 2.
	if _, err := argo.WaitApplication(ctx, fought.Name, func(s testenv.AppStatus) bool { return s.OperationPhase == "Succeeded" }); err != nil {
		t.Fatal(err)
	}
	if got := replicas(t, deploys(nsFought)); got != 2 {
		t.Errorf("%s after the first sync without the entries: replicas %d, want Git's 2 (the sync takes the field from %s)", nsFought, got, replicaManager)
	}
	ph.done("first syncs + finalize")

	// The writers change replicas again.
	heldSyncs := lastSync(ctx, t, d, argo, held.Name)
	setReplicas(nsHeld, 4)
	foughtSyncs := lastSync(ctx, t, d, argo, fought.Name)
	setReplicas(nsFought, 4)
	metric.Store(5)
	waitReplicas(ctx, t, deploys(nsScaled), 5, "the HPA scaling to the external metric's 5")
	scaledSyncs := lastSync(ctx, t, d, argo, scaled.Name)
	// Without the entries, self-heal sets it back: the fight.
	waitReplicas(ctx, t, deploys(nsFought), 2, "self-heal setting "+nsFought+" back to Git's 2 (the fight)")
	waitNewSync(ctx, t, d, argo, fought.Name, foughtSyncs, "self-heal's sync of "+fought.Name+" after "+replicaManager+"'s change")
	// With them: a refresh that saw the change leaves both Synced, with no sync.
	for _, c := range []struct {
		app    string
		ns     string
		want   int64
		before string
	}{{held.Name, nsHeld, 4, heldSyncs}, {scaled.Name, nsScaled, 5, scaledSyncs}} {
		st := refreshed(ctx, t, d, argo, c.app)
		if now := lastSync(ctx, t, d, argo, c.app); st.Sync != "Synced" || now != c.before {
			t.Errorf("%s after the writer changed replicas: %s, last sync started at %s (before: %s); want Synced and no sync", c.app, st, now, c.before)
		}
		if got := replicas(t, deploys(c.ns)); got != c.want {
			t.Errorf("%s: replicas %d, want the writer's %d", c.ns, got, c.want)
		}
	}
	ph.done("writers change replicas")

	// A person scales held with kubectl after the plan, while finalize
	// watches it over a long settle window: the entry does not cover the
	// field (kubectl now owns it), so the Application goes OutOfSync,
	// finalize names the field and the manager, and self-heal sets Git's 2
	// back.
	fin := exec.CommandContext(ctx, adoptBin, "--kubeconfig", cp.Kubeconfig, "finalize", "--plan", planFile, "--app", held.Name,
		"--allow-health", "Suspended", "--timeout", "2m", "--poll-interval", "500ms", "--settle", "2m")
	var finOut strings.Builder
	fin.Stdout = &finOut
	errPipe, err := fin.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := fin.Start(); err != nil {
		t.Fatal(err)
	}
	ready, stderrDone := make(chan struct{}), make(chan struct{})
	var finErr strings.Builder
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			finErr.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Application "+held.Name+": waiting: it must stay Synced over the") {
				close(ready)
			}
		}
	}()
	select { // a barrier: finalize's settle window is open, its watches with it (its progress line)
	case <-ready:
	case <-stderrDone:
		_ = fin.Wait()
		t.Fatalf("finalize ended before it opened the settle window of %s:\n%s\n%s", held.Name, finOut.String(), finErr.String())
	}
	kubectl(t, cp, "scale", "-n", nsHeld, "deployment/api", "--replicas=7")
	waitReplicas(ctx, t, deploys(nsHeld), 2, "self-heal setting the kubectl-scaled "+nsHeld+" back to Git's 2 (drift shown, not ignored)")
	waitNewSync(ctx, t, d, argo, held.Name, heldSyncs, "self-heal's sync of the kubectl drift on "+held.Name)
	<-stderrDone
	werr := fin.Wait()
	named := "went OutOfSync within the 2m0s settle window after cleanup: apps/Deployment " + nsHeld + "/api: spec.replicas changed by kubectl (Update, scale)"
	if code := fin.ProcessState.ExitCode(); code != 4 || !strings.Contains(finOut.String(), named) {
		t.Errorf("finalize while kubectl scaled %s: exit %d (%v); want 4 and %q\n%s\n%s", held.Name, code, werr, named, finOut.String(), finErr.String())
	}
	ph.done("kubectl drift, named by finalize")
}

// syncedConfig plans the test's namespaces only.
const syncedConfig = `apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
appsDir: argocd/apps
exclusions:
- namespaces: [argocd, default, kube-*, metrics]
- kinds: [Namespace, APIService]
`

func deploymentYAML(ns string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: %s
spec:
  replicas: %d
  paused: true
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
      - name: main
        image: registry.invalid/api:1
`, ns, replicas)
}

// hpaYAML scales scaled/api on the External metric queue_depth, one replica
// per unit: replicas = ceil(value / 1), with no pod running.
var hpaYAML = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
  namespace: ` + nsScaled + `
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 1
  maxReplicas: 6
  metrics:
  - type: External
    external:
      metric: {name: queue_depth}
      target: {type: AverageValue, averageValue: "1"}
`

// serveExternalMetric serves external.metrics.k8s.io/v1beta1 over TLS on
// loopback, with queue_depth = metric, and registers it through the real
// aggregation layer: an APIService whose Service is an ExternalName for
// localhost (the aggregator resolves it to the port the APIService names).
func serveExternalMetric(ctx context.Context, t *testing.T, cp *testenv.ControlPlane, metric *atomic.Int64) {
	t.Helper()
	const gv = "external.metrics.k8s.io/v1beta1"
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+gv, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":%q,"resources":[{"name":"queue_depth","singularName":"","namespaced":true,"kind":"ExternalMetricValueList","verbs":["get"]}]}`, gv)
	})
	mux.HandleFunc("/apis/"+gv+"/namespaces/", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/queue_depth") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"ExternalMetricValueList","apiVersion":%q,"metadata":{},"items":[{"metricName":"queue_depth","metricLabels":{},"timestamp":%q,"value":"%d"}]}`,
			gv, time.Now().UTC().Format(time.RFC3339), metric.Load())
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	work := t.TempDir()
	writeFile(t, filepath.Join(work, "metrics.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: metrics}
---
apiVersion: v1
kind: Service
metadata: {name: external-metrics, namespace: metrics}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.external.metrics.k8s.io}
spec:
  group: external.metrics.k8s.io
  version: v1beta1
  service: {namespace: metrics, name: external-metrics, port: %d}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`, port))
	kubectl(t, cp, "apply", "-f", filepath.Join(work, "metrics.yaml"))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Kubectl(ctx, nil, "get", "--raw", "/apis/"+gv+"/namespaces/"+nsScaled+"/queue_depth")
		return err == nil, nil
	})
	if err != nil {
		out, _ := cp.Kubectl(ctx, nil, "get", "apiservice", "v1beta1.external.metrics.k8s.io", "-o", "yaml")
		t.Fatalf("the external metric is not served through the aggregation layer: %v\n%s\n%s", err, out, cp.LogTail("kube-apiserver", 2000))
	}
}

// appOf is the plan's Application for namespace ns.
func appOf(t *testing.T, p *plan.Plan, ns string) *plan.Application {
	t.Helper()
	for i := range p.Applications {
		if p.Applications[i].Namespace == ns {
			return &p.Applications[i]
		}
	}
	t.Fatalf("the plan proposes no Application for namespace %s", ns)
	return nil
}

func replicas(t *testing.T, c dynamic.ResourceInterface) int64 {
	t.Helper()
	u, err := c.Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n
}

// replicaOwners are the managers (operation, subresource) owning spec.replicas.
func replicaOwners(t *testing.T, c dynamic.ResourceInterface) []string {
	t.Helper()
	u, err := c.Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range u.GetManagedFields() {
		if m.FieldsV1 != nil && strings.Contains(string(m.FieldsV1.Raw), `"f:replicas"`) && strings.Contains(string(m.FieldsV1.Raw), `"f:spec"`) {
			s := m.Manager + " (" + string(m.Operation)
			if m.Subresource != "" {
				s += ", " + m.Subresource
			}
			out = append(out, s+")")
		}
	}
	return out
}

// waitReplicas waits until the Deployment's spec.replicas is want.
func waitReplicas(ctx context.Context, t *testing.T, c dynamic.ResourceInterface, want int64, what string) {
	t.Helper()
	var last int64
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		last = replicas(t, c)
		return last == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: replicas %d, want %d", what, last, want)
	}
}

// lastSync is when Application app's last operation started
// (status.operationState.startedAt): a self-heal sync at the same
// revision adds no history entry, but starts an operation.
func lastSync(ctx context.Context, t *testing.T, d dynamic.Interface, argo *testenv.ArgoCD, app string) string {
	t.Helper()
	u, err := d.Resource(argoapp.ApplicationGVR).Namespace(argo.Namespace).Get(ctx, app, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "startedAt")
	return at
}

// waitNewSync waits until Application app's last operation is not the one
// that started at before, and has succeeded.
func waitNewSync(ctx context.Context, t *testing.T, d dynamic.Interface, argo *testenv.ArgoCD, app, before, what string) {
	t.Helper()
	apps := d.Resource(argoapp.ApplicationGVR).Namespace(argo.Namespace)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := apps.Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		op, _, _ := unstructured.NestedMap(u.Object, "status", "operationState")
		b, _ := json.Marshal(op)
		last = string(b)
		at, _, _ := unstructured.NestedString(op, "startedAt")
		phase, _, _ := unstructured.NestedString(op, "phase")
		return at != before && phase == "Succeeded", nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: the last operation started at %s: %s", what, before, last)
	}
}

// refreshed asks Argo CD for a normal refresh of app (the refresh
// annotation, as argocd app get --refresh does) and waits until it is
// done: the controller removed the annotation, and status.reconciledAt
// (seconds) is not before the ask.
func refreshed(ctx context.Context, t *testing.T, d dynamic.Interface, argo *testenv.ArgoCD, app string) testenv.AppStatus {
	t.Helper()
	apps := d.Resource(argoapp.ApplicationGVR).Namespace(argo.Namespace)
	asked := time.Now().Truncate(time.Second)
	patch := `{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`
	if _, err := apps.Patch(ctx, app, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := apps.Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		at, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt")
		when, _ := time.Parse(time.RFC3339, at)
		_, pending := u.GetAnnotations()["argocd.argoproj.io/refresh"]
		last = fmt.Sprintf("refresh pending %v, reconciledAt %s, asked at %s", pending, at, asked.Format(time.RFC3339))
		return !pending && !when.Before(asked), nil
	})
	if err != nil {
		st, _ := argo.ApplicationStatus(ctx, app)
		t.Fatalf("Argo CD did not refresh %s: %v (%s; %s)\ncontroller: %s", app, err, last, st, argo.LogTail("argocd-application-controller", 3000))
	}
	st, err := argo.ApplicationStatus(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
