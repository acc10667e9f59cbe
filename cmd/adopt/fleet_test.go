package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// fleetKubeconfig writes one kubeconfig whose contexts name the given
// control planes' admin kubeconfigs, plus "down", a cluster nobody serves.
func fleetKubeconfig(t *testing.T, clusters map[string]*testenv.ControlPlane) string {
	t.Helper()
	files := map[string]string{}
	for name, c := range clusters {
		files[name] = c.Kubeconfig
	}
	return fleetKubeconfigFiles(t, files)
}

// fleetKubeconfigFiles is fleetKubeconfig from kubeconfig files by context.
func fleetKubeconfigFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, file := range files {
		cfg, err := clientcmd.LoadFromFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cur := cfg.Contexts[cfg.CurrentContext]
		out.Clusters[name] = cfg.Clusters[cur.Cluster]
		out.AuthInfos[name] = cfg.AuthInfos[cur.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		out.CurrentContext = name
	}
	out.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	out.AuthInfos["down"] = &clientcmdapi.AuthInfo{Token: "none"}
	out.Contexts["down"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "down"}
	path := filepath.Join(t.TempDir(), "fleet.kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFleetPlan plans two real workload clusters registered with a third's
// Argo CD, plus one that is down: the same namespace with the same objects
// on both is proposed as one ApplicationSet over the registered names, an
// Application on one cluster only stays an Application, the down cluster
// is reported and the others are planned, a re-run is byte-identical, and
// no cluster credential reaches the output or the files.
func TestFleetPlan(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// w1 is a plane of its own: the plan covers every namespace, and the
	// package's shared plane changes under its parallel tests.
	mgmt, w1, w2 := startControlPlane(ctx, t), startControlPlane(ctx, t), startControlPlane(ctx, t)
	installApplicationCRDOn(t, mgmt)
	tokens := map[string]string{"workload-1": "fleet-CANARY-token-w1", "workload-2": "fleet-CANARY-token-w2"}
	registerWorkloads(ctx, t, mgmt, map[string]string{"workload-1": w1.Server, "workload-2": w2.Server}, tokens)
	shared, only := w1.Namespace(t), w1.Namespace(t)
	if _, err := w2.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shared}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: usage-hook}\ndata: {hook.py: \"print(1)\"}\n")
	if out, err := w1.Kubectl(ctx, hook, "apply", "-n", shared, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := w2.Kubectl(ctx, hook, "apply", "-n", shared, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if out, err := w1.Kubectl(ctx, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: solo}\ndata: {a: b}\n"), "apply", "-n", only, "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	kubeconfig := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"w1": w1, "w2": w2})
	runFleet := func(dir string, which ...string) (string, string, int) {
		if len(which) == 0 {
			which = []string{"--contexts", "w1,w2,down"}
		}
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", kubeconfig, "plan", "--argocd-kubeconfig", mgmt.Kubeconfig,
			"--argocd-version", "v3.2.6", "--out-dir", dir, "-o", "json", "--request-timeout", "5s"}, which...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	dir := filepath.Join(t.TempDir(), "fleet")
	out, errOut, code := runFleet(dir)
	if code != 0 {
		t.Fatalf("plan --contexts exited %d: %s %s", code, out, errOut)
	}
	var ix fleet.Index
	if err := json.Unmarshal([]byte(out), &ix); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	byCtx := map[string]fleet.ClusterEntry{}
	for _, c := range ix.Clusters {
		byCtx[c.Context] = c
	}
	if byCtx["w1"].Destination != "workload-1" || byCtx["w2"].Destination != "workload-2" || byCtx["w1"].PlanID == "" || byCtx["w2"].PlanID == "" {
		t.Fatalf("clusters %+v", ix.Clusters)
	}
	if byCtx["down"].NotScanned == "" || byCtx["down"].Plan != "" {
		t.Errorf("the down cluster: %+v", byCtx["down"])
	}
	if len(ix.ApplicationSets) != 1 {
		t.Fatalf("ApplicationSets %+v (separate %v)", ix.ApplicationSets, ix.Separate)
	}
	set := ix.ApplicationSets[0]
	if set.Namespace != shared || strings.Join(set.Clusters, ",") != "workload-1,workload-2" || strings.Join(set.Objects, ",") != "ConfigMap "+shared+"/usage-hook" {
		t.Errorf("ApplicationSet %+v", set)
	}
	w1Plan := readPlan(t, filepath.Join(dir, byCtx["w1"].Plan))
	if solo := w1Plan.Object("ConfigMap " + only + "/solo"); solo == nil || solo.App == set.Name {
		t.Errorf("the Application on one cluster only: %+v", solo)
	}
	if d := readPlan(t, filepath.Join(dir, byCtx["w2"].Plan)).Settings.Destination; d != "name:workload-2" {
		t.Errorf("w2's plan destination %q", d)
	}
	// One cluster's plan of a hub: status reads its objects on the
	// cluster and its Applications on the management cluster, and refuses
	// without it.
	statusOf := func(hub ...string) (string, string, int) {
		var out, errb bytes.Buffer
		args := append([]string{"--kubeconfig", kubeconfig, "--context", "w2", "status", "--plan", filepath.Join(dir, byCtx["w2"].Plan), "-o", "json", "--no-coverage"}, hub...)
		code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	sout, serr, scode := statusOf("--argocd-kubeconfig", mgmt.Kubeconfig)
	var sr status.Report
	if err := json.Unmarshal([]byte(sout), &sr); scode != 0 || err != nil || sr.Stuck != 0 || !strings.Contains(sout, `"ref": "ConfigMap `+shared+`/usage-hook"`) {
		t.Errorf("status of w2's plan with its management cluster: exit %d: %v %s %s", scode, err, sout, serr)
	}
	if _, serr, scode := statusOf(); scode != ExitUsage || !strings.Contains(serr, "give --argocd-context") {
		t.Errorf("status of w2's plan without its management cluster: exit %d: %s", scode, serr)
	}

	// --all-contexts takes every context of the kubeconfig: the same plan.
	again := filepath.Join(t.TempDir(), "fleet")
	if _, errOut, code := runFleet(again, "--all-contexts"); code != 0 {
		t.Fatalf("second run (--all-contexts) exited %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	scan := &leakScan{texts: map[string]string{"plan (stdout)": out, "plan (stderr)": errOut}, secrets: map[string]string{}}
	for name, tok := range tokens {
		scan.secrets[name+"'s cluster Secret token"] = tok
	}
	for _, f := range files {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(again, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs on re-run (%v)", filepath.Base(f), err)
		}
		scan.add(f, string(a))
	}
	scan.check(t)

	// Argo CD 2's label tracking, and the clusters registered under long
	// names: <cluster>-<app> would pass 63 characters, which no label
	// value may, so plan refuses with the names and what to do, and writes
	// nothing; with annotation tracking the same names are planned.
	long := map[string]string{"workload-1": "workload-1-" + strings.Repeat("e", 40), "workload-2": "workload-2-" + strings.Repeat("e", 40)}
	for name, to := range long {
		sec, err := mgmt.Clientset().CoreV1().Secrets(argoNS).Get(ctx, "cluster-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sec.StringData = map[string]string{"name": to}
		if _, err := mgmt.Clientset().CoreV1().Secrets(argoNS).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: argoapp.ConfigMapName, Namespace: argoNS}, Data: map[string]string{"application.resourceTrackingMethod": "label"}}
	if _, err := mgmt.Clientset().CoreV1().ConfigMaps(argoNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := filepath.Join(t.TempDir(), "fleet")
	out, errOut, code = runFleet(refused, "--contexts", "w1,w2", "-n", shared)
	generated := fleet.GeneratedName(long["workload-1"], set.Name)
	if code != ExitUsage || !strings.Contains(errOut, generated+" (") || !strings.Contains(errOut, "application.resourceTrackingMethod: annotation") || !strings.Contains(errOut, "no fleet plan was written") {
		t.Errorf("label tracking, %d-character generated names: exit %d: %s %s", len(generated), code, out, errOut)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("the refused fleet plan wrote %s (%v)", refused, err)
	}
	cm.Data["application.resourceTrackingMethod"] = "annotation"
	if _, err := mgmt.Clientset().CoreV1().ConfigMaps(argoNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runFleet(filepath.Join(t.TempDir(), "fleet"), "--contexts", "w1,w2", "-n", shared)
	if err := json.Unmarshal([]byte(out), &ix); code != 0 || err != nil || len(ix.ApplicationSets) != 1 || ix.ApplicationSets[0].Clusters[0] != long["workload-1"] {
		t.Errorf("annotation tracking, long names: exit %d: %v %s %s", code, err, out, errOut)
	}
}

// TestFleetPlanClusterDownMidPlan: a workload cluster's API server stops
// while plan --contexts is listing it (a real kube-apiserver behind a
// proxy that holds its ConfigMap list; the test stops the server while the
// list is held, and releases it once kube-apiserver and etcd have exited:
// the scan meets the outage on that list or on the requests beside it):
// the other cluster is planned, and the one that went down is reported not
// scanned, with the reason, in the index and on stderr. No step waits a
// guessed time.
func TestFleetPlanClusterDownMidPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w3 := startControlPlane(ctx, t)
	ns := cp.Namespace(t)
	if _, err := w3.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: usage-hook}\ndata: {hook.py: \"print(1)\"}\n")
	kc(t, hook, "apply", "-n", ns, "-f", "-")
	fp, err := testenv.StartFaultProxy(w3, t.TempDir(), testenv.Fault{Kind: testenv.Hold, Path: "/namespaces/" + ns + "/configmaps", Times: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fp.Close)
	go func() {
		select {
		case <-fp.Holding():
		case <-ctx.Done():
			return
		}
		w3.Stop()    // mid-plan: returns once kube-apiserver and etcd have exited
		fp.Release() // the held list now goes to a stopped server
	}()
	kubeconfig := fleetKubeconfigFiles(t, map[string]string{"w1": cp.Kubeconfig, "w3": fp.Kubeconfig})
	dir := filepath.Join(t.TempDir(), "fleet")
	var out, errb bytes.Buffer
	// The held list waits as long as Stop takes (each process gets 10 s
	// after SIGTERM before SIGKILL): the request timeout outlasts that, so
	// the client never gives up on the list before the server is gone.
	code := runAdopt(t, "adopt", []string{"--kubeconfig", kubeconfig, "plan", "--contexts", "w1,w3", "-n", ns, "--out-dir", dir, "-o", "json", "--request-timeout", "1m"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("plan --contexts exited %d: %s %s", code, out.String(), errb.String())
	}
	if fp.Injected(testenv.Hold) != 1 {
		t.Fatalf("the proxy held %d lists, want 1", fp.Injected(testenv.Hold))
	}
	var ix fleet.Index
	if err := json.Unmarshal(out.Bytes(), &ix); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	byCtx := map[string]fleet.ClusterEntry{}
	for _, c := range ix.Clusters {
		byCtx[c.Context] = c
	}
	if w1 := byCtx["w1"]; w1.PlanID == "" || w1.NotScanned != "" {
		t.Errorf("the cluster that stayed up: %+v", w1)
	}
	if w3 := byCtx["w3"]; !strings.Contains(w3.NotScanned, "the API server stopped answering during the scan") || w3.Plan != "" {
		t.Errorf("the cluster that went down mid-plan: %+v (stderr %s)", w3, errb.String())
	}
	if p := readPlan(t, filepath.Join(dir, byCtx["w1"].Plan)); p.Object("ConfigMap "+ns+"/usage-hook") == nil {
		t.Errorf("w1's plan lacks the ConfigMap")
	}
}

// TestFleetApplyOpenPR: apply --plan DIR --open-pr against a real Gitea
// writes the fleet's ApplicationSet on one branch and opens one pull
// request that names it and the Applications it generates; a second run
// updates the same pull request. The cluster Secrets' tokens are in no
// output and not in the pull request.
func TestFleetApplyOpenPR(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	mgmt := startControlPlane(ctx, t)
	w2 := startControlPlane(ctx, t)
	installApplicationCRDOn(t, mgmt)
	tokens := map[string]string{"workload-1": "pr-CANARY-token-w1", "workload-2": "pr-CANARY-token-w2"}
	registerWorkloads(ctx, t, mgmt, map[string]string{"workload-1": cp.Server, "workload-2": w2.Server}, tokens)
	ns := handApplyHook(ctx, t, w2)
	g := giteaInBackground(ctx, t)()
	repo := giteaName(t, "fleet")
	cloneURL, err := g.CreateRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := fleetKubeconfig(t, map[string]*testenv.ControlPlane{"w1": cp, "w2": w2})
	dir := filepath.Join(t.TempDir(), "fleet")
	scan := &leakScan{texts: map[string]string{}, secrets: map[string]string{"the Gitea token": g.Token,
		"workload-1's cluster Secret token": tokens["workload-1"], "workload-2's cluster Secret token": tokens["workload-2"]}}
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		scan.add(strings.Join(args[:2], " ")+" (stdout)", out.String())
		scan.add(strings.Join(args[:2], " ")+" (stderr)", errb.String())
		return out.String(), errb.String(), code
	}
	if out, errOut, code := cli("plan", "--contexts", "w1,w2", "--argocd-kubeconfig", mgmt.Kubeconfig, "--argocd-version", "v3.2.6", "-n", ns, "--out-dir", dir, "-q"); code != 0 {
		t.Fatalf("plan --contexts exited %d: %s %s", code, out, errOut)
	}
	f, err := fleet.Load(dir)
	if err != nil || len(f.Index.ApplicationSets) != 1 {
		t.Fatalf("fleet plan: %v, %+v", err, f)
	}
	set := f.Index.ApplicationSets[0]
	// --dry-run prints the diff it would commit (a fleet's dry run printed
	// none before it was asked of the engine) and pushes nothing.
	out, errOut, code := cli("apply", "--plan", dir, "--argocd-kubeconfig", mgmt.Kubeconfig, "--repo", cloneURL, "--git-user", g.User, "--git-token", g.Token,
		"--dry-run", "--author", "adopt <adopt@example.invalid>", "-q")
	if code != 0 || !strings.Contains(out, "+kind: ApplicationSet") || !strings.Contains(out, "+  name: "+set.Name) || !strings.Contains(out, "nothing was written") {
		t.Fatalf("apply --dry-run exited %d: %s\n%s", code, errOut, out)
	}
	if prs, err := g.PullRequests(ctx, repo); err != nil || len(prs) != 0 {
		t.Fatalf("after --dry-run: %d pull requests (%v), want none", len(prs), err)
	}
	for i := 1; i <= 2; i++ {
		out, errOut, code := cli("apply", "--plan", dir, "--argocd-kubeconfig", mgmt.Kubeconfig, "--repo", cloneURL, "--git-user", g.User, "--git-token", g.Token,
			"--open-pr", "--provider", "gitea", "--author", "adopt <adopt@example.invalid>", "-q")
		if code != 0 {
			t.Fatalf("run %d: apply --open-pr exited %d: %s\n%s", i, code, errOut, out)
		}
		prs, err := g.PullRequests(ctx, repo)
		if err != nil {
			t.Fatal(err)
		}
		if len(prs) != 1 {
			t.Fatalf("run %d: %d pull requests, want 1", i, len(prs))
		}
		pr := prs[0]
		if pr.Head.Ref != "adopt/"+f.Index.ID() || pr.Base.Ref != "main" || !strings.Contains(pr.Title, "1 ApplicationSet(s)") ||
			!strings.Contains(pr.Body, "ApplicationSet "+set.Name+" (list generator)") ||
			!strings.Contains(pr.Body, fleet.GeneratedName("workload-1", set.Name)+", "+fleet.GeneratedName("workload-2", set.Name)) {
			t.Fatalf("run %d: pull request head %q base %q title %q body:\n%s", i, pr.Head.Ref, pr.Base.Ref, pr.Title, pr.Body)
		}
		scan.add("the pull request's title and body", pr.Title+"\n"+pr.Body)
	}
	// status follows the fleet: the fleet branch's pull request, on each
	// cluster, under the generated names.
	prs, err := g.PullRequests(ctx, repo)
	if err != nil || len(prs) != 1 {
		t.Fatalf("%d pull requests (%v)", len(prs), err)
	}
	out, errOut, code = cli("status", "--plan", dir, "--argocd-kubeconfig", mgmt.Kubeconfig, "--repo", cloneURL, "--git-token", g.Token, "--provider", "gitea", "-o", "json", "--no-coverage")
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("status --plan DIR exited %d: %v %s %s", code, err, errOut, out)
	}
	if len(r.Clusters) != 2 || r.Clusters[0].Cluster != "w1" || r.Clusters[1].Cluster != "w2" || r.Clusters[0].Counts.InReview != 1 || r.Clusters[1].Counts.InReview != 1 {
		t.Errorf("status per cluster %+v, want w1 and w2 with one object in review each", r.Clusters)
	}
	for i, a := range r.Applications {
		want := fleet.GeneratedName([]string{"workload-1", "workload-2"}[i], set.Name)
		if a.Name != want || a.Branch != "adopt/"+f.Index.ID() || a.PR == nil || a.PR.Number != prs[0].Number || a.PR.State != gitops.PROpen {
			t.Errorf("status Application %d: %+v (PR %+v), want %s on the fleet branch with pull request #%d open", i, a, a.PR, want, prs[0].Number)
		}
	}
	scan.check(t)
}

// registerWorkloads registers each named server with mgmt's Argo CD as a
// cluster Secret whose config holds only a bearer token (tokens by name).
func registerWorkloads(ctx context.Context, t *testing.T, mgmt *testenv.ControlPlane, servers, tokens map[string]string) {
	t.Helper()
	for name, server := range servers {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + name, Namespace: argoNS,
			Labels: map[string]string{argoapp.SecretTypeLabel: argoapp.SecretTypeCluster}},
			StringData: map[string]string{"name": name, "server": server, "config": `{"bearerToken":"` + tokens[name] + `"}`}}
		if _, err := mgmt.Clientset().CoreV1().Secrets(argoNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// handApplyHook kubectl-applies the usage-hook ConfigMap into a new
// namespace of the shared control plane and of w2, and returns it.
func handApplyHook(ctx context.Context, t *testing.T, w2 *testenv.ControlPlane) string {
	t.Helper()
	ns := cp.Namespace(t)
	if _, err := w2.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: usage-hook}\ndata: {hook.py: \"print(1)\"}\n")
	for _, w := range []*testenv.ControlPlane{cp, w2} {
		if out, err := w.Kubectl(ctx, hook, "apply", "-n", ns, "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	return ns
}
