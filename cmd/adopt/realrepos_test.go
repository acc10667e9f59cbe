package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden plans of TestPlanOnRealRepoLayouts")

// realRepo is a fixture modelled on a public GitOps repo (see its
// README.md: the repo and commit it models), applied by hand as that
// repo's README says, with the Applications the repo has (or its README
// creates) for the second run.
type realRepo struct {
	name string
	// namespaces are the ${NS_…} tokens of the fixture, each a namespace.
	namespaces []string
	byHand     func(t *testing.T, r *repoRun)
	// apps are the Application manifests (fixture paths) applied for the
	// second run.
	apps []string
}

// repoRun is one fixture in a repo on the test git server, cloned, for
// control plane c.
type repoRun struct {
	c                     *testenv.ControlPlane
	checkout, url, argoNS string
	ns                    map[string]string // token -> namespace
	files                 map[string]string
	helm                  *testenv.Helm
	git                   *testenv.GitServer
	name                  string // the repo's on git
}

// kc runs kubectl against the run's control plane.
func (r *repoRun) kc(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	if out, err := r.c.Kubectl(context.Background(), stdin, args...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestPlanOnRealRepoLayouts (issue 34): three layouts that Argo CD users
// learn from, rebuilt here (testdata/realrepos/*/README.md names each
// upstream repo and commit), are applied by hand as their READMEs say:
// kubectl apply -f, kubectl apply -k, helm upgrade --install from the
// checkout. Each is planned from a clone (its origin is the repo's URL)
// twice: with no Application in the cluster, and with the repo's own
// Applications (or app of apps) applied. The whole plan, every object's
// Application, source, path, Git match, drift and findings, and every
// Application, is compared with a golden file reviewed by hand
// (-update rewrites them). With the Applications applied, no new
// Application is proposed over a path they sync.
func TestPlanOnRealRepoLayouts(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	for _, rr := range realRepos() {
		t.Run(rr.name, func(t *testing.T) {
			r := setUpRealRepo(t, cp, cp.Namespace(t), rr)
			rr.byHand(t, r)
			// The names are pinned: the Applications other tests leave on
			// the shared plane (and the ApplicationSets generating them)
			// would otherwise teach the plan their pattern.
			names := filepath.Join(t.TempDir(), "adopt.yaml")
			if err := os.WriteFile(names, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nnameTemplate: adopt-{namespace}-{key}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--argocd-namespace", r.argoNS, "--repo", r.checkout, "-n", strings.Join(sortedValues(r.ns), ","), "--config", names}
			compareGolden(t, r, rr.name+".golden", planJSON(t, args...))

			created := r.ownApplications(rr)
			r.kc(t, []byte(strings.Join(created, "---\n")), "apply", "-f", "-")
			p := planJSON(t, args...)
			compareGolden(t, r, rr.name+".apps.golden", p)
			// A path an existing Application syncs may get a new one only
			// for another destination namespace (the same directory applied
			// by hand into a namespace no Application deploys it to).
			synced := map[string][]string{}
			for _, a := range p.Applications {
				if a.Source == "existing" {
					synced[path.Clean(a.SourcePath)] = append(synced[path.Clean(a.SourcePath)], a.Namespace)
				}
			}
			for _, a := range p.Applications {
				for _, ns := range synced[path.Clean(a.SourcePath)] {
					if a.Source != "existing" && (ns == a.Namespace || ns == "" || a.Namespace == "") {
						t.Errorf("a new Application over a path and namespace the repo's Applications sync: %s (%s at %s, namespace %q)", a.Name, a.Source, a.SourcePath, a.Namespace)
					}
				}
			}
		})
	}
}

// ownApplications are the repo's own Applications: the root its README
// creates (automated, as the upstream README's `argocd app create` with
// sync), the Application manifests the repo holds, or one per environment
// for a repo that has none.
func (r *repoRun) ownApplications(rr realRepo) []string {
	var created []string
	switch {
	case rr.name == "example-apps":
		created = append(created, fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: example-apps, namespace: %s}\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: {repoURL: %q, path: apps, targetRevision: main}\n  syncPolicy: {automated: {}}\n", r.argoNS, r.argoNS, r.url))
	case len(rr.apps) == 0:
		for _, env := range []string{"prod-us", "prod-eu", "qa"} {
			created = append(created, fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: %s, namespace: %s}\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc}\n  source: {repoURL: %q, path: envs/%s, targetRevision: main}\n", env, r.argoNS, r.url, env))
		}
	}
	for _, p := range rr.apps {
		created = append(created, r.files[p])
	}
	return created
}

// realRepos are the fixtures, each with how its README applies it by hand.
func realRepos() []realRepo {
	return []realRepo{
		{
			name:       "example-apps",
			namespaces: []string{"NS_GUESTBOOK", "NS_GUESTBOOK2", "NS_KUSTOMIZE", "NS_HELM"},
			byHand: func(t *testing.T, r *repoRun) {
				r.kc(t, nil, "apply", "-n", r.ns["NS_GUESTBOOK"], "-f", filepath.Join(r.checkout, "guestbook"))
				r.kc(t, nil, "apply", "-n", r.ns["NS_GUESTBOOK2"], "-f", filepath.Join(r.checkout, "guestbook"))
				r.kc(t, nil, "apply", "-n", r.ns["NS_KUSTOMIZE"], "-k", filepath.Join(r.checkout, "kustomize-guestbook"))
				chart := filepath.Join(r.checkout, "helm-guestbook")
				helmRun(context.Background(), t, r.helm, "upgrade", "--install", "helm-guestbook", chart, "-n", r.ns["NS_HELM"], "-f", filepath.Join(chart, "values-production.yaml"))
			},
		},
		{
			name:       "env-promotion",
			namespaces: []string{"NS_PROD", "NS_QA"},
			byHand: func(t *testing.T, r *repoRun) {
				for _, env := range []string{"prod-us", "prod-eu", "qa"} {
					r.kc(t, nil, "apply", "-k", filepath.Join(r.checkout, "envs", env))
				}
			},
		},
		{
			name:       "cert-examples",
			namespaces: []string{"NS_DEMO1", "NS_DEMO2", "NS_KUST", "NS_SIMPLE", "NS_HELM", "NS_CHART"},
			byHand: func(t *testing.T, r *repoRun) {
				r.kc(t, nil, "apply", "-n", r.ns["NS_DEMO1"], "-f", filepath.Join(r.checkout, "declarative/manifests"))
				r.kc(t, nil, "apply", "-n", r.ns["NS_DEMO2"], "-f", filepath.Join(r.checkout, "declarative/manifests"))
				r.kc(t, nil, "apply", "-n", r.ns["NS_KUST"], "-k", filepath.Join(r.checkout, "kustomize-apps/overlays/production"))
				r.kc(t, nil, "apply", "-n", r.ns["NS_SIMPLE"], "-f", filepath.Join(r.checkout, "simple-app"))
				chart := filepath.Join(r.checkout, "helm-apps/many-envs-chart")
				helmRun(context.Background(), t, r.helm, "upgrade", "--install", "storefront-live", chart, "-n", r.ns["NS_HELM"],
					"-f", filepath.Join(chart, "common-values.yaml"), "-f", filepath.Join(chart, "prod-values.yaml"))
				// The repo's other chart has the same name and version: only
				// its render tells them apart.
				helmRun(context.Background(), t, r.helm, "upgrade", "--install", "simple", filepath.Join(r.checkout, "helm-apps/simple-chart"), "-n", r.ns["NS_CHART"])
			},
			apps: []string{"declarative/parent-app/my-parent-app.yml", "helm-apps/app-with-many-values.yaml"},
		},
	}
}

// setUpRealRepo puts fixture rr in a repo on a new test git server, with
// a namespace of c for each of its tokens and argoNS as Argo CD's, and
// clones it.
func setUpRealRepo(t *testing.T, c *testenv.ControlPlane, argoNS string, rr realRepo) *repoRun {
	t.Helper()
	r := &repoRun{c: c, argoNS: argoNS, ns: map[string]string{}, files: map[string]string{}}
	for _, tok := range rr.namespaces {
		r.ns[tok] = c.Namespace(t)
	}
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	r.git, r.name = g, rr.name
	r.url = g.URL + "/" + rr.name + ".git"
	src := filepath.Join("testdata", "realrepos", rr.name)
	raw, err := testenv.ReadFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range raw {
		r.files[p] = os.Expand(c, func(k string) string {
			switch {
			case k == "REPO":
				return r.url
			case k == "ARGOCD":
				return r.argoNS
			case r.ns[k] != "":
				return r.ns[k]
			}
			return "$" + k // Helm and shell text is left as it is
		})
	}
	if got, err := g.CreateRepo(rr.name, r.files); err != nil || got != r.url {
		t.Fatalf("repo %s: %v", got, err)
	}
	r.checkout = filepath.Join(t.TempDir(), rr.name)
	if out, err := exec.Command("git", "clone", "-q", r.url, r.checkout).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	if r.helm, err = testenv.NewHelm(c, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return r
}

// compareGolden compares the plan's summary (planSummary) with the golden
// file, namespaces and the repo URL written as their tokens.
func compareGolden(t *testing.T, r *repoRun, name string, p *plan.Plan) {
	t.Helper()
	// Plan-wide findings about other repos name every Application on
	// the shared control plane: only this run's must not be named.
	for _, f := range p.Findings {
		if (f.Code == plan.CodeOtherRepo || f.Code == plan.CodeNotGitSource) && strings.Contains(f.Message, r.argoNS+"/") {
			t.Errorf("%s: an Application of this repo is said to read another: %s", name, f.Message)
		}
	}
	got := planSummary(p)
	pairs := []string{r.url, "${REPO}", r.argoNS, "${ARGOCD}"}
	for tok, ns := range r.ns {
		pairs = append(pairs, ns, "${"+tok+"}")
	}
	// Sorted once the namespaces are tokens: the plan sorts by namespace.
	lines := strings.Split(strings.TrimSuffix(strings.NewReplacer(pairs...).Replace(got), "\n"), "\n")
	sort.Strings(lines)
	got = strings.Join(lines, "\n") + "\n"
	file := filepath.Join("testdata", "realrepos", name)
	if *updateGolden {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to write it, then review it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the plan (- want, + got):\n%s", file, lineDiff(string(want), got))
	}
}

// planSummary is the plan, one line per Application, object and
// plan-wide finding: everything a reviewer checks, no more.
func planSummary(p *plan.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "repo URL %s (from %s)\n", p.Settings.RepoURL, p.Settings.RepoURLFrom)
	for _, a := range p.Applications {
		fmt.Fprintf(&b, "application %s: source %s, namespace %q", a.Name, a.Source, a.Namespace)
		if a.SourcePath != "" {
			fmt.Fprintf(&b, ", path %s", a.SourcePath)
		}
		if a.Kustomize {
			b.WriteString(", kustomize")
		}
		if len(a.Include) > 0 {
			fmt.Fprintf(&b, ", include %v", a.Include)
		}
		if h := a.Helm; h != nil {
			fmt.Fprintf(&b, ", helm release %s chart %s %s path %q valueFiles %v values %v from %q", h.ReleaseName, h.Chart, h.Version, h.Path, h.ValueFiles, h.Values, h.SourceFrom)
		}
		if e := a.Existing; e != nil {
			fmt.Fprintf(&b, ", existing in %s", e.Namespace)
			if e.Pending != "" {
				fmt.Fprintf(&b, ", pending (%s)", e.Pending)
			}
		}
		fmt.Fprintf(&b, ", %d objects\n", len(a.Objects))
	}
	for _, o := range p.Objects {
		fmt.Fprintf(&b, "object %s: application %q", o.Ref.String(), o.App)
		if g := o.Git; g != nil {
			fmt.Fprintf(&b, ", git %s:%d", g.Path, g.Line)
			if g.Kustomization != "" {
				fmt.Fprintf(&b, " (kustomization %s)", g.Kustomization)
			}
		}
		for _, g := range o.Ambiguous {
			fmt.Fprintf(&b, ", ambiguous %s:%d", g.Path, g.Line)
		}
		if o.Drift != nil {
			if o.Drift.Identical() {
				b.WriteString(", drift none")
			} else {
				fmt.Fprintf(&b, ", drift %v", o.Drift.Fields)
			}
		}
		var codes []string
		for _, f := range o.Findings {
			codes = append(codes, f.Code+"/"+string(f.Severity))
		}
		sort.Strings(codes)
		fmt.Fprintf(&b, ", findings %v\n", codes)
	}
	var codes []string
	for _, f := range p.Findings {
		if f.Code != plan.CodeOtherRepo && f.Code != plan.CodeNotGitSource {
			codes = append(codes, f.Code+"/"+string(f.Severity))
		}
	}
	sort.Strings(codes)
	fmt.Fprintf(&b, "plan findings %v\n", codes)
	return b.String()
}

func sortedValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// lineDiff lists the lines only one side has.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	inW, inG := map[string]bool{}, map[string]bool{}
	for _, l := range w {
		inW[l] = true
	}
	for _, l := range g {
		inG[l] = true
	}
	var out []string
	for _, l := range w {
		if !inG[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !inW[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
