// Package planner is the plan pipeline shared by `adopt plan` and by `adopt
// apply` without --plan: read the GitOps repo, read Argo CD's tracking and
// Applications, discover every listable object, judge and match them into
// an AdoptionPlan (with the Helm releases read from their records), and,
// when asked, preview the first sync (and prove each Helm chart renders what
// its release recorded). It only reads:
// nothing here writes to the cluster or to Git, and nothing prints (progress
// goes to the caller's callbacks).
package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Options are the pipeline's inputs, resolved by the command.
type Options struct {
	Clients discover.Clients
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Cluster plan.Cluster
	Config  *config.Config
	GroupBy plan.GroupBy
	// ArgoCDNamespace holds argocd-cm; ArgoCDVersion is --argocd-version.
	ArgoCDNamespace string
	ArgoCDVersion   string
	// Repo, when its Location is set, is the GitOps repo to match with.
	Repo      gitindex.Source
	ChunkSize int64
	Preview   bool
	// NoIgnoreDifferences are the Application name globs of
	// --no-ignore-differences: the plan records that apply writes no
	// ignoreDifferences for them (adopt.yaml's noIgnoreDifferences too).
	NoIgnoreDifferences []string
	// HelmSources finds Helm charts' repositories; nil means adopt.yaml's
	// helmRepositories, then the user's Helm repository config and cache
	// (helmrelease.DefaultSources, with Getenv: nil is the process's).
	HelmSources *helmrelease.Sources
	Getenv      func(string) string
	// Hub, when set, is the management cluster Argo CD runs on (hub and
	// spoke); nil means Argo CD runs in the cluster planned.
	Hub *Hub
	// Fleet says this plan is one cluster's of a fleet plan (fleet.Plan
	// sets it): new names then never follow a repo pattern that holds the
	// cluster's name.
	Fleet bool
	// Explain words a Kubernetes API error for the user (where, what next).
	Explain func(error) error
	// Progress callbacks; nil for none.
	Say       func(format string, a ...any)
	Listed    func(done, total, objects int)
	Previewed func(done, total int)
	// Unsealed returns the plan without its ID, for a caller that writes
	// it with plan.WriteFile, which seals it as it writes.
	Unsealed bool
	// Rules loads the secret rules; nil means redact.DefaultJudge. When
	// it fails, Plan stops with its error before reading anything.
	Rules func() (*redact.Judge, error)
}

// Plan runs the pipeline and returns the plan, sealed (its ID is the
// digest of everything in it, preview included) unless o.Unsealed.
func Plan(ctx context.Context, o Options) (*plan.Plan, error) {
	explain := o.Explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	// The one secret rule judges Helm values, exports and the preview: a
	// plan without it would let values through unjudged.
	rules := o.Rules
	if rules == nil {
		rules = redact.DefaultJudge
	}
	j, err := rules()
	if err != nil {
		return nil, err
	}
	scope := o.Cluster.Namespaces()
	unchecked, err := discover.CheckNamespaces(ctx, o.Kube, scope)
	if err != nil {
		if errors.Is(err, discover.ErrNoNamespace) {
			return nil, fmt.Errorf("cluster %s: %w", o.Cluster.Server, err)
		}
		return nil, explain(err)
	}
	var ix *gitindex.Index
	if o.Repo.Location != "" {
		o.say("reading repo %s\n", gitops.Redact(o.Repo.Location))
		// Kustomizations render with the options Argo CD gives kustomize.
		argo := o.Kube
		if o.Hub != nil {
			argo = o.Hub.Kube
		}
		opts, optsErr := argoapp.KustomizeBuildOptions(ctx, argo, o.ArgoCDNamespace)
		o.Repo.Kustomize.BuildOptions = opts
		if ix, err = gitindex.Load(ctx, o.Repo); err != nil {
			return nil, err
		}
		if optsErr != nil {
			ix.Notes = append(ix.Notes, fmt.Sprintf("kustomizations rendered with kustomize's defaults: %v", explain(optsErr)))
		}
	}
	cfg := config.Default()
	if o.Config != nil {
		c := *o.Config // a hub sets the destination below: not the caller's copy
		cfg = &c
	}
	// Argo CD's settings and Applications are read while the cluster is
	// listed: they are a few requests the lists need not wait for. When
	// they fail, the lists are stopped and their error is the one told.
	listCtx, stopLists := context.WithCancel(ctx)
	defer stopLists()
	type argo struct {
		tracking argoapp.Tracking
		apps     argoapp.Applications
		mgmt     *plan.Management
		err      error
	}
	argoDone := make(chan argo, 1)
	go func() {
		var a argo
		a.tracking, a.apps, a.mgmt, a.err = argoCD(ctx, o)
		if a.err != nil {
			stopLists()
		}
		argoDone <- a
	}()
	res, err := discover.Collect(listCtx, o.Clients, discover.Options{Namespaces: scope, SkipType: judge.UserTypes(cfg), PageSize: o.ChunkSize, Progress: o.Listed})
	a := <-argoDone
	if a.err != nil {
		return nil, a.err
	}
	if err != nil {
		return nil, explain(err)
	}
	tracking, apps, mgmt := a.tracking, a.apps, a.mgmt
	if ix != nil {
		// Applications in Git not created yet render objects too.
		apps.AddPending(definedApplications(ix), tracking.Namespace)
	}
	if mgmt != nil && mgmt.Cluster != "" && cfg.Destination == config.Default().Destination {
		// The Applications go to the cluster as the hub registered it.
		cfg.Destination = config.Destination{Name: mgmt.Cluster}
	}
	bodies := func(objs []discover.Object, want func(*discover.Object) bool, fn func(*discover.Object, map[string]any, error)) {
		lists := discover.Lister{Page: export.ListPage, List: func(ctx context.Context, gvr schema.GroupVersionResource, ns string, fn func(*unstructured.Unstructured) error) error {
			return export.List(ctx, o.Clients.Dynamic, o.Clients.Core, gvr, ns, fn)
		}}
		discover.Each(ctx, o.Clients, objs, scope, lists, 4, want, fn)
	}
	o.Config = cfg
	rels, helm, unread := helmReleases(ctx, o, j, res, ix)
	// Existing (or pending) Applications may render charts from the repo,
	// and so do hand-installed releases whose chart is in it.
	charts := chartRenderer(o, ix != nil && (len(apps.Specs) > 0 || chartInGit(helm)))
	in := plan.Inputs{
		Result: res, Tracking: tracking, Apps: apps, Config: cfg, Index: ix, GroupBy: o.GroupBy, Bodies: bodies,
		Cluster: o.Cluster, Helm: helm, HelmUnread: unread, Management: mgmt, Fleet: o.Fleet, Charts: charts,
		Findings: uncheckedNamespaces(unchecked), Judge: j,
	}
	if ix != nil {
		// The sources of existing Applications are read at their own
		// revisions here (a URL's are cloned), so that Build reads nothing.
		in.Renders = plan.Render(in, plan.Revisions{
			At:   func(rev string) (*gitindex.Index, error) { return ix.AtRevision(ctx, rev) },
			Same: func(rev string) bool { return ix.SameRevision(ctx, rev) },
		})
	}
	p := plan.Build(in)
	secretForms(ctx, o, cfg, p, ix)
	if o.Preview {
		if err := firstSync(ctx, o, j, explain, p, ix, rels); err != nil {
			return nil, err
		}
	}
	if err := p.TurnOffIgnoreDifferences(o.NoIgnoreDifferences, "--no-ignore-differences"); err != nil {
		return nil, err
	}
	if err := p.TurnOffIgnoreDifferences(cfg.NoIgnoreDifferences, "adopt.yaml noIgnoreDifferences"); err != nil {
		return nil, err
	}
	if !o.Unsealed {
		if err := p.Seal(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// definedApplications are the Application manifests in the repo (plain
// files and kustomization renders).
func definedApplications(ix *gitindex.Index) []argoapp.Defined {
	var out []argoapp.Defined
	for _, m := range ix.Manifests() {
		if m.Group == "argoproj.io" && m.Kind == "Application" {
			out = append(out, argoapp.Defined{Object: m.Object, Where: fmt.Sprintf("%s:%d", m.Path, m.Line)})
		}
	}
	return out
}

// uncheckedNamespaces is the finding for namespaces of -n the
// credentials may not get: their existence could not be checked, so a
// typo there plans nothing.
func uncheckedNamespaces(names []string) []plan.Finding {
	if len(names) == 0 {
		return nil
	}
	return []plan.Finding{{Code: plan.CodeNamespaceUnchecked, Severity: plan.Info, Message: fmt.Sprintf(
		"-n %s: not allowed to get %s, so whether %s exist%s was not checked; nothing found there may mean a misspelt name",
		strings.Join(names, ","), plural(len(names), "this namespace", "these namespaces"), plural(len(names), "it", "they"), plural(len(names), "s", ""))}}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (o Options) say(format string, a ...any) {
	if o.Say != nil {
		o.Say(format, a...)
	}
}

// Hub is the management cluster of a hub-and-spoke Argo CD.
type Hub struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Server and Context name it, for the plan and for errors.
	Server, Context string
	// Explain words its API errors.
	Explain func(error) error
}

// argoCD reads Argo CD's tracking configuration, Applications and
// ApplicationSets: from the planned cluster itself, or with a Hub from the
// management cluster, where the planned cluster's cluster Secret gives the
// Applications' destination (into cfg, unless adopt.yaml names one) and
// only Applications deploying to it count as tracking.
func argoCD(ctx context.Context, o Options) (argoapp.Tracking, argoapp.Applications, *plan.Management, error) {
	explain := o.Explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	if o.Hub == nil {
		tracking, err := argoapp.ReadTracking(ctx, o.Kube, o.ArgoCDNamespace, o.ArgoCDVersion)
		if err != nil {
			return tracking, argoapp.Applications{}, nil, explain(err)
		}
		// Only Applications that deploy to this cluster claim its
		// objects; the cluster Secrets may name it (unreadable: the
		// defaults).
		clusters, _ := argoapp.RegisteredClusters(ctx, o.Kube, o.ArgoCDNamespace)
		apps, err := argoapp.ListApplicationsTo(ctx, o.Clients.Dynamic, argoapp.HereInCluster(clusters, o.Cluster.Server))
		if err == nil {
			apps.AppSets, apps.AppSetsNote, err = argoapp.ListApplicationSets(ctx, o.Clients.Dynamic)
		}
		return tracking, apps, nil, explainIf(explain, err)
	}
	h := o.Hub
	hubExplain := h.Explain
	if hubExplain == nil {
		hubExplain = func(err error) error { return err }
	}
	tracking, err := argoapp.ReadTracking(ctx, h.Kube, o.ArgoCDNamespace, o.ArgoCDVersion)
	if err != nil {
		return tracking, argoapp.Applications{}, nil, hubExplain(err)
	}
	clusters, err := argoapp.RegisteredClusters(ctx, h.Kube, o.ArgoCDNamespace)
	if err != nil {
		return tracking, argoapp.Applications{}, nil, hubExplain(err)
	}
	m := &plan.Management{Server: h.Server, Context: h.Context}
	here := argoapp.HereIs(argoapp.Cluster{Server: o.Cluster.Server})
	if c, ok := argoapp.FindCluster(clusters, o.Cluster.Server); ok {
		m.Cluster, here = c.Name, argoapp.HereIs(c)
	}
	apps, err := argoapp.ListApplicationsTo(ctx, h.Dynamic, here)
	if err == nil {
		apps.AppSets, apps.AppSetsNote, err = argoapp.ListApplicationSets(ctx, h.Dynamic)
	}
	return tracking, apps, m, explainIf(hubExplain, err)
}

func explainIf(explain func(error) error, err error) error {
	if err == nil {
		return nil
	}
	return explain(err)
}
