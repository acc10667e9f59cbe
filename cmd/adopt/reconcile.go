package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/adopt/reconcile"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// ReconcileOptions are the inputs of `adopt reconcile`: apply's (the plan
// computed now, the repository, the pull requests) and its own.
type ReconcileOptions struct {
	apply       *ApplyOptions
	ClusterName string
	MaxOpenPRs  int
	MaxObjects  int
	MetricsFile string
	// MetricsPushgateway is a Pushgateway's base URL the run's metrics
	// are pushed to.
	MetricsPushgateway string
	Output             string
	LockNamespace      string
	GroupPRsBy         string
	LockDuration       time.Duration
	// Finalize's: where journals go, how long to wait for a merged
	// group's Applications, the settle window, and whether to start the
	// first sync.
	JournalDir   string
	FinalizeWait time.Duration
	PollInterval time.Duration
	Settle       time.Duration
	Sync         bool
	// API, with --sync, is argocd-server, through which syncs are started
	// (the Applications are still read through the Kubernetes API).
	API argoAPIFlags
}

// reconcileApplyFlags are the flags of apply that reconcile takes as they
// are; the others (--plan, --branch, --dry-run, ...) make no sense for a
// scheduled run.
var reconcileApplyFlags = []string{"config", "all-namespaces", "repo", "base", "author", "templates", "argocd-namespace", "repo-url",
	"apps-dir", "secrets", "auto-sync", "prune", "argocd-version", "csa-migration", "provider", "api-url", "pr-label", "pr-reviewer", "draft",
	"git-token", "git-user", "ssh-key", "known-hosts", "insecure-skip-host-key-check", "git-timeout", "quiet"}

func newReconcileCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	o := &ReconcileOptions{Output: "table", LockDuration: 30 * time.Minute, MaxOpenPRs: 10, JournalDir: ".", FinalizeWait: 30 * time.Second,
		PollInterval: 5 * time.Second, Settle: finalize.DefaultSettle}
	applyCmd, ao := applyCommand(flags, streams, getenv)
	o.apply = ao
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "One pass of continuous adoption: keep one pull request per proposed Application",
		Long: `Run once, as a CronJob or a CI schedule calls it: plan the scope as
adopt plan would, then keep one pull request per proposed Application on the
branch adopt/<cluster>/<application> (with --group-prs-by LABEL, one per
value of that namespace label, on adopt/<cluster>/<label>-<value>).

- A group with no pull request gets one (up to --max-open-prs open at once).
- A group whose pull request is open gets a new commit when its content
  changed; with nothing new, nothing is pushed and nothing is edited.
- A branch someone else pushed to is left alone and named in the report.
- A pull request closed without merging is a decline: the group is not
  proposed again until one of its objects changes (content digest).
  Reopen the pull request to undo the decline.
- An open pull request whose objects are all gone or tracked by Argo CD now
  is closed with a comment (closed-obsolete), and no longer counts toward
  --max-open-prs; it is no decline. Scope alone never closes one.
- A merged pull request is reported; its Applications take over.

Pull requests are found through the provider's API (GitHub, GitLab, Gitea),
never through local state, so two runners or a lost pod change nothing. A
Lease (--lock-namespace) stops two runs from overlapping.

` + exitCodesHelp,
		Example: `  # One pass over the cluster, pull requests on Gitea
  ADOPT_GIT_TOKEN=... adopt reconcile -A --repo https://git.example.com/org/gitops.git --provider gitea

  # One pull request per team (namespaces labelled team=...)
  adopt reconcile -A --repo https://git.example.com/org/gitops.git --group-prs-by team

  # At most three open pull requests, Prometheus metrics for the textfile collector
  adopt reconcile -n team-a,team-b --repo git@git.example.com:org/gitops.git --max-open-prs 3 --metrics-file /metrics/adopt.prom`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	for _, name := range reconcileApplyFlags {
		if fl := applyCmd.Flags().Lookup(name); fl != nil {
			f.AddFlag(fl)
		}
	}
	f.StringVar(&o.ClusterName, "cluster-name", "", "the cluster's name in branch names adopt/<cluster>/<app> (default: the kube context's name)")
	f.IntVar(&o.MaxOpenPRs, "max-open-prs", o.MaxOpenPRs, "at most this many of reconcile's pull requests open at once (0: no cap); the other groups wait in the report")
	f.IntVar(&o.MaxObjects, "max-objects-per-pr", 0, "a group with more objects is not proposed, and the report says so (0: no cap)")
	f.StringVar(&o.MetricsFile, "metrics-file", "", "write the run's metrics in Prometheus text format to this file, failed runs included")
	f.StringVar(&o.MetricsPushgateway, "metrics-pushgateway", "", "push the run's metrics, failed runs included, to this Prometheus Pushgateway (its base URL), in the group job=adopt-reconcile, cluster=<--cluster-name>")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: table|json|yaml")
	f.StringVar(&o.GroupPRsBy, "group-prs-by", "", "one pull request per value of this namespace label (e.g. team) for the Applications whose destination namespace carries it; the others get one each")
	f.StringVar(&o.LockNamespace, "lock-namespace", "", "namespace of the Lease adopt-reconcile that stops two runs from overlapping (default: the Argo CD namespace)")
	f.DurationVar(&o.LockDuration, "lock-duration", o.LockDuration, "how long a run that died holds the Lease")
	f.StringVar(&o.JournalDir, "journal-dir", o.JournalDir, "directory of finalize's journals, one per merged group (keep it on a volume: finalize --undo reads it)")
	f.DurationVar(&o.FinalizeWait, "finalize-wait", o.FinalizeWait, "how long to wait for a merged group's Applications to be Synced and Healthy; the next run checks again")
	f.DurationVar(&o.PollInterval, "poll-interval", o.PollInterval, "how often to read the Applications while waiting")
	f.DurationVar(&o.Settle, "settle", o.Settle, "after cleanup, how long each Application must stay Synced (0: do not watch)")
	f.BoolVar(&o.Sync, "sync", false, "start a merged group's first sync when Argo CD has not (default: wait for Argo CD)")
	o.API.AddFlags(f)
	f.Lookup("argocd-server").Usage = "with --sync: start syncs through argocd-server at this address, as an Argo CD account that may only get and sync Applications, instead of patching them through the Kubernetes API (Applications are still read through the Kubernetes API)"
	return cmd
}

// Complete fills apply's options (adopt.yaml, credentials, author,
// connection) and the cluster's name.
func (o *ReconcileOptions) Complete(cmd *cobra.Command) error {
	o.apply.pr.OpenPR = true
	if err := o.apply.Complete(cmd); err != nil {
		return err
	}
	o.API.Complete(o.apply.getenv)
	if o.ClusterName == "" {
		o.ClusterName = o.apply.cluster.Context
	}
	o.ClusterName = reconcile.ClusterName(o.ClusterName)
	if o.LockNamespace == "" {
		if o.LockNamespace = o.apply.Overrides.ArgoCDNamespace; o.LockNamespace == "" {
			o.LockNamespace = argoapp.DefaultNamespace
		}
	}
	return nil
}

// Validate rejects bad input with one sentence.
func (o *ReconcileOptions) Validate() error {
	switch {
	case o.MaxOpenPRs < 0 || o.MaxObjects < 0:
		return usageErrorf("--max-open-prs and --max-objects-per-pr must be 0 (no cap) or more")
	case !slices.Contains(printer.ReconcileFormats, o.Output):
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.ReconcileFormats, ", "))
	case o.FinalizeWait < 0 || o.PollInterval <= 0 || o.Settle < 0:
		return usageErrorf("--finalize-wait and --settle must be 0 or more, and --poll-interval more than 0")
	case o.GroupPRsBy != "" && len(validation.IsQualifiedName(o.GroupPRsBy)) > 0:
		return usageErrorf("--group-prs-by %q is not a label key: %s", o.GroupPRsBy, strings.Join(validation.IsQualifiedName(o.GroupPRsBy), "; "))
	case o.API.Server != "" && !o.Sync:
		return usageErrorf("--argocd-server is used only to start syncs: add --sync, or drop it")
	case o.LockDuration < time.Minute:
		return usageErrorf("--lock-duration %s is shorter than a minute: a slow run would lose its lock", o.LockDuration)
	}
	if err := o.API.Validate(true); err != nil {
		return err
	}
	if l, err := gitops.ParseLocation(o.apply.Repo); err != nil || !l.Remote() {
		return usageErrorf("--repo %q: reconcile opens pull requests, so the repo must be a remote URL (https://host/owner/name.git or git@host:owner/name.git)", gitops.Redact(o.apply.Repo))
	}
	return o.apply.Validate()
}

// Run plans, reconciles every group (taking the lock only to write) and
// reports. SIGTERM (a pod's eviction) and Ctrl-C cancel the run, which
// then releases its lock. Every run writes its metrics, a failed one
// included. A run that finds the lock held does nothing and exits 0
// (ExitOK), saying so: it is not a failed Job.
func (o *ReconcileOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	rep, err := o.run(ctx)
	m := reconcile.RunMetrics{Cluster: o.ClusterName, Report: rep, Took: time.Since(began), Ended: time.Now(), Err: err}
	if merr := reconcile.Publish(ctx, o.MetricsFile, o.MetricsPushgateway, m); merr != nil && err == nil {
		err = merr
	}
	if errors.Is(err, reconcile.ErrLocked) {
		fmt.Fprintf(o.apply.ErrOut, "nothing done: %v\n", err)
		return nil
	}
	return err
}

// run is one run (reconcile.RunOnce), printed.
func (o *ReconcileOptions) run(ctx context.Context) (*reconcile.Report, error) {
	ao := o.apply
	ro := ao.runOptions()
	rep, err := reconcile.RunOnce(ctx, reconcile.RunOptions{Apply: ro, PR: ao.pr.options(ao.auth.Token, ao.tokenFrom), Templates: ao.Templates,
		Cluster: o.ClusterName, MaxOpenPRs: o.MaxOpenPRs, MaxObjects: o.MaxObjects, GroupPRsBy: o.GroupPRsBy,
		Namespace: o.LockNamespace, LockDuration: o.LockDuration, Build: version + " " + commit, Overrides: ao.Overrides, JournalDir: o.JournalDir,
		Finalize: finalize.Options{Workload: ao.cluster, Version: ao.ArgoCDVersion, API: o.API.Options(), SyncOnly: true, Fallback: o.API.Fallback(),
			Sync: o.Sync, Timeout: o.FinalizeWait, PollInterval: o.PollInterval, Settle: o.Settle, Parallel: finalize.DefaultParallel}})
	if ie := (*reconcile.InputError)(nil); errors.As(err, &ie) {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	if err != nil {
		return nil, err
	}
	if err := printer.Reconcile(o.apply.Out, rep, o.Output); err != nil {
		return rep, err
	}
	if n := len(rep.NotScanned); n > 0 {
		return rep, &exitError{code: ExitPartial, err: fmt.Errorf("%d resource type(s) could not be read (first: %s), so the untracked count is only a lower bound: grant get, list and watch on them (deploy/helm/adopt), then run again", n, rep.NotScanned[0])}
	}
	if n := rep.Count(reconcile.Failed); n > 0 {
		return rep, &exitError{code: ExitPartial, err: fmt.Errorf("%d of %d groups failed; the report says why, and the next run tries again", n, len(rep.Groups))}
	}
	return rep, nil
}
