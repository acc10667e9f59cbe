package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/internal/atomicfile"
	"github.com/adopt-dev/adopt/templates"
)

// StatusOptions are the inputs of `adopt status`.
type StatusOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PlanFiles   []string
	// Reconcile is adopt reconcile's namespace: its groups are the plans.
	Reconcile  string
	JournalDir string
	Repo       string
	Base       string
	Git        gitops.AuthFlags
	Provider   string
	APIURL     string
	ConfigFile string
	Output     string
	HTML       string
	Record     string
	FailOn     []string
	NoCoverage bool
	Templates  string
	Hub        hubFlags

	genericiooptions.IOStreams
	getenv  func(string) string // adopt's environment (invocation.getenv)
	cluster *cluster
	// hub is the management cluster Argo CD runs on (nil: the cluster
	// itself); fleet is --plan DIR's fleet plan, clusters its clusters by
	// context.
	hub      *cluster
	fleet    *fleet.Fleet
	clusters map[string]*cluster
	inputs   []status.Input
	cfg      *config.Config
	auth     gitops.Auth
	tpl      *templates.Set
	now      func() time.Time
}

// statusFailOn are the --fail-on values.
var statusFailOn = []string{"stuck", "regressed"}

func newStatusCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	o := &StatusOptions{ConfigFlags: flags, IOStreams: streams, getenv: getenv, Output: "table", now: time.Now}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Where each planned object stands: planned, in review, merged, Application present, synced, finalized, regressed",
		Long: `Read the live state of every object of the plans and say, per object, how far
it got: planned (in no branch), in review (branch pushed; the pull request's
state from the provider apply uses), merged (the adoption is on the base
branch), Application present, synced and healthy (or why not), finalized
(annotation gone; the journal's time), or regressed (finalized, then the
annotation came back or the tracking went). Also coverage: user objects Argo
CD tracks out of all of them, per namespace, counted the way plan counts.

--plan DIR (a fleet plan from 'adopt plan --contexts' or --argocd-clusters)
follows every cluster of the fleet as Argo CD runs it: each cluster's objects
there, the Applications its ApplicationSets generate (<cluster>-<app>) on the
management cluster (--argocd-context), the fleet's branch and pull request;
per cluster and in total.

It writes nothing, except what you ask for: --html FILE (one self-contained
page, no network) and --record DIR (one small JSON snapshot per run; the
report's burndown and coverage charts are drawn from them).

` + exitCodesHelp,
		Example: `  # Where the sprint stands, from the plans, the cluster and the GitOps repo
  adopt status --plan plan.yaml --repo https://git.example.com/org/gitops.git

  # The report for the team, with its history committed next to the plans
  adopt status --plan a.yaml --plan b.yaml --repo ../gitops --record status/ --html status.html

  # In CI: fail (exit 3) when something is stuck or regressed
  adopt status --plan plan.yaml --fail-on stuck,regressed -o markdown

  # A fleet plan, per cluster and in total, Argo CD on the management cluster
  adopt status --plan plans/sprint-12 --argocd-context mgmt --repo $REPO --html status.html`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	o.Git.AddFlags(f)
	o.Hub.AddFlags(f)
	f.StringArrayVar(&o.PlanFiles, "plan", nil, "a plan file written by 'adopt plan --out' (repeatable; required), or one fleet plan directory (or its fleet.yaml) written by 'adopt plan --out-dir'")
	f.StringVar(&o.Reconcile, "reconcile", "", "instead of --plan: every group adopt reconcile keeps in this namespace (its --lock-namespace), each on its own branch, declines included")
	f.StringVar(&o.JournalDir, "journal-dir", ".", "with --reconcile: reconcile's --journal-dir, where finalize's journals are")
	f.StringVar(&o.Repo, "repo", "", "the GitOps repo apply wrote to (URL or local path); without it planned, in review and merged are not told apart")
	f.StringVar(&o.Base, "base", "", "the branch adoptions merge into (default: the repo's default branch)")
	f.StringVar(&o.Provider, "provider", "", "pull-request provider: "+strings.Join(gitops.ProviderNames(), "|")+" (default: inferred from the repo URL's host)")
	f.StringVar(&o.APIURL, "api-url", "", "provider API base URL (default: derived from the repo URL)")
	f.StringVar(&o.ConfigFile, "config", "", "adopt.yaml whose exclusions coverage honours, as plan does (default: ./adopt.yaml if present)")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: "+strings.Join(printer.StatusFormats, "|"))
	f.StringVar(&o.HTML, "html", "", "also write the self-contained HTML report to this file")
	f.StringVar(&o.Record, "record", "", "append this run's snapshot to this directory and draw the report's history from it")
	f.StringSliceVar(&o.FailOn, "fail-on", nil, "exit with code 3 when an object is: "+strings.Join(statusFailOn, "|")+" (comma-separated)")
	f.BoolVar(&o.NoCoverage, "no-coverage", false, "do not list the cluster to count coverage")
	f.StringVar(&o.Templates, "templates", "", "directory overriding "+templates.StatusReport)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.StatusFormats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions(statusFailOn, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the plans, adopt.yaml, the credentials and the cluster.
func (o *StatusOptions) Complete(cmd *cobra.Command) error {
	if err := noNamespace(cmd, "status"); err != nil {
		return err
	}
	switch {
	case len(o.PlanFiles) == 0 && o.Reconcile == "":
		return usageErrorf("--plan is required: the plan file(s) written by 'adopt plan --out' (or --reconcile NAMESPACE for adopt reconcile's groups)")
	case len(o.PlanFiles) > 0 && o.Reconcile != "":
		return usageErrorf("--plan and --reconcile cannot be used together: --reconcile reads the groups' plans from the cluster")
	}
	var err error
	if o.hub, err = o.Hub.connect(o.ConfigFlags); err != nil {
		return err
	}
	for _, file := range o.PlanFiles {
		if fleet.IsIndex(file) {
			if len(o.PlanFiles) > 1 {
				return usageErrorf("--plan %s is a fleet plan: give it alone (one fleet plan covers all its clusters)", file)
			}
			if err := o.completeFleet(cmd.Context(), file); err != nil {
				return err
			}
			break
		}
		p, err := plan.ReadFile(file)
		if err != nil {
			return usageErrorf("--plan: %v", err)
		}
		o.inputs = append(o.inputs, status.Input{Plan: p, File: file, Journal: finalize.JournalPath(file)})
	}
	cfg, err := config.Load(o.ConfigFile)
	if err != nil {
		return usageErrorf("%v", err)
	}
	o.cfg = cfg
	o.auth, _ = o.Git.Complete(o.getenv)
	o.Git.Warn(o.ErrOut, o.Repo, false)
	if o.tpl, err = templates.New(o.Templates); err != nil {
		return usageErrorf("%v", err)
	}
	if o.fleet != nil {
		return nil
	}
	if o.cluster, err = connect(o.ConfigFlags); err != nil {
		return err
	}
	if o.Reconcile != "" {
		return o.completeReconcile(cmd.Context())
	}
	return nil
}

// Validate rejects bad flags and plans made for another cluster.
func (o *StatusOptions) Validate() error {
	if !slices.Contains(printer.StatusFormats, o.Output) {
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.StatusFormats, ", "))
	}
	for _, f := range o.FailOn {
		if !slices.Contains(statusFailOn, f) {
			return usageErrorf("unknown --fail-on %q: use stuck, regressed or both (comma-separated)", f)
		}
	}
	if o.Repo != "" {
		if _, err := gitops.ParseLocation(o.Repo); err != nil {
			return usageErrorf("--repo: %v", err)
		}
	}
	if (o.Provider != "" || o.APIURL != "") && o.Repo == "" {
		return usageErrorf("--provider and --api-url look up pull requests in --repo: add --repo")
	}
	if o.Provider != "" && !slices.Contains(gitops.ProviderNames(), o.Provider) {
		return usageErrorf("--provider %q is not supported: use one of %s", o.Provider, strings.Join(gitops.ProviderNames(), ", "))
	}
	for _, i := range o.inputs {
		c := o.cluster
		if i.Cluster != "" {
			c = o.clusters[i.Cluster]
		}
		if err := plan.CheckCluster(i.Plan, c.Config.Host, c.Context); err != nil {
			return usageErrorf("--plan %s: %v", i.File, err)
		}
		if err := checkHub(i.Plan, o.hub); err != nil {
			return err
		}
		if m := i.Plan.ArgoCD.Management; m != nil && o.hub == nil {
			return usageErrorf("--plan %s was made with Argo CD on the management cluster %s (context %q), where its Applications are: give --argocd-context (and --argocd-kubeconfig when it is in another file)", i.File, m.Server, m.Context)
		}
	}
	return nil
}

// argoCD is the cluster Argo CD runs on: the management cluster, the
// cluster worked on, or (a fleet plan without a management cluster) each
// of the fleet's clusters, the first of them read for argocd-cm.
func (o *StatusOptions) argoCD() (c *cluster, perCluster bool) {
	switch {
	case o.hub != nil:
		return o.hub, false
	case o.fleet != nil:
		return o.clusters[o.inputs[0].Cluster], true
	}
	return o.cluster, false
}

// Run calls the status engine, prints its report, and writes the HTML
// file when asked.
func (o *StatusOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	for n := range o.inputs {
		if o.inputs[n].Cluster == "" { // a plan of its own: the cluster worked on
			o.inputs[n].Clients, o.inputs[n].Kube, o.inputs[n].Explain = o.cluster.Clients, o.cluster.Kube, o.cluster.Explain
		}
	}
	argo, perCluster := o.argoCD()
	r, err := status.Run(ctx, status.Options{
		Inputs: o.inputs, Clients: argo.Clients, Kube: argo.Kube, ArgoCDPerCluster: perCluster,
		Repo: o.Repo, Auth: o.auth, Base: o.Base, Provider: o.Provider, APIURL: o.APIURL,
		Coverage: !o.NoCoverage, Config: o.cfg, Record: o.Record, Now: o.now(), Explain: argo.Explain,
	})
	var ie *status.InputError
	if errors.As(err, &ie) {
		return usageErrorf("%v", ie.Err)
	}
	if err != nil {
		return err
	}
	if err := printer.Status(o.Out, r, o.Output); err != nil {
		return err
	}
	if o.HTML != "" {
		if err := o.writeHTML(r); err != nil {
			return err
		}
	}
	if why := r.Failing(o.FailOn); len(why) > 0 {
		return &exitError{code: ExitFindings, err: fmt.Errorf("--fail-on %s: %s (see the reasons above)", strings.Join(o.FailOn, ","), strings.Join(why, ", "))}
	}
	return nil
}

// writeHTML renders the report and writes it whole or not at all.
func (o *StatusOptions) writeHTML(r *status.Report) error {
	t, err := o.tpl.LoadHTML(templates.StatusReport, printer.StatusHTMLFuncs())
	if err != nil {
		return usageErrorf("%v", err)
	}
	var b bytes.Buffer
	if err := printer.StatusHTML(&b, r, t); err != nil {
		return fmt.Errorf("render %s: %w", templates.StatusReport, err)
	}
	if err := atomicfile.WriteFile(o.HTML, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html %s: %w. Pick a writable path", o.HTML, err)
	}
	return nil
}
