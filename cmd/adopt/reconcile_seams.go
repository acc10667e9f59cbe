package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/gitops"
)

// seams wires reconcile's engine to apply, the provider, the Lease, the
// store and finalize. The provider is resolved when first asked (a run
// with nothing to do asks it nothing); repoErr is --repo's owner/name
// error, reported only then.
func (o *ReconcileOptions) seams(ro apply.RunOptions, repoErr error, store reconcile.Store) reconcile.Seams {
	ao := o.apply
	var ch gitops.ChosenProvider
	prs := &reconcile.LazyPRs{Get: func(ctx context.Context) (gitops.PRStateReader, string, error) {
		if repoErr != nil {
			return nil, "", usageErrorf("--repo: %v", repoErr)
		}
		var err error
		if ch, err = gitops.ChooseProvider(gitops.ProviderChoice{RepoURL: ao.Repo, Provider: ao.pr.Provider, APIURL: ao.pr.APIURL, Token: ao.auth.Token, TokenFrom: ao.tokenFrom, Getenv: ao.pr.getenv}); err != nil {
			return nil, "", usageErrorf("%v", err)
		}
		prov, err := gitops.NewProvider(ch.Name, gitops.ProviderOptions{APIURL: ch.APIURL, Token: ch.Token, HTTPClient: ao.pr.httpClient, Attempts: ao.pr.attempts, Backoff: ao.pr.backoff})
		if err != nil {
			return nil, "", err
		}
		base := ao.Base
		if base == "" {
			if base, err = o.defaultBase(ctx, ro); err != nil {
				return nil, "", err
			}
		}
		return prov.(gitops.PRStateReader), base, nil
	}}
	written := map[string]*apply.Result{}
	fetch, _, _ := apply.Live(ao.cluster.clients.Dynamic, ao.cluster.clients.Core)
	return reconcile.Seams{
		PRs:   prs,
		Fetch: fetch,
		Lock: func(ctx context.Context) (func(), error) {
			host, _ := os.Hostname()
			lock := &reconcile.Lock{Kube: ao.cluster.kube, Namespace: o.LockNamespace, Name: "adopt-reconcile",
				Holder: host + "-" + rand.String(6), Duration: o.LockDuration, Now: time.Now}
			return lock.Hold(ctx) // renewed during the run, released on SIGTERM too
		},
		Write: func(ctx context.Context, sub *plan.Plan, branch string, p reconcile.Push) (reconcile.Written, error) {
			r := ro
			r.Plan, r.Write.Branch, r.Write.Expect, r.Write.FromBase = sub, branch, p.Expect, p.FromBase
			r.Write.BeforePush = func(ctx context.Context, c *gitops.Result) error { return p.Record(ctx, c.Commit) }
			res, err := apply.Run(ctx, r)
			if err != nil {
				return reconcile.Written{}, err
			}
			written[branch] = res
			return reconcile.Written{Commit: res.Commit.Commit, Changed: res.Commit.Changed}, nil
		},
		Open: func(ctx context.Context, sub *plan.Plan, branch string, text func(title, body string) (string, string)) (*gitops.PullRequest, error) {
			res := written[branch]
			r, err := apply.OpenPR(ctx, apply.OpenPROptions{Input: res.PRInput("", ao.Templates), Provider: ch.Name, APIURL: ch.APIURL,
				Labels: ao.pr.Labels, Reviewers: ao.pr.Reviewers, Draft: ao.pr.Draft, Text: text,
				Token: ch.Token, TokenFrom: ch.TokenFrom, HTTPClient: ao.pr.httpClient, Attempts: ao.pr.attempts, Backoff: ao.pr.backoff})
			if err != nil {
				return nil, err
			}
			return r.PR, nil
		},
		Save: store.Save,
		Finalize: func(ctx context.Context, branch string) (reconcile.FinalizeResult, error) {
			return reconcile.FinalizeMerged(ctx, store, branch, o.JournalDir, o.finalize)
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

// teams groups the plan's Applications by --group-prs-by, from the
// labels of their destination namespaces (nil without the flag).
func (o *ReconcileOptions) teams(ctx context.Context, p *plan.Plan) (map[string]string, error) {
	if o.GroupPRsBy == "" {
		return nil, nil
	}
	labels := map[string]map[string]string{}
	for _, app := range p.Applications {
		if app.Namespace == "" || labels[app.Namespace] != nil {
			continue
		}
		ns, err := o.apply.cluster.kube.CoreV1().Namespaces().Get(ctx, app.Namespace, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("--group-prs-by %s: read namespace %s: %w (grant get on namespaces, see deploy/)", o.GroupPRsBy, app.Namespace, err)
		}
		labels[app.Namespace] = ns.Labels
	}
	return reconcile.TeamsByLabel(p, o.GroupPRsBy, labels), nil
}

// settings are apply's options that change what a group's branch holds,
// and adopt's build: a change to any of them is something new.
func (o *ReconcileOptions) settings() string {
	ao := o.apply
	return fmt.Sprintf("adopt %s %s; secrets %s; auto-sync %t; prune %t; csa-migration %s; argocd-version %s; %+v",
		version, commit, ao.Secrets, ao.AutoSync, ao.Prune, ao.CSAMigration, ao.ArgoCDVersion, ao.Overrides)
}

// defaultBase is the repository's default branch, listed (nothing is
// fetched).
func (o *ReconcileOptions) defaultBase(ctx context.Context, ro apply.RunOptions) (string, error) {
	b, err := gitops.RemoteDefaultBranch(ctx, gitops.CloneOptions{URL: ro.Checkout.URL, Auth: ro.Checkout.Auth})
	if err == nil && b == "" {
		err = usageErrorf("cannot tell the default branch of %s: pass --base", gitops.Redact(ro.Checkout.URL))
	}
	return b, err
}

// finalize runs finalize's guarded cleanup of p, as `adopt finalize
// --plan` would, with its journal at journal, waiting at most
// --finalize-wait for its Applications (reconcile.FinalizeMerged judges
// the report).
func (o *ReconcileOptions) finalize(ctx context.Context, p *plan.Plan, journal string) (*finalize.Report, error) {
	sel, err := finalize.Select(p, nil)
	if err != nil {
		return nil, err
	}
	fo := &FinalizeOptions{ConfigFlags: o.apply.ConfigFlags, IOStreams: genericiooptions.IOStreams{In: o.apply.In, Out: io.Discard, ErrOut: io.Discard},
		plan: p, sel: sel, cluster: o.apply.cluster, JournalFile: journal,
		ArgoCDNamespace: p.ArgoCDNamespace(), Timeout: o.FinalizeWait, PollInterval: o.PollInterval, Settle: o.Settle,
		Parallel: finalize.DefaultParallel, Sync: o.Sync, Quiet: true, Output: "json", ArgoCDVersion: o.apply.ArgoCDVersion,
		API: o.API, APISyncOnly: true}
	s, closeConn, err := fo.session(ctx)
	if err != nil {
		return nil, err
	}
	defer closeConn()
	return s.Run(ctx)
}
