package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Options are one status run's inputs, flags already resolved.
type Options struct {
	// Inputs are the plans to report on (at least one; the first's Argo CD
	// namespace and version are read).
	Inputs []Input
	// Clients and Kube are the cluster Argo CD runs on (argocd-cm, the
	// Applications), and the cluster of the inputs without clients of
	// their own.
	Clients discover.Clients
	Kube    kubernetes.Interface
	// ArgoCDPerCluster is set when each input's cluster runs its own Argo
	// CD (a fleet plan made without a management cluster): Applications
	// are read there.
	ArgoCDPerCluster bool
	// Repo is the GitOps repo apply wrote to ("" for none), Auth its
	// credentials and Base the branch adoptions merge into.
	Repo string
	Auth gitops.Auth
	Base string
	// Provider and APIURL choose the pull-request host as apply does.
	Provider, APIURL string
	// Coverage counts user objects and tracked ones, as plan counts them;
	// Config is adopt.yaml (its exclusions).
	Coverage bool
	Config   *config.Config
	// Record is the directory of past snapshots ("" for none): the report
	// draws its history from it, and this run's snapshot is added.
	Record string
	Now    time.Time
	// Explain turns a cluster error into one a user can act on (nil: as it
	// is).
	Explain func(error) error
}

// InputError is a status run refused for its input (a snapshot directory
// that cannot be read, provider flags that do not make a client), as
// opposed to a cluster or Git failure.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Run reads the plans' objects, Applications, the repo and the pull
// requests, places every object in its stage, counts coverage, and records the
// snapshot when asked. It prints nothing: the caller prints the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	explain := o.Explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	first := o.Inputs[0].Plan
	tracking, err := argoapp.ReadTracking(ctx, o.Kube, first.ArgoCDNamespace(), first.Tracking.Version)
	if err != nil {
		return nil, explain(err)
	}
	src := Sources{Metadata: o.Clients.Metadata, Dynamic: o.Clients.Dynamic, Apps: o.Clients.Dynamic, Kube: o.Kube, Tracking: tracking}
	if o.ArgoCDPerCluster {
		src.Apps = nil
	}
	if o.Repo != "" {
		repo, err := gitops.Clone(ctx, gitops.CloneOptions{URL: o.Repo, Auth: o.Auth, History: true})
		if err != nil {
			return nil, err
		}
		defer repo.Close()
		src.Repo, src.RepoName, src.Base = repo, repo.URL(), o.Base
		if err := o.provider(&src, repo); err != nil {
			return nil, err
		}
	}
	refs, facts, notes, err := Collect(ctx, src, o.Inputs)
	if err != nil {
		return nil, err
	}
	var cov *Coverage
	if o.Coverage {
		if cov, err = o.coverage(ctx, tracking, explain); err != nil {
			return nil, err
		}
	}
	r := Assemble(o.Now, refs, facts, cov, notes)
	if o.Record != "" {
		if r.History, err = History(o.Record); err != nil {
			return nil, &InputError{err}
		}
		if _, err := Record(o.Record, r.Snapshot()); err != nil {
			return nil, err
		}
		r.History = append(r.History, r.Snapshot())
	}
	return r, nil
}

// provider sets up the pull-request lookup apply's provider would answer,
// or says in src.PRNote why there is none.
func (o Options) provider(src *Sources, repo *gitops.Repo) error {
	host := repo.URL()
	if repo.Local() {
		// A checkout's pull requests are on the host of the URL the plan
		// records (its remote), as apply wrote it into the Applications.
		host = apply.RepoURL(o.Inputs[0].Plan)
		if l, err := gitops.ParseLocation(host); err != nil || !l.Remote() {
			src.PRNote = "--repo is a local path and the plan records no repo URL on a host: no pull-request host to ask"
			return nil
		}
	}
	ch, err := gitops.ChooseProvider(gitops.ProviderChoice{RepoURL: host, Provider: o.Provider, APIURL: o.APIURL, Token: o.Auth.Token})
	switch {
	case errors.Is(err, gitops.ErrPRProvider), errors.Is(err, gitops.ErrNoToken):
		src.PRNote = err.Error()
		return nil
	case err != nil:
		// A plain Git server (no owner/name path) hosts no pull requests.
		src.PRNote = fmt.Sprintf("%s is not an owner/name repository of a pull-request host", host)
		return nil
	}
	p, err := gitops.NewProvider(ch.Name, gitops.ProviderOptions{APIURL: ch.APIURL, Token: ch.Token})
	if err != nil {
		return &InputError{err}
	}
	sr, ok := p.(gitops.PRStateReader)
	if !ok {
		src.PRNote = ch.Name + " cannot report pull-request states"
		return nil
	}
	src.PRs, src.PRRepo = sr, ch.Repo
	return nil
}

// coverage counts each cluster of the inputs (one for plans of their own,
// each cluster of a fleet plan in context order), with the Applications of
// the Argo CD that deploys there, and adds them up.
func (o Options) coverage(ctx context.Context, tracking argoapp.Tracking, explain func(error) error) (*Coverage, error) {
	var clusters []string
	byCluster := map[string][]Input{}
	for _, i := range o.Inputs {
		if _, ok := byCluster[i.Cluster]; !ok {
			clusters = append(clusters, i.Cluster)
		}
		byCluster[i.Cluster] = append(byCluster[i.Cluster], i)
	}
	var apps argoapp.Applications
	var err error
	if !o.ArgoCDPerCluster {
		if apps, err = argoapp.ListApplications(ctx, o.Clients.Dynamic); err != nil {
			return nil, explain(err)
		}
	}
	var total *Coverage
	for _, c := range clusters {
		in := byCluster[c]
		clients, why := o.Clients, explain
		if in[0].Clients.Dynamic != nil {
			clients = in[0].Clients
		}
		if in[0].Explain != nil {
			why = in[0].Explain
		}
		fail := func(err error) error {
			if err = why(err); c != "" {
				err = fmt.Errorf("cluster %s: %w", c, err)
			}
			return err
		}
		here := apps
		if o.ArgoCDPerCluster {
			if here, err = argoapp.ListApplications(ctx, clients.Dynamic); err != nil {
				return nil, fail(err)
			}
		}
		cov, err := Count(ctx, CoverageOptions{Clients: clients, Namespaces: namespaces(in), Config: o.Config, Tracking: tracking, Apps: here})
		if err != nil {
			return nil, fail(err)
		}
		if total == nil {
			total = cov
			for n := range cov.Namespaces {
				cov.Namespaces[n].Cluster = c
			}
			continue
		}
		for _, n := range cov.Namespaces {
			n.Cluster = c
			total.Namespaces = append(total.Namespaces, n)
		}
		total.Tracked += cov.Tracked
		total.Objects += cov.Objects
		total.Percent = Percent(total.Tracked, total.Objects)
		if total.Scope != cov.Scope {
			total.Scope = "per cluster"
		}
	}
	return total, nil
}

// namespaces is the coverage scope of the plans: every namespace (nil)
// when any plan scanned all of them, else the plans' namespaces.
func namespaces(in []Input) []string {
	seen := map[string]bool{}
	var out []string
	for _, i := range in {
		scope := i.Plan.Cluster.Namespaces()
		if len(scope) == 0 {
			return nil
		}
		for _, ns := range scope {
			if !seen[ns] {
				seen[ns] = true
				out = append(out, ns)
			}
		}
	}
	return out
}
