package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// reconcileRow measures `adopt reconcile` over an estate with nothing new
// against `adopt plan` of the same scope: twice ReconcileNamespaces
// namespaces, each with ReconcileObjects ConfigMaps applied as kubectl
// would (with last-applied-configuration), a Deployment and a Service, on
// a control plane of its own (with its controller-manager and scheduler),
// with a real Gitea and a real Argo CD (the current GA). A first reconcile opens one pull request per namespace's
// Application. Half the groups are then done: merged, their Applications
// created from what merged, synced and finalized by reconcile --sync. Of
// the other half, open, two are closed unmerged (declined). A checked run
// finds every group unchanged, declined or done. Then both commands are
// measured in turn, through the same two proxies: one in front of the
// kube-apiserver that counts every request, and one in front of Gitea (API
// and git) that refuses and counts every write. Goals: at most 1.2x the
// plan, and no write request to either.
func (b *bench) reconcileRow(ctx context.Context) error {
	c := b.c
	if c.ReconcileNamespaces == 0 {
		return nil
	}
	cp, cs, err := startSeedable(ctx)
	if err != nil {
		return err
	}
	defer cp.Stop()
	g, err := testenv.StartGitea(ctx)
	if err != nil {
		return err
	}
	defer g.Stop()
	const repoName = "estate"
	cloneURL, err := g.CreateRepo(ctx, repoName)
	if err != nil {
		return err
	}
	gp, err := startGiteaProxy(g.URL)
	if err != nil {
		return err
	}
	defer gp.Close()
	kp, err := testenv.StartFaultProxy(cp, cp.Dir)
	if err != nil {
		return err
	}
	defer kp.Close()

	// The Deployments' controller, so that Argo CD finds them Healthy.
	sched, err := testenv.StartScheduling(ctx, cp)
	if err != nil {
		return err
	}
	defer sched.Stop()
	a, err := testenv.StartArgoCD(ctx, cp, testenv.ArgoCDCurrent)
	if err != nil {
		return err
	}
	defer a.Stop()

	start := time.Now()
	var namespaces []string
	for _, prefix := range []string{"estate", "done"} {
		names, err := seedEstate(ctx, cs, prefix, c.ReconcileNamespaces, c.ReconcileObjects)
		if err != nil {
			return err
		}
		namespaces = append(namespaces, names...)
	}
	objects := 2 * c.ReconcileNamespaces * (c.ReconcileObjects + 2)
	b.seeded(objects, time.Since(start))

	repoURL := gp.URL + strings.TrimPrefix(cloneURL, strings.TrimSuffix(g.URL, "/"))
	env := []string{"ADOPT_GIT_TOKEN=" + g.Token}
	common := []string{"--kubeconfig", kp.Kubeconfig}
	scope := []string{"-n", strings.Join(namespaces, ","), "--repo", repoURL, "--git-user", g.User, "--argocd-version", testenv.ArgoCDCurrent}
	rec := append(append(append([]string{}, common...), "reconcile"), scope...)
	// finalize's journals go to the control plane's temporary directory,
	// never the working directory.
	rec = append(rec, "--provider", "gitea", "--api-url", gp.URL+"/", "--max-open-prs", "0", "--lock-namespace", "default", "--journal-dir", cp.Dir,
		"--cluster-name", "bench", "--author", "bench <bench@example.invalid>", "-o", "json")
	plan := append(append(append([]string{}, common...), "plan", "-q"), scope...)

	// The first run opens every group's pull request (writes allowed).
	gp.allow(true)
	opened, err := reconcileReport(env, c.Adopt, rec)
	if err != nil {
		return err
	}
	gp.allow(false)
	var apps []string
	for _, gr := range opened.Groups {
		apps = append(apps, gr.App)
	}
	c.Log("  reconcile row: the first run proposed %s", strings.Join(apps, ", "))
	prs, err := g.PullRequests(ctx, repoName)
	if err != nil {
		return err
	}
	if n := opened.Count(reconcile.Opened); n != len(prs) || n < len(namespaces) {
		return fmt.Errorf("reconcile row: the first run opened %d groups and Gitea has %d pull requests, want one per namespace (%d): %+v", n, len(prs), len(namespaces), opened.Groups)
	}
	// Half the groups are done: merged, their Applications created from
	// what merged (as an app of apps would), then synced and finalized by
	// reconcile --sync.
	var open []testenv.GiteaPR
	done := 0
	for _, pr := range prs {
		if !strings.Contains(pr.Head.Ref, "-done-") {
			open = append(open, pr)
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err := g.MergePullRequest(mctx, repoName, pr.Number)
		cancel()
		if err != nil {
			return err
		}
		done++
	}
	bare := filepath.Join(g.Dir, "repos", strings.ToLower(g.User), repoName+".git")
	for _, gr := range opened.Groups {
		if !strings.Contains(gr.Branch, "-done-") {
			continue
		}
		app, err := exec.Command("git", "--git-dir", bare, "show", "main:argocd/apps/"+gr.App+".yaml").Output()
		if err != nil {
			return fmt.Errorf("reconcile row: the merged Application of %s: %v", gr.App, err)
		}
		if err := a.CreateApplication(ctx, app); err != nil {
			return err
		}
	}
	gp.allow(true)
	for attempt := 1; ; attempt++ {
		rep, err := reconcileReport(env, c.Adopt, append(rec, "--sync", "--finalize-wait", "3m", "--settle", "0s"))
		if err != nil {
			return err
		}
		if rep.Count(reconcile.Finalized)+rep.Count(reconcile.Done) == done {
			break
		}
		if attempt == 3 {
			return fmt.Errorf("reconcile row: %d of %d merged groups finalized after %d runs: %+v", rep.Count(reconcile.Finalized)+rep.Count(reconcile.Done), done, attempt, rep.Groups)
		}
	}
	gp.allow(false)
	declined := min(2, len(open))
	for _, pr := range open[:declined] {
		if err := g.ClosePullRequest(ctx, repoName, pr.Number); err != nil {
			return err
		}
	}
	// Checked: nothing new, so every group is unchanged, declined or done.
	rep, err := reconcileReport(env, c.Adopt, rec)
	if err != nil {
		return err
	}
	if n := rep.Count(reconcile.Unchanged) + rep.Count(reconcile.Declined) + rep.Count(reconcile.Done); n != len(rep.Groups) || rep.Count(reconcile.Declined) != declined || rep.Count(reconcile.Done) != done {
		return fmt.Errorf("reconcile row: a run with nothing new: %d of %d groups unchanged, declined or done (%d declined, want %d; %d done, want %d)", n, len(rep.Groups), rep.Count(reconcile.Declined), declined, rep.Count(reconcile.Done), done)
	}
	gp.writes()
	kp.Requests()

	ms, err := measureInterleaved(c.PlanRepeat,
		command{what: "adopt reconcile, nothing new", name: c.Adopt, args: rec, env: env},
		command{what: "adopt plan of the same scope and repository", name: c.Adopt, args: plan, env: env})
	if err != nil {
		return err
	}
	providerWrites := gp.writes()
	clusterWrites := 0
	for _, r := range kp.Requests() {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			clusterWrites++
		}
	}
	ratio := ms[0].Seconds / ms[1].Seconds
	b.res.Rows = append(b.res.Rows, Row{
		Name:     fmt.Sprintf("12. reconcile with nothing new, %d namespaces (%d objects; %d groups done, %d pull requests open, %d declined)", len(namespaces), objects, done, len(open)-declined, declined),
		Measured: ms,
		Ratios: []Ratio{
			{What: "reconcile / plan", Value: ratio, Goal: "<= 1.2x", Met: ratio <= 1.2},
			{What: "write requests to Gitea (API and git), through a proxy", Value: float64(providerWrites), Goal: "0", Met: providerWrites == 0},
			{What: "write requests to the kube-apiserver, through a proxy", Value: float64(clusterWrites), Goal: "0", Met: clusterWrites == 0},
		},
	})
	return nil
}

// seedEstate creates n namespaces <prefix>-NNN, each with per ConfigMaps
// applied as `kubectl apply` would (last-applied-configuration), a
// Deployment and a Service, and returns their names.
func seedEstate(ctx context.Context, cs *kubernetes.Clientset, prefix string, n, per int) ([]string, error) {
	p := newPool()
	var names []string
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("%s-%03d", prefix, i)
		names = append(names, ns)
		p.jobs <- func() error {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return err
			}
			labels := map[string]string{"app.kubernetes.io/name": "svc"}
			for k := 0; k < per; k++ {
				cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%03d", k), Namespace: ns, Labels: labels},
					Data:       map[string]string{"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", k), 20)}}
				if err := lastApplied(&cm.ObjectMeta, cm); err != nil {
					return err
				}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			zero := int32(0)
			d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns, Labels: labels},
				Spec: appsv1.DeploymentSpec{Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "svc", Image: "registry.invalid/svc:1.0.0"}}}}}}
			if err := lastApplied(&d.ObjectMeta, d); err != nil {
				return err
			}
			if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				return err
			}
			svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: ns, Labels: labels},
				Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
			if err := lastApplied(&svc.ObjectMeta, svc); err != nil {
				return err
			}
			_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}
	}
	return names, p.wait()
}

// lastApplied sets the annotation kubectl apply leaves: the object as
// given, as JSON.
func lastApplied(meta *metav1.ObjectMeta, obj any) error {
	j, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	meta.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: string(j) + "\n"}
	return nil
}

// reconcileReport runs reconcile once and reads its JSON report.
func reconcileReport(env []string, bin string, args []string) (*reconcile.Report, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("adopt reconcile: %v: %s", err, tail(errOut.String(), 2000))
	}
	var rep reconcile.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("adopt reconcile -o json: %v", err)
	}
	return &rep, nil
}

// giteaProxy stands in front of Gitea, API and git alike. While writes are
// not allowed it refuses every write (any request but a GET, a HEAD or
// git's upload-pack, which fetches) with 500 and counts it.
type giteaProxy struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	allowed bool
	refused []string
}

func startGiteaProxy(giteaURL string) (*giteaProxy, error) {
	target, err := url.Parse(giteaURL)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	gp := &giteaProxy{}
	gp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		read := r.Method == http.MethodGet || r.Method == http.MethodHead ||
			r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")
		gp.mu.Lock()
		refuse := !read && !gp.allowed
		if refuse {
			gp.refused = append(gp.refused, r.Method+" "+r.URL.Path)
		}
		gp.mu.Unlock()
		if refuse {
			http.Error(w, "bench: this proxy refuses every write", http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	gp.URL = gp.srv.URL
	return gp, nil
}

func (gp *giteaProxy) allow(on bool) {
	gp.mu.Lock()
	defer gp.mu.Unlock()
	gp.allowed = on
}

// writes is how many writes were refused since the last call.
func (gp *giteaProxy) writes() int {
	gp.mu.Lock()
	defer gp.mu.Unlock()
	n := len(gp.refused)
	gp.refused = nil
	return n
}

func (gp *giteaProxy) Close() { gp.srv.Close() }
