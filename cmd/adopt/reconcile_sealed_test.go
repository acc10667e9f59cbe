package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestReconcileAdoptsSealedSecretOnRealArgoCD (issue 45): scheduled
// reconcile runs, as the chart's ServiceAccount (impersonated) with
// secrets.read on and its adopt.yaml, on a real Argo CD (the current GA),
// a real Gitea and the real Sealed Secrets controller, over a namespace
// holding one Secret applied by hand (a stringData canary and a binary
// value): a group of that Secret alone. The first run opens its pull
// request with the SealedSecret (sealed and verified by the controller
// through its one Service's proxy); the next changes nothing. A person
// merges it in Gitea; the Application appears; a run marks the Secret
// (finalize's mark, before any sync) and waits; a person syncs; the next
// run proves the controller's takeover (the same uid, the data
// byte-identical, last-applied gone) and finalizes; after it, 0
// untracked and no Secret left. The canary, plaintext or base64, is in no
// Git object, pull request body, output, metrics file, journal or state
// ConfigMap.
func TestReconcileAdoptsSealedSecretOnRealArgoCD(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	c, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	ns := c.Namespace(t)
	ss, err := testenv.StartSealedSecrets(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Stop()
	g := giteaUp()
	repoName := giteaName(t, "sealed")
	repoURL, err := g.CreateRepo(ctx, repoName)
	if err != nil {
		t.Fatal(err)
	}
	// The chart's RoleBindings in ns are applied by hand here: its
	// adopt.yaml leaves RBAC out, so that the Secret is the one group.
	grants := installChartRBACWith(ctx, t, c, a, []string{"--set", "secrets.read=true", "--set", "secrets.sealedSecretsController=" + ss.Namespace + "/" + ss.Service,
		"--set-json", `config={"exclusions":[{"apiGroups":["rbac.authorization.k8s.io"]}]}`}, ns)

	const canary = "canary-Rk4wP9-reconcile-sealed"
	binary := []byte{0, 2, 0xfd, 0xff, 'r', 'e', 'c'}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + ", labels: {app: shop}}\ntype: Opaque\n" +
		"data: {cert.bin: " + base64.StdEncoding.EncodeToString(binary) + "}\nstringData: {password: " + canary + "}\n"
	if out, err := c.Kubectl(ctx, []byte(secret), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	before, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encodings := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.RawStdEncoding.EncodeToString([]byte(canary)),
		base64.URLEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString(binary)}
	leaks := func(where string, b []byte) {
		t.Helper()
		for _, enc := range encodings {
			if bytes.Contains(b, []byte(enc)) {
				t.Errorf("%s holds the Secret's value (an encoding of %d bytes)", where, len(enc))
			}
		}
	}

	metrics := filepath.Join(t.TempDir(), "adopt.prom")
	journals := t.TempDir()
	run := func(want string, extra ...string) *reconcile.Report {
		t.Helper()
		args := append([]string{"--kubeconfig", c.Kubeconfig, "reconcile", "-n", ns, "--repo", repoURL, "--provider", "gitea",
			"--git-user", g.User, "--git-token", g.Token, "--argocd-version", testenv.ArgoCDCurrent, "--author", "adopt <adopt@example.invalid>",
			"-o", "json", "-q", "--cluster-name", "sealed", "--poll-interval", "500ms", "--journal-dir", journals, "--metrics-file", metrics,
			"--lock-namespace", grants.stateNS, "--as", grants.user, "--config", grants.config}, extra...)
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
		leaks("reconcile's output", append(out.Bytes(), errb.Bytes()...))
		rep := &reconcile.Report{}
		if err := json.Unmarshal(out.Bytes(), rep); err != nil {
			t.Fatalf("reconcile: exit %d: %v: %s%s", code, err, out.String(), errb.String())
		}
		// A CRD another test of the plane installed is not the chart's to
		// read (read.extraGroups): the run is partial for it alone.
		partial := code == ExitPartial && len(rep.NotScanned) > 0 && rep.Count(reconcile.Failed) == 0
		for _, n := range rep.NotScanned {
			// Never the types this test is about (External Secrets' CRDs,
			// externalsecrets.external-secrets.io and the like, may be).
			typ, _, _ := strings.Cut(n, ":")
			partial = partial && typ != "secrets" && !strings.HasSuffix(typ, ".bitnami.com")
		}
		if code != 0 && !partial {
			t.Fatalf("reconcile: exit %d: %s%s", code, out.String(), errb.String())
		}
		if rep.SecretsLeft != 0 {
			t.Errorf("%d Secret(s) left: %s", rep.SecretsLeft, rep.SecretsNote)
		}
		if want == "" {
			return rep
		}
		if len(rep.Groups) != 1 || rep.Groups[0].Outcome != want {
			t.Fatalf("groups %+v (nothing to do: %v); want one, %s", rep.Groups, rep.NothingToDo, want)
		}
		return rep
	}

	// Monday: the group of the Secret alone is proposed, sealed.
	gr := run(reconcile.Opened).Groups[0]
	if gr.Objects != 1 {
		t.Errorf("the group adopts %d objects, want the Secret", gr.Objects)
	}
	bare := giteaRepoDir(g, repoName)
	tip := tipOf(t, bare, gr.Branch)
	_, appFile := formAndAppFiles(t, tip, sealed.Kind)
	if app := fileText(t, tip, appFile); strings.Contains(app, "automated") {
		t.Errorf("the Application holding a SealedSecret syncs by itself (the mark must come first):\n%s", app)
	}
	// The store's ConfigMaps: the group's plan (pruned once done), and
	// never a value.
	state := func(stored bool) {
		t.Helper()
		out, err := c.Kubectl(ctx, nil, "-n", grants.stateNS, "get", "configmaps", "-o", "yaml")
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		leaks("the reconcile state ConfigMaps", []byte(out))
		if stored && !strings.Contains(out, "sealedAt") {
			t.Error("the state ConfigMaps hold no stored plan of the sealed Secret")
		}
	}
	state(true)
	// Tuesday: nothing new.
	run(reconcile.Unchanged)

	// Wednesday: a person merges it in Gitea; the Application appears.
	mergePR(ctx, t, g, repoName, gr.Branch)
	if err := a.CreateApplication(ctx, []byte(fileText(t, tipOf(t, bare, "main"), appFile))); err != nil {
		t.Fatal(err)
	}
	waiting := run(reconcile.Merged, "--finalize-wait", "2s").Groups[0]
	marked, err := c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if marked.Annotations[sealed.ManagedAnnotation] != "true" {
		t.Fatalf("reconcile did not mark Secret %s/db before the first sync (%s)", ns, waiting.Why)
	}
	if st, err := a.ApplicationStatus(ctx, gr.App); err != nil || st.OperationPhase != "" {
		t.Fatalf("reconcile without --sync started a sync of %s (%v): %s", gr.App, err, st)
	}
	// A person syncs it (as argocd app sync would).
	syncTakeOverAndScan(ctx, t, secretRun{c: c, a: a, app: gr.App, ns: ns, before: before, owner: sealed.Kind,
		run: run, leaks: leaks, bare: bare, g: g, repoName: repoName, metrics: metrics, journals: journals,
		results: []string{`"result":"marked"`, `"result":"taken-over"`}})
	state(false)
}

// secretRun is what the reconcile tests of a Secret form share at their
// end: the group's Application app, its Secret ns/db as it was before
// (before), the controller kind that takes it over (owner), the test's run
// and leak check, and where the value must never be.
type secretRun struct {
	c                                 *testenv.ControlPlane
	a                                 *testenv.ArgoCD
	app, ns, owner                    string
	before                            *corev1.Secret
	run                               func(want string, extra ...string) *reconcile.Report
	leaks                             func(where string, b []byte)
	g                                 *testenv.Gitea
	bare, repoName, metrics, journals string
	results                           []string // each journal must hold these
}

// syncTakeOverAndScan: a person syncs the Application (as argocd app sync
// would) and the next run finalizes the group; the Secret is then taken
// over in place (same uid and data, owner its controller, last-applied
// gone) and the run after that finds 0 untracked. No canary is in the
// repository (every commit, message and diff), a pull request, the
// metrics file or a journal.
func syncTakeOverAndScan(ctx context.Context, t *testing.T, r secretRun) {
	t.Helper()
	v, err := argoapp.ParseVersion(testenv.ArgoCDCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if err := (argoapp.KubeStatus{Client: dynamic.NewForConfigOrDie(r.c.RESTConfig()), Namespace: r.a.Namespace}).Sync(ctx, r.app, "", v); err != nil {
		t.Fatal(err)
	}
	done := r.run(reconcile.Finalized, "--finalize-wait", "3m", "--settle", "2s").Groups[0]
	t.Logf("finalized: %s", done.Why)
	ns, before := r.ns, r.before
	after, err := r.c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s/db after finalize: %v", ns, err)
	}
	if after.UID != before.UID || !reflect.DeepEqual(after.Data, before.Data) {
		t.Errorf("Secret %s/db: uid %s (was %s), data the same: %v (values not printed): want taken over in place", ns, after.UID, before.UID, reflect.DeepEqual(after.Data, before.Data))
	}
	if owner := metav1.GetControllerOf(after); owner == nil || owner.Kind != r.owner || owner.Name != "db" {
		t.Errorf("Secret %s/db: controller %+v, want %s db", ns, owner, r.owner)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration", ns)
	}
	// Thursday: 0 untracked, no Secret left.
	if rep := r.run(""); rep.Untracked != 0 || !rep.NothingToDo && (len(rep.Groups) != 1 || rep.Groups[0].Outcome != reconcile.Done) {
		t.Errorf("after the takeover: %d untracked, groups %+v; want 0 and nothing to do or done", rep.Untracked, rep.Groups)
	}

	// Where the value must never be.
	if out, err := exec.Command("git", "-C", r.bare, "log", "--all", "-p", "--format=%H%n%B").CombinedOutput(); err != nil {
		t.Fatalf("git log: %v", err)
	} else {
		r.leaks("the repository (every commit, message and diff)", out)
	}
	prs, err := r.g.PullRequests(ctx, r.repoName)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs {
		r.leaks("pull request #"+pr.Title, []byte(pr.Title+"\n"+pr.Body))
	}
	if b, err := os.ReadFile(r.metrics); err != nil {
		t.Fatal(err)
	} else {
		r.leaks("the metrics file", b)
	}
	entries, _ := os.ReadDir(r.journals)
	if len(entries) == 0 {
		t.Error("reconcile wrote no journal")
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(r.journals, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		r.leaks("journal "+e.Name(), b)
		for _, want := range r.results {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("journal %s has no %s entry", e.Name(), want)
			}
		}
	}
}

// formAndAppFiles are the files of a reconcile branch's tip (a group of a
// Secret alone) holding its form's object, of kind, and its Application;
// the test fails without both.
func formAndAppFiles(t *testing.T, tip *gitobject.Commit, kind string) (formFile, appFile string) {
	t.Helper()
	files, err := tip.Files()
	if err != nil {
		t.Fatal(err)
	}
	for f, err := files.Next(); err == nil; f, err = files.Next() {
		text, _ := f.Contents()
		switch {
		case strings.Contains(text, "kind: "+kind):
			formFile = f.Name
		case strings.HasPrefix(f.Name, "argocd/apps/"):
			appFile = f.Name
		}
	}
	if formFile == "" || appFile == "" {
		t.Fatalf("the branch holds %s %q and Application %q; want both", kind, formFile, appFile)
	}
	return formFile, appFile
}
