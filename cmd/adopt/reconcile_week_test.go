package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// weekRepo is a GitOps repository in the shape many teams keep (written
// here): one app's kustomize base with a prod and a staging overlay, and
// an app of apps (argocd/root.yaml, applied once by hand) over argocd/apps,
// where Application shop-prod syncs the prod overlay by hand (no
// automated sync: the team has not synced it yet).
func weekRepo(repoURL, argoNS, prod, staging string) map[string]string {
	overlay := func(ns, patch string) string {
		return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: " + ns + "\nresources:\n- ../../base\npatches:\n- target: {kind: ConfigMap, name: shop-settings}\n  patch: |-\n    - op: replace\n      path: " + patch + "\n"
	}
	return map[string]string{
		"README.md":                                     "# shop\n\nApps under apps/, Argo CD Applications under argocd/apps (synced by argocd/root.yaml).\n",
		"apps/shop/base/kustomization.yaml":             "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- settings.yaml\n- service.yaml\n",
		"apps/shop/base/settings.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop-settings\ndata:\n  LOG_LEVEL: info\n  WORKERS: \"4\"\n  CACHE_TTL_SECONDS: \"300\"\n",
		"apps/shop/base/service.yaml":                   "apiVersion: v1\nkind: Service\nmetadata:\n  name: shop\nspec:\n  selector: {app: shop}\n  ports:\n  - {name: http, port: 80, targetPort: 8080}\n",
		"apps/shop/overlays/prod/kustomization.yaml":    overlay(prod, "/data/WORKERS\n      value: \"16\""),
		"apps/shop/overlays/staging/kustomization.yaml": overlay(staging, "/data/LOG_LEVEL\n      value: debug"),
		"argocd/root.yaml":                              "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root-" + prod[len(prod)-6:] + "\n  namespace: " + argoNS + "\nspec:\n  project: default\n  source:\n    repoURL: " + repoURL + "\n    path: argocd/apps\n    targetRevision: main\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: " + argoNS + "\n  syncPolicy:\n    automated: {}\n",
		"argocd/apps/shop-prod.yaml":                    "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop-prod-" + prod[len(prod)-6:] + "\n  namespace: " + argoNS + "\nspec:\n  project: default\n  source:\n    repoURL: " + repoURL + "\n    path: apps/shop/overlays/prod\n    targetRevision: main\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: " + prod + "\n",
	}
}

// TestReconcileWeekOnARealShapedRepo (issue 43): a week of scheduled
// reconcile runs over a GitOps repository that is not empty (weekRepo),
// set up as a team does (a clone with its origin, `kubectl apply -k` of
// both overlays, the app of apps applied once by hand), on a real Argo CD
// (the current GA) and a real Gitea. Every run, the prod overlay's
// objects go to the Application that already syncs that overlay: no pull
// request ever proposes a second Application over it. The staging overlay,
// which no Application syncs, is proposed once, as the repo's own overlay
// path; merged, the app of apps creates its Application, reconcile syncs
// and finalizes it, and later runs call it done. A ConfigMap applied by
// hand in prod later gets an Application of its own, holding only it;
// when the team puts it in the prod overlay themselves and Argo CD tracks
// it, that pull request is closed as obsolete.
func TestReconcileWeekOnARealShapedRepo(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)
	cp, a := argoCDPlane(ctx, t, testenv.ArgoCDCurrent)
	g := giteaUp()
	repoName := giteaName(t, "week")
	repoURL, err := g.CreateRepo(ctx, repoName)
	if err != nil {
		t.Fatal(err)
	}
	prod, staging, lockNS := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	files := weekRepo(repoURL, a.Namespace, prod, staging)

	// The team's clone, with its origin.
	checkout := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", checkout, "-c", "user.name=Team", "-c", "user.email=team@example.invalid"}, args...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
	}
	push, _ := url.Parse(repoURL)
	push.User = url.UserPassword(g.User, g.Token)
	git("clone", "-q", push.String(), ".")
	for p, c := range files {
		if err := os.MkdirAll(filepath.Join(checkout, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(checkout, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "shop: base, prod and staging overlays; app of apps")
	git("push", "-q", "origin", "main")
	for _, o := range []string{"prod", "staging"} {
		if out, err := cp.Kubectl(ctx, nil, "apply", "-k", filepath.Join(checkout, "apps/shop/overlays", o)); err != nil {
			t.Fatalf("kubectl apply -k %s: %v: %s", o, err, out)
		}
	}
	if out, err := cp.Kubectl(ctx, nil, "apply", "-f", filepath.Join(checkout, "argocd/root.yaml")); err != nil {
		t.Fatalf("kubectl apply root: %v: %s", err, out)
	}
	shopProd := "shop-prod-" + prod[len(prod)-6:]
	root := "root-" + prod[len(prod)-6:]
	waitCtx, waitCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer waitCancel()
	if _, err := a.WaitApplication(waitCtx, shopProd, func(s testenv.AppStatus) bool { return s.Sync != "" }); err != nil {
		st, _ := a.ApplicationStatus(ctx, root)
		t.Fatalf("the app of apps did not create %s: %v; root %s", shopProd, err, st)
	}

	journals := t.TempDir() // finalize's journals: never the package directory
	run := func(extra ...string) *reconcile.Report {
		t.Helper()
		args := append([]string{"--kubeconfig", cp.Kubeconfig, "reconcile", "-n", prod + "," + staging, "--repo", repoURL, "--provider", "gitea",
			"--git-user", g.User, "--git-token", g.Token, "--argocd-version", testenv.ArgoCDCurrent, "--author", "adopt <adopt@example.invalid>",
			"-o", "json", "-q", "--lock-namespace", lockNS, "--cluster-name", "week", "--poll-interval", "500ms", "--journal-dir", journals}, extra...)
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
		rep := &reconcile.Report{}
		if err := json.Unmarshal(out.Bytes(), rep); err != nil || code != 0 {
			t.Fatalf("reconcile: exit %d: %v: %s%s", code, err, out.String(), errb.String())
		}
		// No group, in any run, proposes the prod overlay's objects, which
		// shop-prod syncs.
		for _, gr := range rep.Groups {
			if gr.Outcome == reconcile.Done || gr.Outcome == reconcile.Finalized || gr.Outcome == reconcile.Merged {
				continue
			}
			tip := tipOf(t, giteaRepoDir(g, repoName), gr.Branch)
			f, err := tip.Files()
			if err != nil {
				t.Fatal(err)
			}
			for {
				file, err := f.Next()
				if err != nil {
					break
				}
				if strings.HasPrefix(file.Name, "argocd/apps/") && file.Name != "argocd/apps/shop-prod.yaml" {
					text, _ := file.Contents()
					if strings.Contains(text, "apps/shop/overlays/prod") {
						t.Errorf("%s proposes a second Application over the prod overlay, which %s syncs:\n%s", gr.Branch, shopProd, text)
					}
				}
			}
		}
		return rep
	}
	only := func(rep *reconcile.Report, outcomes map[string]string) map[string]reconcile.Group {
		t.Helper()
		by := map[string]reconcile.Group{}
		for _, gr := range rep.Groups {
			for ns := range outcomes {
				if strings.Contains(gr.App, ns) {
					by[ns] = gr
				}
			}
		}
		if len(rep.Groups) != len(outcomes) || len(by) != len(outcomes) {
			t.Fatalf("groups %+v; want one for each of %v", rep.Groups, outcomes)
		}
		for ns, want := range outcomes {
			if by[ns].Outcome != want {
				t.Fatalf("the group of %s: %s (%s), want %s", ns, by[ns].Outcome, by[ns].Why, want)
			}
		}
		return by
	}

	// Monday: staging is proposed, as the repo's own overlay; prod is left
	// to shop-prod.
	st := only(run(), map[string]string{staging: reconcile.Opened})[staging]
	if st.Objects != 2 {
		t.Errorf("the staging group adopts %d objects, want the overlay's ConfigMap and Service", st.Objects)
	}
	app := fileText(t, tipOf(t, giteaRepoDir(g, repoName), st.Branch), "argocd/apps/"+st.App+".yaml")
	if !strings.Contains(app, "path: \"apps/shop/overlays/staging\"") && !strings.Contains(app, "path: apps/shop/overlays/staging") {
		t.Errorf("the staging Application does not sync the repo's staging overlay:\n%s", app)
	}
	// Tuesday: nothing new.
	tip := tipOf(t, giteaRepoDir(g, repoName), st.Branch).Hash
	only(run(), map[string]string{staging: reconcile.Unchanged})
	if now := tipOf(t, giteaRepoDir(g, repoName), st.Branch).Hash; now != tip {
		t.Errorf("a run with nothing new moved %s", st.Branch)
	}
	// Wednesday: the team merges it; the app of apps creates the
	// Application; reconcile syncs it and finalizes.
	mergePR(ctx, t, g, repoName, st.Branch)
	if out, err := cp.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "--overwrite", "applications.argoproj.io", root, "argocd.argoproj.io/refresh=normal"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := a.WaitApplication(waitCtx, st.App, func(s testenv.AppStatus) bool { return s.Sync != "" }); err != nil {
		rs, _ := a.ApplicationStatus(ctx, root)
		t.Fatalf("the app of apps did not create %s after the merge: %v; root %s", st.App, err, rs)
	}
	only(run("--sync", "--finalize-wait", "3m", "--settle", "2s"), map[string]string{staging: reconcile.Finalized})
	// Thursday: a ConfigMap applied by hand in prod gets an Application of
	// its own, holding only it.
	kubectlApplyConfigMap(ctx, t, cp, prod, "feature-flags", "on")
	by := only(run(), map[string]string{staging: reconcile.Done, prod: reconcile.Opened})
	if by[prod].Objects != 1 {
		t.Errorf("the prod group adopts %d objects, want only feature-flags", by[prod].Objects)
	}
	only(run(), map[string]string{staging: reconcile.Done, prod: reconcile.Unchanged})

	// Friday: the team puts feature-flags in the prod overlay themselves
	// and has shop-prod sync by itself; once Argo CD tracks it, the
	// prod group's pull request is obsolete, and reconcile closes it with
	// a comment.
	git("pull", "-q", "origin", "main")
	flags := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: feature-flags\ndata:\n  k: \"on\"\n"
	kz := strings.Replace(files["apps/shop/overlays/prod/kustomization.yaml"], "- ../../base\n", "- ../../base\n- feature-flags.yaml\n", 1)
	auto := files["argocd/apps/shop-prod.yaml"] + "  syncPolicy:\n    automated: {}\n"
	for p, c := range map[string]string{"apps/shop/overlays/prod/feature-flags.yaml": flags, "apps/shop/overlays/prod/kustomization.yaml": kz, "argocd/apps/shop-prod.yaml": auto} {
		if err := os.WriteFile(filepath.Join(checkout, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "prod: feature flags in the overlay; shop-prod syncs by itself")
	git("push", "-q", "origin", "main")
	for _, app := range []string{root, shopProd} {
		if out, err := cp.Kubectl(ctx, nil, "-n", a.Namespace, "annotate", "--overwrite", "applications.argoproj.io", app, "argocd.argoproj.io/refresh=normal"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer syncCancel()
	if _, err := a.WaitApplication(syncCtx, shopProd, func(s testenv.AppStatus) bool {
		cm, err := cp.Clientset().CoreV1().ConfigMaps(prod).Get(ctx, "feature-flags", metav1.GetOptions{})
		return testenv.SyncedHealthy(s) && err == nil && strings.HasPrefix(cm.Annotations[argoapp.AnnotationTrackingID], shopProd+":")
	}); err != nil {
		st, _ := a.ApplicationStatus(ctx, shopProd)
		t.Fatalf("%s did not sync feature-flags: %v; %s", shopProd, err, st)
	}
	rep := run()
	var closed reconcile.Group
	for _, gr := range rep.Groups {
		if strings.Contains(gr.App, prod) {
			closed = gr
		}
	}
	if closed.Outcome != reconcile.Obsolete || !strings.Contains(closed.Why, "1 tracked") {
		t.Fatalf("the prod group after Argo CD tracks its object: %s (%s), want closed-obsolete, 1 tracked", closed.Outcome, closed.Why)
	}
	prs, err := g.PullRequests(ctx, repoName)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs {
		if pr.Head.Ref == by[prod].Branch && pr.State != "closed" {
			t.Errorf("the obsolete pull request #%d is %s", pr.Number, pr.State)
		}
	}

	// One Application syncs each overlay, in the cluster.
	list, err := dynamic.NewForConfigOrDie(cp.RESTConfig()).Resource(argoapp.ApplicationGVR).Namespace(a.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syncs := map[string][]string{}
	for _, u := range list.Items {
		p, _, _ := unstructured.NestedString(u.Object, "spec", "source", "path")
		r, _, _ := unstructured.NestedString(u.Object, "spec", "source", "repoURL")
		if argoapp.SameRepo(r, repoURL) {
			syncs[p] = append(syncs[p], u.GetName())
		}
	}
	if len(syncs["apps/shop/overlays/prod"]) != 1 || len(syncs["apps/shop/overlays/staging"]) != 1 {
		t.Errorf("Applications by path: %v; want one for each overlay", syncs)
	}
}
