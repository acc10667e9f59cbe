package reconcile

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/gitops"
)

// RunOptions are one scheduled run's inputs, plain values: RunOnce
// computes the plan and builds the Lease, the store, the writes, the pull
// requests, the namespace reads and finalize's runs from them.
type RunOptions struct {
	// Apply computes the plan (Scan) and writes each group (apply.Run
	// with the group's plan and branch); its Cluster's Kube holds the
	// Lease and the store, and its Checkout names the repository and the
	// base branch ("": the repository's default branch).
	Apply apply.RunOptions
	// PR is how pull requests are found and opened: the provider and its
	// API, the token and where it came from, labels, reviewers, draft;
	// Input and Text are each group's.
	PR apply.OpenPROptions
	// Templates is the directory overriding the pull request's templates.
	Templates string
	// Cluster, MaxOpenPRs and MaxObjects are Options'.
	Cluster                string
	MaxOpenPRs, MaxObjects int
	// GroupPRsBy is a namespace label key: one pull request per value of
	// it for the Applications whose destination namespace carries it
	// (TeamsByLabel); "" for none.
	GroupPRsBy string
	// Namespace holds the Lease (adopt-reconcile) and the store;
	// LockDuration is how long a run that died holds the Lease.
	Namespace    string
	LockDuration time.Duration
	// Build names adopt's build ("<version> <commit>") and Overrides are
	// apply's content flags: with Apply's rendering, what changes what a
	// group's branch holds besides its plan (Settings).
	Build     string
	Overrides apply.Overrides
	// JournalDir holds finalize's journals, one per merged group.
	// Finalize is how a merged group is finalized (finalize.Open): the
	// workload, Argo CD's API, the waits; its plan, selection and journal
	// are the group's.
	JournalDir string
	Finalize   finalize.Options
}

// InputError is a run refused for its input (the repository's URL, the
// provider, a base branch that cannot be told), as opposed to a failure
// of the cluster, Git or the provider.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// RunOnce is one scheduled run: the plan computed now, the store's
// records, the groups by label, then Run over them with the seams built
// from o. It prints nothing; the report is the caller's to print.
func RunOnce(ctx context.Context, o RunOptions) (*Report, error) {
	// Unattended, it never pushes a value to a store before a person
	// merged: finalize pushes, after the merge (docs/secrets.md).
	o.Apply.Render.PushSecrets = false
	p, err := planner.Plan(ctx, o.Apply.Scan)
	if err != nil {
		return nil, err
	}
	store := Store{Kube: o.Apply.Cluster.Kube, Namespace: o.Namespace}
	records, err := store.Records(ctx)
	if err != nil {
		return nil, err
	}
	teams, err := o.teams(ctx, p)
	if err != nil {
		return nil, err
	}
	repo, repoErr := gitops.ParseRepoURL(o.Apply.Checkout.URL)
	excluded := ""
	if cfg := o.Apply.Scan.Config; cfg != nil {
		excluded = cfg.ExcludesType("", "Secret")
	}
	return Run(ctx, Options{Plan: p, Cluster: o.Cluster, Repo: repo, MaxOpenPRs: o.MaxOpenPRs, MaxObjects: o.MaxObjects,
		Records: records, Settings: Settings(o.Build, o.Apply, o.Overrides), Teams: teams, SecretsExcluded: excluded}, o.seams(repoErr, store))
}

// Settings are what changes what a group's branch holds besides its plan,
// and adopt's build, in one string (Options.Settings): a change to any is
// something new.
func Settings(build string, ro apply.RunOptions, ov apply.Overrides) string {
	r := ro.Render
	return fmt.Sprintf("adopt %s; secrets %s; auto-sync %t; prune %t; csa-migration %s; argocd-version %s; %+v",
		build, r.Secrets, r.AutoSync, r.Prune, r.CSAMigration, ro.ArgoCDVersion, ov)
}

// seams are the run's outside parts: apply's write, the provider (resolved
// when first asked: a run with nothing to do asks it nothing; repoErr,
// the repository URL's error, is reported only then), the Lease, the
// store and finalize.
func (o RunOptions) seams(repoErr error, store Store) Seams {
	var ch gitops.ChosenProvider
	prs := &lazyPRs{Get: func(ctx context.Context) (gitops.PRStateReader, string, error) {
		if repoErr != nil {
			return nil, "", &InputError{fmt.Errorf("--repo: %v", repoErr)}
		}
		var err error
		pr := o.PR
		if ch, err = gitops.ChooseProvider(gitops.ProviderChoice{RepoURL: o.Apply.Checkout.URL, Provider: pr.Provider, APIURL: pr.APIURL, Token: pr.Token, TokenFrom: pr.TokenFrom, Getenv: pr.Getenv}); err != nil {
			return nil, "", &InputError{err}
		}
		prov, err := gitops.NewProvider(ch.Name, gitops.ProviderOptions{APIURL: ch.APIURL, Token: ch.Token, HTTPClient: pr.HTTPClient, Attempts: pr.Attempts, Backoff: pr.Backoff})
		if err != nil {
			return nil, "", err
		}
		base := o.Apply.Checkout.Base
		if base == "" {
			if base, err = defaultBase(ctx, o.Apply.Checkout); err != nil {
				return nil, "", err
			}
		}
		return prov.(gitops.PRStateReader), base, nil
	}}
	written := map[string]*apply.Result{}
	fetch, _, _ := apply.Live(o.Apply.Cluster.Dynamic, o.Apply.Cluster.Core)
	return Seams{
		PRs:   prs,
		Fetch: fetch,
		Lock: func(ctx context.Context) (func(), error) {
			host, _ := os.Hostname()
			lock := &Lock{Kube: o.Apply.Cluster.Kube, Namespace: o.Namespace, Name: "adopt-reconcile",
				Holder: host + "-" + rand.String(6), Duration: o.LockDuration, Now: time.Now}
			return lock.Hold(ctx) // renewed during the run, released on SIGTERM too
		},
		Write: func(ctx context.Context, sub *plan.Plan, branch string, p Push) (Written, error) {
			r := o.Apply
			r.Plan, r.Write.Branch, r.Write.Expect, r.Write.FromBase = sub, branch, p.Expect, p.FromBase
			r.Write.BeforePush = func(ctx context.Context, c *gitops.Result) error { return p.Record(ctx, c.Commit) }
			res, err := apply.Run(ctx, r)
			if err != nil {
				return Written{}, err
			}
			written[branch] = res
			return Written{Commit: res.Commit.Commit, Changed: res.Commit.Changed}, nil
		},
		Open: func(ctx context.Context, sub *plan.Plan, branch string, text func(title, body string) (string, string)) (*gitops.PullRequest, error) {
			po := o.PR
			po.Input, po.Text = written[branch].PRInput("", o.Templates), text
			po.Provider, po.APIURL, po.Token, po.TokenFrom = ch.Name, ch.APIURL, ch.Token, ch.TokenFrom
			r, err := apply.OpenPR(ctx, po)
			if err != nil {
				return nil, err
			}
			return r.PR, nil
		},
		Save: store.Save,
		Finalize: func(ctx context.Context, branch string) (FinalizeResult, error) {
			return FinalizeMerged(ctx, store, branch, o.JournalDir, o.finalize)
		},
		Load: func(ctx context.Context, branch string) (*plan.Plan, error) {
			st, err := store.Load(ctx, branch)
			if err != nil || st == nil {
				return nil, err
			}
			return st.Plan, nil
		},
		Close: prs.ClosePR,
	}
}

// teams groups p's Applications by o.GroupPRsBy, from the labels of their
// destination namespaces (nil without it).
func (o RunOptions) teams(ctx context.Context, p *plan.Plan) (map[string]string, error) {
	if o.GroupPRsBy == "" {
		return nil, nil
	}
	labels := map[string]map[string]string{}
	for _, app := range p.Applications {
		if app.Namespace == "" || labels[app.Namespace] != nil {
			continue
		}
		ns, err := o.Apply.Cluster.Kube.CoreV1().Namespaces().Get(ctx, app.Namespace, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("--group-prs-by %s: read namespace %s: %w (grant get on namespaces, see deploy/)", o.GroupPRsBy, app.Namespace, err)
		}
		labels[app.Namespace] = ns.Labels
	}
	return TeamsByLabel(p, o.GroupPRsBy, labels), nil
}

// defaultBase is the repository's default branch, listed (nothing is
// fetched).
func defaultBase(ctx context.Context, c apply.CheckoutOptions) (string, error) {
	b, err := gitops.RemoteDefaultBranch(ctx, gitops.CloneOptions{URL: c.URL, Auth: c.Auth})
	if err == nil && b == "" {
		err = &InputError{fmt.Errorf("cannot tell the default branch of %s: pass --base", gitops.Redact(c.URL))}
	}
	return b, err
}

// finalize runs finalize's guarded cleanup of p, as `adopt finalize
// --plan` would, with its journal at journal (FinalizeMerged judges the
// report).
func (o RunOptions) finalize(ctx context.Context, p *plan.Plan, journal string) (*finalize.Report, error) {
	sel, err := finalize.Select(p, nil)
	if err != nil {
		return nil, err
	}
	fo := o.Finalize
	fo.Plan, fo.Selection, fo.JournalFile = p, sel, journal
	s, closeConn, err := finalize.Open(ctx, fo)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	return s.Run(ctx)
}
