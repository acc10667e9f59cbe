package main

// What the reconcile tests of a Secret form (issue 45) share:
// TestReconcileAdoptsSealedSecretOnRealArgoCD and
// TestReconcileAdoptsExternalSecretOnRealArgoCD differ only in the form
// (the kind of its object, the API group a partial run may never skip)
// and in what they check of its controller. Both hand-apply one Secret
// with fresh canaries (plantSecret, handApplySecret), run reconcile as the
// chart's ServiceAccount through the leak suite's runner, and scan all it
// printed and wrote with the suite's scanner (leakscan_test.go).

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// secretReconcile is one such test. Its caller fills the parts (c, a, g),
// the chart's grants, the namespace ns, cluster (reconcile's
// --cluster-name and the Gitea repository's base name), kind (the form's
// object, the Secret's controller after the takeover) and crdGroup (the
// form's API group); startSecretReconcile fills the rest.
type secretReconcile struct {
	c              *testenv.ControlPlane
	a              *testenv.ArgoCD
	g              *testenv.Gitea
	grants         *chartGrants
	ns, cluster    string
	kind, crdGroup string
	t              *testing.T
	ctx            context.Context
	before         *corev1.Secret // Secret ns/db as applied
	plants         *leakPlants
	col            *leakCollector
	runner         *leakRunner
	args           []string // every run's
	repoName, bare string
	journals       string
	appFile        string // the group's Application in Git
	runs           int
}

// startSecretReconcile hand-applies Secret ns/db alone in ns, its values
// fresh canaries (a password, a multi-line value, a binary one), reads it
// back (before) and creates the Gitea repository. When the test ends, the
// leak suite's scanner runs over all that was collected, whether or not
// the test got to its end, and each canary it finds fails the test.
func startSecretReconcile(ctx context.Context, t *testing.T, s secretReconcile) *secretReconcile {
	t.Helper()
	s.t, s.ctx = t, ctx
	s.plants, s.col = &leakPlants{}, newLeakCollector()
	s.runner = &leakRunner{col: s.col}
	secret := plantSecret(t, s.plants, "the hand-applied Secret's", "Rc")
	secret.Alone = true
	handApplySecret(ctx, t, s.c, s.ns, secret)
	before, err := s.c.Clientset().CoreV1().Secrets(s.ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.before = before
	s.repoName = giteaName(t, s.cluster)
	repoURL, err := s.g.CreateRepo(ctx, s.repoName)
	if err != nil {
		t.Fatal(err)
	}
	s.bare = giteaRepoDir(s.g, s.repoName)
	s.journals = t.TempDir()
	s.args = []string{"reconcile", "-n", s.ns, "--repo", repoURL, "--provider", "gitea",
		"--git-user", s.g.User, "--git-token", s.g.Token, "--argocd-version", testenv.ArgoCDCurrent, "--author", "adopt <adopt@example.invalid>",
		"-o", "json", "-q", "--cluster-name", s.cluster, "--poll-interval", "500ms", "--journal-dir", s.journals,
		"--metrics-file", filepath.Join(t.TempDir(), "adopt.prom"), "--lock-namespace", s.grants.stateNS, "--as", s.grants.user, "--config", s.grants.config}
	t.Cleanup(func() {
		for _, f := range s.col.scan(s.plants.list) {
			t.Errorf("LEAK: %s", f)
		}
	})
	return &s
}

// run is one reconcile run, its stdout and stderr collected and the files
// it names noted. It must exit 0, or partial for a CRD another test of the
// plane installed, which is not the chart's to read (read.extraGroups):
// never for Secrets or the form's types. No Secret may be left; with
// want, the one group's outcome is want.
func (s *secretReconcile) run(want string, extra ...string) *reconcile.Report {
	t := s.t
	t.Helper()
	s.runs++
	res := s.runner.run(t, "reconcile "+strconv.Itoa(s.runs), s.c.Kubeconfig, nil, append(slices.Clip(s.args), extra...)...)
	said := s.plants.hide(res.out + res.errOut)
	rep := &reconcile.Report{}
	if err := json.Unmarshal([]byte(res.out), rep); err != nil {
		t.Fatalf("reconcile: exit %d: %v: %s", res.code, err, said)
	}
	partial := res.code == ExitPartial && len(rep.NotScanned) > 0 && rep.Count(reconcile.Failed) == 0
	for _, n := range rep.NotScanned {
		typ, _, _ := strings.Cut(n, ":")
		partial = partial && typ != "secrets" && !strings.HasSuffix(typ, "."+s.crdGroup)
	}
	if res.code != 0 && !partial {
		t.Fatalf("reconcile: exit %d: %s", res.code, said)
	}
	if rep.SecretsLeft != 0 {
		t.Errorf("%d Secret(s) left: %s", rep.SecretsLeft, rep.SecretsNote)
	}
	if want != "" && (len(rep.Groups) != 1 || rep.Groups[0].Outcome != want) {
		t.Fatalf("groups %+v (nothing to do: %v); want one, %s", rep.Groups, rep.NothingToDo, want)
	}
	return rep
}

// state collects the ConfigMaps of the state namespace (each group's
// plan, pruned once done) for the scan; with want, they must hold it.
func (s *secretReconcile) state(want string) {
	t := s.t
	t.Helper()
	out, err := s.c.Kubectl(s.ctx, nil, "-n", s.grants.stateNS, "get", "configmaps", "-o", "yaml")
	if err != nil {
		t.Fatalf("%v: %s", err, s.plants.hide(out))
	}
	s.col.add(chStored, "the reconcile state ConfigMaps after run "+strconv.Itoa(s.runs), out)
	if want != "" && !strings.Contains(out, want) {
		t.Errorf("the state ConfigMaps hold no stored plan of Secret %s/db (no %q)", s.ns, want)
	}
}

// propose is Monday and Tuesday: the first run opens the group of the
// Secret alone (one object; its branch holds the form's object and the
// Application, which must not sync by itself: finalize's mark or push
// comes first), whose plan the state ConfigMaps hold (stored, a text of
// it); the next run changes nothing. It returns the group and the text of
// the form's object on its branch.
func (s *secretReconcile) propose(stored string) (reconcile.Group, string) {
	t := s.t
	t.Helper()
	gr := s.run(reconcile.Opened).Groups[0]
	if gr.Objects != 1 {
		t.Errorf("the group adopts %d objects, want the Secret", gr.Objects)
	}
	tip := tipOf(t, s.bare, gr.Branch)
	formFile, appFile := formAndAppFiles(t, tip, s.kind)
	s.appFile = appFile
	if app := fileText(t, tip, appFile); strings.Contains(app, "automated") {
		t.Errorf("the Application holding a %s syncs by itself (finalize's mark or push must come first):\n%s", s.kind, app)
	}
	s.state(stored)
	s.run(reconcile.Unchanged)
	return gr, fileText(t, tip, formFile)
}

// merge is Wednesday: a person merges the group's pull request in Gitea,
// the Application appears from the base branch, and the next run (which
// waits 2s for a sync) must start no sync. It returns that run's group.
func (s *secretReconcile) merge(gr reconcile.Group) reconcile.Group {
	t := s.t
	t.Helper()
	mergePR(s.ctx, t, s.g, s.repoName, gr.Branch)
	if err := s.a.CreateApplication(s.ctx, []byte(fileText(t, tipOf(t, s.bare, "main"), s.appFile))); err != nil {
		t.Fatal(err)
	}
	waiting := s.run(reconcile.Merged, "--finalize-wait", "2s").Groups[0]
	if st, err := s.a.ApplicationStatus(s.ctx, gr.App); err != nil || st.OperationPhase != "" {
		t.Fatalf("reconcile without --sync started a sync of %s (%v): %s", gr.App, err, st)
	}
	return waiting
}

// takeOver is Thursday: a person syncs Application app (as argocd app sync
// would) and the next run finalizes the group; the Secret is then taken
// over in place (same uid and data, its controller a s.kind, last-applied
// gone), the run after that finds 0 untracked, and each journal holds
// results. Then the repository (every object and ref), the pull requests,
// the metrics file, the journals and the state ConfigMaps are collected
// for the scan.
func (s *secretReconcile) takeOver(app string, results ...string) {
	t, ctx, ns := s.t, s.ctx, s.ns
	t.Helper()
	v, err := argoapp.ParseVersion(testenv.ArgoCDCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if err := (argoapp.KubeStatus{Client: dynamic.NewForConfigOrDie(s.c.RESTConfig()), Namespace: s.a.Namespace}).Sync(ctx, app, "", v); err != nil {
		t.Fatal(err)
	}
	done := s.run(reconcile.Finalized, "--finalize-wait", "3m", "--settle", "2s").Groups[0]
	t.Logf("finalized: %s", done.Why)
	after, err := s.c.Clientset().CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret %s/db after finalize: %v", ns, err)
	}
	if same := reflect.DeepEqual(after.Data, s.before.Data); after.UID != s.before.UID || !same {
		t.Errorf("Secret %s/db: uid %s (was %s), data the same: %v (values not printed): want taken over in place", ns, after.UID, s.before.UID, same)
	}
	if owner := metav1.GetControllerOf(after); owner == nil || owner.Kind != s.kind || owner.Name != "db" {
		t.Errorf("Secret %s/db: controller %+v, want %s db", ns, owner, s.kind)
	}
	if _, has := after.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; has {
		t.Errorf("Secret %s/db still carries last-applied-configuration", ns)
	}
	if rep := s.run(""); rep.Untracked != 0 || !rep.NothingToDo && (len(rep.Groups) != 1 || rep.Groups[0].Outcome != reconcile.Done) {
		t.Errorf("after the takeover: %d untracked, groups %+v; want 0 and nothing to do or done", rep.Untracked, rep.Groups)
	}

	entries, _ := os.ReadDir(s.journals)
	if len(entries) == 0 {
		t.Error("reconcile wrote no journal")
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(s.journals, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range results {
			if !strings.Contains(string(b), want) {
				t.Errorf("journal %s has no %s entry", e.Name(), want)
			}
		}
	}
	s.col.addGitRepo(t, s.bare)
	s.col.addGiteaPRs(ctx, t, s.g, s.repoName)
	s.col.collectFiles(t) // the metrics file and the journals
	s.state("")
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
