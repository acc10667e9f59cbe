package planner_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// connect is the connection every engine is handed, for cfg.
func connect(t *testing.T, cfg *rest.Config) *kubeconn.Cluster {
	t.Helper()
	c, err := kubeconn.New(cfg, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// options are the pipeline's inputs as plan's command fills them by
// default (adopt.yaml's defaults, kubectl's chunk size), for namespaces
// ns ("" for the whole cluster) of the package's control plane.
func options(t *testing.T, ns string) planner.Options {
	t.Helper()
	return optionsFor(connect(t, cp.RESTConfig()), ns)
}

func optionsFor(c *kubeconn.Cluster, ns string) planner.Options {
	cfg := config.Default()
	return planner.Options{Clients: c.Clients, Kube: c.Kube, Dynamic: c.Clients.Dynamic,
		Cluster: plan.Cluster{Server: c.Config.Host, Context: c.Context, Namespace: ns},
		Config:  cfg, GroupBy: plan.GroupBy(cfg.GroupBy), ArgoCDNamespace: "argocd", ArgoCDVersion: "v3.2.6",
		ChunkSize: 500, Explain: c.Explain}
}

// run plans with o, failing t on an error.
func run(t *testing.T, o planner.Options) *plan.Plan {
	t.Helper()
	p, err := planner.Plan(context.Background(), o)
	if err != nil {
		t.Fatalf("planner.Plan: %v", err)
	}
	return p
}

// kubectl runs the real kubectl against the control plane.
func kubectl(t *testing.T, manifest string, args ...string) {
	t.Helper()
	if out, err := cp.Kubectl(context.Background(), []byte(manifest), args...); err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
}

// configMap is a ConfigMap manifest.
func configMap(ns, name string, labels, annotations map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	for _, m := range []struct {
		key string
		kv  map[string]string
	}{{"labels", labels}, {"annotations", annotations}} {
		if len(m.kv) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", m.key)
		for k, v := range m.kv {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("data:\n  k: v\n")
	return b.String()
}

func object(p *plan.Plan, kind, ns, name string) *plan.Object {
	for i := range p.Objects {
		if o := &p.Objects[i]; o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}

func names(p *plan.Plan, ns string) map[string]*plan.Object {
	out := map[string]*plan.Object{}
	for i := range p.Objects {
		if p.Objects[i].Namespace == ns {
			out[p.Objects[i].Name] = &p.Objects[i]
		}
	}
	return out
}

func hasFinding(o *plan.Object, code string) bool {
	for _, f := range o.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// TestPipelineStagesInOrder: the pipeline, on a real kube-apiserver with
// a GitOps repo and the preview, reads the repo, then lists the cluster,
// then previews the first sync, each stage's progress ending at its
// total; it plans only -n's namespaces (two of three),
// matches the object the repo holds with its file and line and exports
// the other, previews every object, and seals the plan (unless asked not
// to). Without the repo, the same cluster plans every object as an
// export, with no Git match.
func TestPipelineStagesInOrder(t *testing.T) {
	a, b, other := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	inGit := configMap(a, "in-git", nil, nil)
	kubectl(t, inGit, "apply", "-f", "-")
	kubectl(t, configMap(a, "by-hand", nil, nil), "apply", "-f", "-")
	kubectl(t, configMap(b, "also", nil, nil), "apply", "-f", "-")
	kubectl(t, configMap(other, "elsewhere", nil, nil), "apply", "-f", "-")
	repo := t.TempDir()
	if err := testenv.InitRepo(repo, map[string]string{"apps/a/in-git.yaml": inGit, "README.md": "gitops\n"}); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var stages []string // each callback's stage, in the order called
	note := func(stage string) {
		mu.Lock()
		defer mu.Unlock()
		if len(stages) == 0 || stages[len(stages)-1] != stage {
			stages = append(stages, stage)
		}
	}
	var lastListed, lastPreviewed [2]int
	o := options(t, b+","+a)
	o.Cluster.Namespace = strings.Join(sorted(a, b), ",")
	o.Repo = gitindex.Source{Location: repo}
	o.Preview = true
	o.Say = func(format string, args ...any) {
		if strings.HasPrefix(format, "reading repo") {
			note("repo")
		}
	}
	o.Listed = func(done, total, _ int) { note("list"); mu.Lock(); lastListed = [2]int{done, total}; mu.Unlock() }
	o.Previewed = func(done, total int) { note("preview"); mu.Lock(); lastPreviewed = [2]int{done, total}; mu.Unlock() }
	p := run(t, o)
	if got := strings.Join(stages, " → "); got != "repo → list → preview" {
		t.Errorf("stages ran as %s; want repo → list → preview", got)
	}
	if lastListed[0] != lastListed[1] || lastListed[1] == 0 || lastPreviewed[0] != lastPreviewed[1] || lastPreviewed[1] != len(p.Objects) {
		t.Errorf("last progress: listed %v, previewed %v of %d objects; want each at its total", lastListed, lastPreviewed, len(p.Objects))
	}
	seen := map[string]bool{}
	for _, ob := range p.Objects {
		seen[ob.Namespace] = true
		if ob.Preview == nil {
			t.Errorf("%s was not previewed", ob.Ref)
		}
	}
	if !seen[a] || !seen[b] || seen[other] || len(seen) != 2 || p.Cluster.Namespace != strings.Join(sorted(a, b), ",") {
		t.Errorf("planned namespaces %v, recorded %q; want %s and %s only", seen, p.Cluster.Namespace, a, b)
	}
	g, hand := object(p, "ConfigMap", a, "in-git"), object(p, "ConfigMap", a, "by-hand")
	if g == nil || g.Git == nil || g.Git.Path != "apps/a/in-git.yaml" || g.Git.Line != 1 {
		t.Errorf("the object in the repo: %+v; want matched with apps/a/in-git.yaml:1", g)
	}
	if hand == nil || hand.Git != nil || !hasFinding(hand, plan.CodeNotInGit) {
		t.Errorf("the object not in the repo: %+v; want no match and a %s finding", hand, plan.CodeNotInGit)
	}
	if p.ID == "" {
		t.Errorf("the plan is not sealed")
	}

	// Without the repo: every object an export, nothing matched, nothing
	// said of Git; and unsealed when asked.
	o = options(t, a)
	o.Unsealed = true
	var said []string
	o.Say = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	p = run(t, o)
	if len(said) != 0 || p.ID != "" {
		t.Errorf("without a repo: said %q, id %q; want nothing said of a repo, and no id", said, p.ID)
	}
	for _, ob := range p.Objects {
		if ob.Git != nil || ob.Preview != nil {
			t.Errorf("without a repo or --preview, %s: git %+v, preview %v", ob.Ref, ob.Git, ob.Preview != nil)
		}
	}
	for _, app := range p.Applications {
		if app.Source != "export" || !strings.HasPrefix(app.SourcePath, "adopted/"+a) {
			t.Errorf("without a repo, Application %s: source %s at %s; want an export under adopted/%s", app.Name, app.Source, app.SourcePath, a)
		}
	}
	if len(p.Objects) != 2 || len(p.Applications) == 0 {
		t.Errorf("without a repo: %d objects, %d Applications; want 2 objects adopted", len(p.Objects), len(p.Applications))
	}
}

func sorted(s ...string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestPipelineErrorsCarryContext: what stops the pipeline says where and
// why. A namespace of -n the cluster lacks is bad input naming the
// cluster and the namespace; an Argo CD setting that cannot be read stops
// the lists and is the error told, through Explain; a cluster that does
// not answer is told through Explain; a repo that cannot be read names it.
func TestPipelineErrorsCarryContext(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	explained := func(err error) error { return fmt.Errorf("explained: %w", err) }

	o := options(t, ns+",no-such-namespace")
	_, err := planner.Plan(ctx, o)
	if !errors.Is(err, discover.ErrNoNamespace) || !strings.HasPrefix(err.Error(), "cluster "+cp.Server+": ") || !strings.Contains(err.Error(), `namespace "no-such-namespace"`) || strings.Contains(err.Error(), `"`+ns+`"`) {
		t.Errorf("a missing namespace: %v; want ErrNoNamespace naming the cluster and it alone", err)
	}

	o = options(t, ns)
	o.ArgoCDVersion, o.Explain = "not-a-version", explained
	if _, err := planner.Plan(ctx, o); err == nil || !strings.HasPrefix(err.Error(), "explained: ") || !strings.Contains(err.Error(), "not-a-version") {
		t.Errorf("an Argo CD version that cannot be read: %v; want it, explained", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + l.Addr().String()
	l.Close()
	down := rest.CopyConfig(cp.RESTConfig())
	down.Host = closed
	o = optionsFor(connect(t, down), ns)
	o.Explain = explained
	if _, err := planner.Plan(ctx, o); err == nil || !strings.HasPrefix(err.Error(), "explained: ") || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("a cluster that does not answer: %v; want the address, explained", err)
	}

	o = options(t, ns)
	missing := filepath.Join(t.TempDir(), "no-such-repo")
	o.Repo = gitindex.Source{Location: missing}
	if _, err := planner.Plan(ctx, o); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a repo that cannot be read: %v; want it named", err)
	}
}

// TestPlanStopsWhenTheSecretRulesDoNotLoad: secret detection fails closed.
// A rule set that cannot load stops the plan with its error before any
// read: the cluster given does not answer, and the error is the rules'.
func TestPlanStopsWhenTheSecretRulesDoNotLoad(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := rest.CopyConfig(cp.RESTConfig())
	down.Host = "https://" + l.Addr().String()
	l.Close()
	o := optionsFor(connect(t, down), "")
	unloaded := errors.New("the secret-detection rules did not load")
	o.Rules = func() (*redact.Judge, error) { return nil, unloaded }
	p, err := planner.Plan(context.Background(), o)
	if !errors.Is(err, unloaded) || p != nil {
		t.Fatalf("Plan with rules that do not load: plan %v, error %v; want no plan and the rules' error, before any read", p != nil, err)
	}
}
