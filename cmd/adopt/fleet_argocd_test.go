package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestFleetOnRealArgoCD: three real kube-apiservers, Argo CD (with its
// real ApplicationSet controller) on the management one, the two workload
// clusters registered there by cluster Secrets holding ServiceAccount
// bearer tokens and the clusters' CA. The same ConfigMap was hand-applied
// (client-side, so with the last-applied annotation) in one namespace of
// both (one sprint; a second where its data differs between the clusters).
// plan --contexts proposes one ApplicationSet: a clusters generator (the
// label fleet=sprint selects exactly both), or, where the data differs, a
// list generator over a kustomize base and one overlay per cluster, each
// Application syncing its cluster's overlay; apply --plan DIR
// commits it to the real git server; once merged and applied to the
// management cluster, the real ApplicationSet controller generates the two
// Applications; finalize --plan DIR --sync starts their first sync, the
// real application controller syncs into both workload clusters, and the
// annotation is removed on both, with one journal per cluster, the objects
// still there. On the current GA a third sprint takes the clusters from the
// management cluster (--argocd-clusters=fleet=sprint) with a kubeconfig
// that has no workload context: plan, apply and finalize reach both
// clusters through their cluster Secrets' credentials alone. The cluster
// Secrets' tokens and CA data appear in no output, plan file, journal or
// commit. On v3.2.6 only the client-side-apply migration trap runs
// (fleetCSATrap).
func TestFleetOnRealArgoCD(t *testing.T) {
	for _, v := range []string{testenv.ArgoCDCurrent, testenv.ArgoCDOldest, testenv.ArgoCDTrap} {
		t.Run(v, func(t *testing.T) { t.Parallel(); fleetOnArgoCD(t, v) })
	}
}

func fleetOnArgoCD(t *testing.T, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mgmt, w2 := startControlPlane(ctx, t), startControlPlane(ctx, t)
	a, err := testenv.StartArgoCD(ctx, mgmt, version)
	if err != nil {
		t.Fatal(err) // never a skip
	}
	t.Cleanup(a.Stop)
	if err := a.SetConfig(ctx, map[string]string{"application.resourceTrackingMethod": "annotation"}); err != nil {
		t.Fatal(err)
	}
	if err := a.StartApplicationSetController(ctx); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for name, w := range map[string]*testenv.ControlPlane{"workload-1": cp, "workload-2": w2} {
		tok, err := a.RegisterCluster(ctx, name, w, map[string]string{"region": name, "fleet": "sprint"})
		if err != nil {
			t.Fatal(err)
		}
		tokens[name] = tok
		ca, err := os.ReadFile(filepath.Join(w.Dir, "certs", "apiserver.crt"))
		if err != nil {
			t.Fatal(err)
		}
		tokens[name+" CA"] = base64.StdEncoding.EncodeToString(ca) // the Secret's caData
	}

	dyn, err := dynamic.NewForConfig(mgmt.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	apps := dyn.Resource(argoapp.ApplicationGVR)
	argoVersion, err := argoapp.ParseVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"w1": cp, "w2": w2, "mgmt": mgmt})
	// For --argocd-clusters: no workload context, so only the cluster
	// Secrets' credentials reach the workload clusters.
	mgmtOnly := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"mgmt": mgmt})
	current := kubeconfig
	var outputs, planDirs []string
	run := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", current}, args...), strings.NewReader(""), &out, &errb)
		outputs = append(outputs, out.String(), errb.String())
		return out.String(), errb.String(), code
	}
	g, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	bare := g.BarePath("gitops")

	// sprint adopts ConfigMap usage-hook of a new namespace on both
	// clusters, with data hook.py = data[0] on workload-1 and data[1] on
	// workload-2, and returns the fleet plan and apply's arguments. With
	// registered, the clusters are --argocd-clusters=fleet=sprint, reached
	// by plan, apply and finalize through their cluster Secrets.
	sprint := func(data [2]string, registered bool) (*fleet.Fleet, []string) {
		t.Helper()
		which, contexts := []string{"--contexts", "w1,w2"}, [2]string{"w1", "w2"}
		if registered {
			which, contexts, current = []string{"--argocd-clusters=fleet=sprint"}, [2]string{"workload-1", "workload-2"}, mgmtOnly
			defer func() { current = kubeconfig }()
		}
		ns := cp.Namespace(t)
		if _, err := w2.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The runbook way: client-side (the last-applied annotation), then
		// server-side, so the annotation outlives Argo CD's first sync.
		for i, w := range []*testenv.ControlPlane{cp, w2} {
			hook := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: usage-hook}\ndata: {hook.py: \"" + data[i] + "\"}\n")
			for _, mode := range []string{"--server-side=false", "--server-side"} {
				if out, err := w.Kubectl(ctx, hook, "apply", mode, "-n", ns, "-f", "-"); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			}
		}
		dir := filepath.Join(t.TempDir(), "fleet")
		planDirs = append(planDirs, dir)
		out, errOut, code := run(append([]string{"plan", "--argocd-context", "mgmt", "-n", ns, "--argocd-version", version, "--out-dir", dir, "-q"}, which...)...)
		if code != 0 {
			t.Fatalf("plan --contexts exited %d: %s %s", code, out, errOut)
		}
		f, err := fleet.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Index.ApplicationSets) != 1 || strings.Join(f.Index.ApplicationSets[0].Clusters, ",") != "workload-1,workload-2" {
			t.Fatalf("ApplicationSets %+v (separate %v)", f.Index.ApplicationSets, f.Index.Separate)
		}
		set := f.Index.ApplicationSets[0]
		// status follows the fleet at every stage, per cluster, under the
		// generated names, recording a history for the report.
		history, html := filepath.Join(t.TempDir(), "history"), filepath.Join(t.TempDir(), "status.html")
		stage := func(want status.Stage) *status.Report {
			t.Helper()
			out, errOut, code := run("status", "--plan", dir, "--argocd-context", "mgmt", "--repo", url, "-o", "json", "--record", history, "--html", html)
			var r status.Report
			if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
				t.Fatalf("status --plan DIR exited %d: %v %s %s", code, err, errOut, out)
			}
			if len(r.Clusters) != 2 || r.Clusters[0].Cluster != contexts[0] || r.Clusters[1].Cluster != contexts[1] {
				t.Fatalf("status clusters %+v, want %v", r.Clusters, contexts)
			}
			for _, c := range r.Clusters {
				if c.Counts.Of(want) != 1 || c.Counts.Total() != 1 || c.Stuck != 0 {
					t.Errorf("status, cluster %s: %+v, want its one object %s, not stuck\n%s", c.Cluster, c, want, out)
				}
			}
			for i, o := range r.Objects {
				if gen := fleet.GeneratedName(set.Clusters[i], set.Name); o.Cluster != contexts[i] || o.App != gen {
					t.Errorf("status object %d: cluster %s app %s, want %s and %s", i, o.Cluster, o.App, contexts[i], gen)
				}
			}
			for _, p := range r.Plans {
				if p.Branch != "adopt/"+f.Index.ID() {
					t.Errorf("status follows branch %s, want the fleet's adopt/%s", p.Branch, f.Index.ID())
				}
			}
			return &r
		}
		stage(status.StagePlanned)

		applyArgs := []string{"apply", "--plan", filepath.Join(dir, fleet.IndexFile), "--repo", url, "--author", "T <t@example.invalid>", "--argocd-context", "mgmt"}
		out, errOut, code = run(applyArgs...)
		if code != 0 {
			t.Fatalf("apply --plan fleet exited %d: %s %s", code, out, errOut)
		}
		branch := "adopt/" + f.Index.ID()
		setFile := f.Plans[contexts[0]].Settings.AppsDir + "/" + set.Name + ".applicationset.yaml"
		// One label (fleet=sprint) selects exactly both clusters: a clusters
		// generator, unless each cluster syncs its own path.
		perCluster := data[0] != data[1]
		generator := "clusters"
		if perCluster {
			generator = "list"
		}
		if !strings.Contains(out, "ApplicationSet "+set.Name+" ("+generator+" generator)") || !strings.Contains(out, "wrote "+setFile) {
			t.Fatalf("apply output:\n%s", out)
		}
		committed := fileText(t, tipOf(t, bare, branch), setFile)
		want := []string{"goTemplate: true", "missingkey=error", "preserveResourcesOnDeletion: true", "ServerSideApply=true",
			"name: '{{.name}}-" + set.Name + "'", "name: '{{.name}}'"}
		tip := tipOf(t, bare, branch)
		if perCluster {
			// The clean manifests differ: a kustomize base of what the
			// clusters share, each cluster's path its overlay.
			want = append(want, "- name: workload-1", "- name: workload-2", "path: '{{.path}}'", "path: adopted/"+ns+"/overlays/workload-1", "path: adopted/"+ns+"/overlays/workload-2")
			if b := fileText(t, tip, "adopted/"+ns+"/base/configmap-usage-hook.yaml"); strings.Contains(b, "hook.py") || !strings.Contains(b, "name: usage-hook") {
				t.Errorf("the base holds a cluster's data, or not the ConfigMap:\n%s", b)
			}
			for i, dest := range set.Clusters {
				if b := fileText(t, tip, "adopted/"+ns+"/overlays/"+dest+"/patches/configmap-usage-hook.yaml"); !strings.Contains(b, data[i]) {
					t.Errorf("%s's patch lacks its data:\n%s", dest, b)
				}
			}
		} else {
			want = append(want, "matchLabels:\n          fleet: sprint", "path: adopted/"+ns)
		}
		for _, w := range want {
			if !strings.Contains(committed, w) {
				t.Errorf("the committed ApplicationSet lacks %q:\n%s", w, committed)
			}
		}
		if strings.Contains(committed, "automated") || strings.Contains(committed, "prune") {
			t.Errorf("the committed ApplicationSet automates sync or prune:\n%s", committed)
		}
		// Re-run: the same commit, nothing new.
		out, errOut, code = run(applyArgs...)
		if code != 0 || !strings.Contains(out, "is up to date") {
			t.Errorf("apply re-run: exit %d: %s %s", code, out, errOut)
		}
		stage(status.StageInReview)

		// Merge (fast-forward main to the branch) and apply the
		// ApplicationSet to the management cluster, as an app of apps would.
		if b, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", "refs/heads/"+branch).CombinedOutput(); err != nil {
			t.Fatalf("merge: %v: %s", err, b)
		}
		stage(status.StageMerged)
		if out, err := mgmt.Kubectl(ctx, []byte(committed), "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, dest := range set.Clusters {
			name := fleet.GeneratedName(dest, set.Name)
			if _, err := a.WaitApplication(ctx, name, func(s testenv.AppStatus) bool { return s.Sync != "" }); err != nil {
				t.Fatalf("the ApplicationSet controller did not generate %s: %v\n%s", name, err, a.LogTail("argocd-applicationset-controller", 3000))
			}
		}
		stage(status.StageAppPresent)
		// A sync started as from Argo CD's UI: synced and healthy, the
		// annotation still there.
		op, _ := json.Marshal(map[string]any{"operation": argoapp.SyncOperation("", argoapp.SyncOptions(nil, argoVersion))})
		for _, dest := range set.Clusters {
			name := fleet.GeneratedName(dest, set.Name)
			if _, err := apps.Namespace(argoNS).Patch(ctx, name, types.MergePatchType, op, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			if st, err := a.WaitApplication(ctx, name, func(s testenv.AppStatus) bool { return s.Failed() || testenv.SyncedHealthy(s) }); err != nil || !testenv.SyncedHealthy(st) {
				t.Fatalf("%s did not sync: %s %v", name, st, err)
			}
			if perCluster { // synced from its cluster's overlay
				u, err := apps.Namespace(argoNS).Get(ctx, name, metav1.GetOptions{})
				if p, _, _ := unstructured.NestedString(u.Object, "spec", "source", "path"); err != nil || p != "adopted/"+ns+"/overlays/"+dest {
					t.Errorf("%s syncs path %q (%v), want its overlay", name, p, err)
				}
			}
		}
		stage(status.StageSynced)

		out, errOut, code = run("finalize", "--plan", dir, "--argocd-context", "mgmt", "--sync", "--poll-interval", "500ms", "--timeout", "5m")
		t.Logf("finalize:\n%s%s", out, errOut)
		if code != 0 {
			t.Fatalf("finalize --plan fleet exited %d\ncontroller: %s", code, a.LogTail("argocd-application-controller", 3000))
		}
		for i, w := range []*testenv.ControlPlane{cp, w2} {
			live, err := w.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "usage-hook", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("workload-%d: the ConfigMap is gone: %v", i+1, err)
			}
			if _, ok := live.Annotations[budget.LastAppliedKey]; ok {
				t.Errorf("workload-%d kept the last-applied annotation", i+1)
			}
			want := fleet.GeneratedName(set.Clusters[i], set.Name) + ":/ConfigMap:" + ns + "/usage-hook"
			if got := live.Annotations[argoapp.AnnotationTrackingID]; got != want || live.Data["hook.py"] != data[i] {
				t.Errorf("workload-%d: tracking %q (want %q), data %v (want hook.py %q)", i+1, got, want, live.Data, data[i])
			}
		}
		if strings.Count(out, "1 objects: 1 finalized") != 2 {
			t.Errorf("finalize did not finalize the object on both clusters:\n%s", out)
		}
		r := stage(status.StageFinalized)
		if c := r.Coverage; c == nil || len(c.Namespaces) != 2 || c.Namespaces[0].Cluster != contexts[0] || c.Namespaces[1].Cluster != contexts[1] || c.Tracked != c.Objects || c.Tracked < 2 {
			t.Errorf("status coverage per cluster: %+v", r.Coverage)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range contexts {
			if row := `<td data-cluster="` + c + `"><code>` + c + `</code></td><td><code>` + fleet.GeneratedName(set.Clusters[i], set.Name) + `</code>`; !strings.Contains(string(page), row) {
				t.Errorf("the report's Applications lack the row %s", row)
			}
		}
		if n := strings.Count(string(page), `data-chart="cluster-burndown" data-points="6"`); n != 2 {
			t.Errorf("the report has %d per-cluster burndowns of the 6 runs, want 2", n)
		}
		for i, ctxName := range contexts {
			j, err := os.ReadFile(f.Files[ctxName] + ".journal")
			app := `"app":"` + fleet.GeneratedName(set.Clusters[i], set.Name) + `"`
			if err != nil || !strings.Contains(string(j), app) || !strings.Contains(string(j), `"result":"finalized"`) {
				t.Errorf("cluster %s's journal lacks %s, finalized: %v: %s", ctxName, app, err, j)
			}
		}
		return f, applyArgs
	}
	switch version {
	case testenv.ArgoCDTrap:
		// The client-side-apply migration trap of 3.1.0-3.3.1; the rest of
		// the flow runs on the other versions.
		fleetCSATrap(ctx, t, a, mgmt, w2, run, url, bare)
	default:
		f, applyArgs := sprint([2]string{"print(1)", "print(1)"}, false)
		sprint([2]string{"print('eu')", "print('us')"}, false)
		if version == testenv.ArgoCDCurrent { // one version is enough for the same flow
			sprint([2]string{"print(2)", "print(2)"}, true)
		}
		fleetRefusesOtherClusters(t, f, applyArgs, mgmt, w2, run)
	}

	for _, dir := range planDirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			outputs = append(outputs, string(b))
		}
	}
	outputs = append(outputs, everything(t, bare))
	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{}}
	for name, tok := range tokens {
		scan.secrets["cluster "+name+"'s bearer token"] = tok
	}
	for i, o := range outputs {
		scan.add(fmt.Sprintf("output %d", i), o)
	}
	scan.check(t)
}

// fleetRefusesOtherClusters: a fleet plan for other clusters (the contexts
// now name each other's servers), and a plan file edited after planning,
// are refused.
func fleetRefusesOtherClusters(t *testing.T, f *fleet.Fleet, applyArgs []string, mgmt, w2 *testenv.ControlPlane, run func(...string) (string, string, int)) {
	t.Helper()
	swapped := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"w1": w2, "w2": cp, "mgmt": mgmt})
	var sw, swErr bytes.Buffer
	if code := runAdopt(t, "adopt", append([]string{"--kubeconfig", swapped}, append(applyArgs, "--dry-run")...), strings.NewReader(""), &sw, &swErr); code != ExitUsage || !strings.Contains(swErr.String(), "was made for cluster") {
		t.Errorf("apply of a fleet plan for other clusters: exit %d: %s", code, swErr.String())
	}
	w1File := f.Files["w1"]
	b, _ := os.ReadFile(w1File)
	if err := os.WriteFile(w1File, bytes.Replace(b, []byte("context: w1"), []byte("context: w9"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(append(applyArgs, "--dry-run")...); code != ExitUsage || !strings.Contains(errOut, w1File+" was edited after it was planned") {
		t.Errorf("apply of an edited plan file: exit %d: %s", code, errOut)
	}
	_ = os.WriteFile(w1File, b, 0o644)

}

// fleetCSATrap: the client-side-apply migration trap under the names an
// ApplicationSet generates, on real clusters and Argo CD v3.2.6's real
// controllers. A ConfigMap hand-applied client-side on both workload
// clusters is sized so that workload-1's own plan (`plan --context`)
// predicts the first sync's migration 11 bytes under the 262,144-byte cap:
// no finding. The fleet plan of both predicts it
// 11 bytes over on each (the prefix "workload-N-" counted in the tracking
// id and its copy in last-applied), with the critical finding naming
// <cluster>-<app>, and apply writes ClientSideApplyMigration=false into
// the set's template. With the option taken out, the Applications the real
// ApplicationSet controller generates fail their first sync with "Too
// long" on both clusters, and the objects are left as they were.
func fleetCSATrap(ctx context.Context, t *testing.T, a *testenv.ArgoCD, mgmt, w2 *testenv.ControlPlane, run func(...string) (string, string, int), url, bare string) {
	t.Helper()
	ns := cp.Namespace(t)
	if _, err := w2.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const name = "big-hook"
	ref := "ConfigMap " + ns + "/" + name
	hand := func(size int) {
		doc := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {blob: \"" + strings.Repeat("x", size) + "\"}\n")
		for _, w := range []*testenv.ControlPlane{cp, w2} {
			if out, err := w.Kubectl(ctx, doc, "apply", "--server-side=false", "-n", ns, "-f", "-"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
		}
	}
	single := func() *plan.Object {
		t.Helper()
		file := filepath.Join(t.TempDir(), "w1.yaml")
		if out, errOut, code := run("plan", "--context", "w1", "--argocd-context", "mgmt", "-n", ns, "--argocd-version", "v3.2.6", "--out", file, "-q"); code != 0 {
			t.Fatalf("plan --context w1 exited %d: %s %s", code, out, errOut)
		}
		return readPlan(t, file).Object(ref)
	}
	planFleet := func() (*fleet.Fleet, string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "fleet")
		if out, errOut, code := run("plan", "--contexts", "w1,w2", "--argocd-context", "mgmt", "-n", ns, "--argocd-version", "v3.2.6", "--out-dir", dir, "-q"); code != 0 {
			t.Fatalf("plan --contexts exited %d: %s %s", code, out, errOut)
		}
		f, err := fleet.Load(dir)
		if err != nil || len(f.Index.ApplicationSets) != 1 {
			t.Fatalf("fleet plan: %v %+v", err, f)
		}
		return f, dir
	}
	const base = 240000
	prefix := len("workload-1-")
	hand(base)
	// One byte of data is one byte of last-applied.
	size := base + budget.AnnotationCap - prefix - single().CSAMigration.Bytes
	hand(size)
	if ob := single(); ob.CSAMigration.Bytes != budget.AnnotationCap-prefix || ob.CSAMigration.Fails || finding(ob, plan.CodeCSAMigrationFails) != nil {
		t.Fatalf("workload-1's own plan: %+v, want %d B, under the cap, no finding", ob.CSAMigration, budget.AnnotationCap-prefix)
	}
	f, dir := planFleet()
	set := f.Index.ApplicationSets[0]
	for i, c := range []string{"w1", "w2"} {
		ob := f.Plans[c].Object(ref)
		gen := fleet.GeneratedName(set.Clusters[i], set.Name)
		fnd := finding(ob, plan.CodeCSAMigrationFails)
		if ob.CSAMigration.Bytes != budget.AnnotationCap+prefix || !ob.CSAMigration.Fails || fnd == nil || fnd.Severity != plan.Critical || !strings.Contains(fnd.Message, "Application "+gen) {
			t.Fatalf("cluster %s: prediction %+v, finding %+v; want %d B, critical, naming %s", c, ob.CSAMigration, fnd, budget.AnnotationCap+prefix, gen)
		}
	}
	if out, errOut, code := run("apply", "--plan", dir, "--repo", url, "--author", "T <t@example.invalid>", "--argocd-context", "mgmt", "-q"); code != 0 {
		t.Fatalf("apply exited %d: %s %s", code, out, errOut)
	}
	branch := "adopt/" + f.Index.ID()
	committed := fileText(t, tipOf(t, bare, branch), f.Plans["w1"].Settings.AppsDir+"/"+set.Name+".applicationset.yaml")
	opt := "        - ClientSideApplyMigration=false\n"
	if !strings.Contains(committed, opt) {
		t.Fatalf("the committed ApplicationSet lacks %q:\n%s", opt, committed)
	}
	if b, err := exec.Command("git", "-C", bare, "update-ref", "refs/heads/main", "refs/heads/"+branch).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v: %s", err, b)
	}
	// The set without the option, syncing on its own (automated, no
	// prune, one quick retry), as the Applications would without adopt's
	// prediction: the real first sync's migration passes the cap on both
	// clusters, 11 bytes over under <cluster>-<app>, and the objects are
	// left as they were. (finalize --sync would not show it: its sync
	// operation turns the migration off on these versions.)
	automated := "      syncPolicy:\n        automated: {}\n        retry:\n          limit: 1\n          backoff: {duration: 1s, factor: 1, maxDuration: 1s}\n"
	stripped := strings.Replace(strings.Replace(committed, opt, "", 1), "      syncPolicy:\n", automated, 1)
	if !strings.Contains(stripped, "automated: {}") {
		t.Fatalf("no template syncPolicy to automate:\n%s", committed)
	}
	if out, err := mgmt.Kubectl(ctx, []byte(stripped), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, dest := range set.Clusters {
		gen := fleet.GeneratedName(dest, set.Name)
		st, err := a.WaitApplication(ctx, gen, func(s testenv.AppStatus) bool { return s.Failed() || testenv.SyncedHealthy(s) })
		if err != nil || !st.Failed() || !strings.Contains(strings.Join(st.Resources, "; "), "Too long: may not be more than 262144 bytes") {
			t.Errorf("%s without the option: %s (%v), want its first sync failed with Too long", gen, st, err)
		}
	}
	for i, w := range []*testenv.ControlPlane{cp, w2} {
		live, err := w.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := live.Annotations[budget.LastAppliedKey]; !ok || len(live.Data["blob"]) != size {
			t.Errorf("workload-%d: the failed sync changed the object: last-applied kept %v, data %d B (want %d)", i+1, ok, len(live.Data["blob"]), size)
		}
	}
}
