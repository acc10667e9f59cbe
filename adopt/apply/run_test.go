package apply

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

// liveCluster is a cluster (a fake dynamic client, no API server) holding
// a ConfigMap for each object of p.
func liveCluster(p *plan.Plan) Cluster {
	var objs []runtime.Object
	for _, ob := range p.Objects {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": ob.Name, "namespace": ob.Namespace, "resourceVersion": "7", "uid": "u-" + ob.Name},
			"data":     map[string]any{"k": "v"},
		}})
	}
	return Cluster{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)}
}

// exportOnly is contractPlan with its one exported Application only.
func exportOnly() *plan.Plan {
	p := contractPlan()
	p.Applications, p.Objects = p.Applications[:1], p.Objects[:1]
	return p
}

func renderOptions(t *testing.T) RenderOptions {
	t.Helper()
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	return RenderOptions{Secrets: export.SecretsSkip, CSAMigration: CSAAuto, Templates: set}
}

var author = gitops.Signature{Name: "adopt", Email: "adopt@example.invalid"}

// TestRunCommitsThePlan runs the plan engine with no API server and a
// local repository: the result carries the commit, the summary and the
// pull request's input, and no warning.
func TestRunCommitsThePlan(t *testing.T) {
	p := exportOnly()
	res, err := Run(context.Background(), RunOptions{Plan: p, Cluster: liveCluster(p), Render: renderOptions(t),
		Checkout: CheckoutOptions{URL: gitRepo(t)}, Write: WriteOptions{Author: author, NoPush: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 0 || res.Plan != p || res.Commit == nil || res.Commit.Branch != "adopt/"+AdoptionID(p) || !res.Commit.Changed || res.Checkout.Base != "main" {
		t.Fatalf("result: warnings %v, commit %+v, base %q", res.Warnings, res.Commit, res.Checkout.Base)
	}
	if len(res.Summary.Applications) != 1 || res.Summary.Applications[0].Name != "adopt-shop" {
		t.Fatalf("summary: %+v", res.Summary)
	}
	in := res.PRInput("plan.yaml", "")
	if in.Head != res.Commit.Branch || in.Base != "main" || in.Plan != p || in.PlanPath != "plan.yaml" {
		t.Errorf("pull request input: %+v", in)
	}
}

// TestRunWarnsAndStopsWithoutApplications: the version mismatch is a
// warning in the result, a plan without Applications clones nothing, and a
// bad --argocd-version is a ContractError.
func TestRunWarnsAndStopsWithoutApplications(t *testing.T) {
	p := contractPlan()
	p.Applications = nil
	res, err := Run(context.Background(), RunOptions{Plan: p, ArgoCDVersion: "v3.0.0", Checkout: CheckoutOptions{URL: "/nonexistent"}})
	if err != nil || res.Commit != nil || res.Checkout != nil {
		t.Fatalf("no Applications: %+v, %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "was made for Argo CD v2.14.21") {
		t.Errorf("warnings: %q", res.Warnings)
	}
	var ce *ContractError
	if _, err := Run(context.Background(), RunOptions{Plan: p, ArgoCDVersion: "banana"}); !errors.As(err, &ce) {
		t.Errorf("bad version: %v, want a ContractError", err)
	}
}

// TestRunExplainsAFailedRead: a read the cluster refuses carries the
// object and the cluster's explanation; the warnings are still returned.
func TestRunExplainsAFailedRead(t *testing.T) {
	p := exportOnly()
	c := liveCluster(&plan.Plan{})
	c.Explain = func(err error) error { return fmt.Errorf("explained: %v", err) }
	res, err := Run(context.Background(), RunOptions{Plan: p, Cluster: c, ArgoCDVersion: "v3.0.0", Render: renderOptions(t),
		Checkout: CheckoutOptions{URL: gitRepo(t)}, Write: WriteOptions{Author: author, NoPush: true}})
	if err == nil || !strings.Contains(err.Error(), "ConfigMap shop/hook: explained: ") {
		t.Fatalf("error: %v", err)
	}
	if res == nil || len(res.Warnings) != 1 || res.Commit != nil {
		t.Errorf("result with the error: %+v", res)
	}
}

// TestRunFleetCommitsOnce: the first cluster's plan decides the version
// (here its recorded one), a cluster whose plan recorded another is
// warned about by name, and the fleet is one commit.
func TestRunFleetCommitsOnce(t *testing.T) {
	plans, ix := fleetPlans()
	plans["ctx-us"].Tracking.Version = "v3.0.0"
	clusters := map[string]Cluster{}
	for name, p := range plans {
		clusters[name] = liveCluster(p)
	}
	res, err := RunFleet(context.Background(), FleetOptions{Fleet: &fleet.Fleet{Index: ix, Plans: plans, Path: "fleet.yaml"}, Clusters: clusters,
		Render: renderOptions(t), Checkout: CheckoutOptions{URL: gitRepo(t)}, Write: WriteOptions{Author: author, NoPush: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "cluster ctx-us: plan ") {
		t.Errorf("warnings: %q", res.Warnings)
	}
	if res.Commit == nil || len(res.Summary.Sets) != 1 || res.Summary.Sets[0].Name != "adopt-shop" {
		t.Fatalf("commit %+v, summary %+v", res.Commit, res.Summary)
	}
	if in := res.PRInput("fleet.yaml", ""); in.Title == "" || in.Body == "" || in.Head != res.Commit.Branch {
		t.Errorf("pull request input: %+v", in)
	}
}

// TestOpenPR: no provider and no token are ContractErrors (usage errors);
// a provider that fails is not, and the result still names it.
func TestOpenPR(t *testing.T) {
	none := func(string) string { return "" }
	in := prInput()
	var ce *ContractError
	for _, url := range []string{"https://git.example.invalid/acme/gitops.git", "https://gitlab.example.invalid/acme/gitops.git"} {
		in.RepoURL = url
		if r, err := OpenPR(context.Background(), OpenPROptions{Input: in, Getenv: none}); r != nil || !errors.As(err, &ce) {
			t.Errorf("%s: %+v, %v, want a ContractError", url, r, err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }))
	defer srv.Close()
	in.RepoURL = "https://git.example.invalid/acme/gitops.git"
	r, err := OpenPR(context.Background(), OpenPROptions{Input: in, Provider: "gitea", APIURL: srv.URL, Token: "t0ken", TokenFrom: "--git-token", Attempts: 1})
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("a failing provider: %v", err)
	}
	if r == nil || r.PR != nil || r.Provider.Name != "gitea" || r.Provider.TokenFrom != "--git-token" {
		t.Errorf("result: %+v", r)
	}
}
