package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/adopt/status"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

// StatusOptions are the inputs of `adopt status`.
type StatusOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PlanFiles   []string
	Repo        string
	Base        string
	Git         gitops.AuthFlags
	Provider    string
	APIURL      string
	ConfigFile  string
	Output      string
	HTML        string
	Record      string
	FailOn      []string
	NoCoverage  bool
	Templates   string

	genericiooptions.IOStreams
	cluster *cluster
	inputs  []status.Input
	cfg     *config.Config
	auth    gitops.Auth
	tpl     *templates.Set
	now     func() time.Time
}

// statusFailOn are the --fail-on values.
var statusFailOn = []string{"stuck", "regressed"}

func newStatusCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{ConfigFlags: flags, IOStreams: streams, Output: "table", now: time.Now}
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

It writes nothing, except what you ask for: --html FILE (one self-contained
page, no network) and --record DIR (one small JSON snapshot per run; the
report's burndown and coverage charts are drawn from them).

` + exitCodesHelp,
		Example: `  # Where the sprint stands, from the plans, the cluster and the GitOps repo
  adopt status --plan plan.yaml --repo https://git.example.com/org/gitops.git

  # The report for the team, with its history committed next to the plans
  adopt status --plan a.yaml --plan b.yaml --repo ../gitops --record status/ --html status.html

  # In CI: fail (exit 3) when something is stuck or regressed
  adopt status --plan plan.yaml --fail-on stuck,regressed -o markdown`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	o.Git.AddFlags(f)
	f.StringArrayVar(&o.PlanFiles, "plan", nil, "a plan file written by 'adopt plan --out' (repeatable; required)")
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
	if len(o.PlanFiles) == 0 {
		return usageErrorf("--plan is required: the plan file(s) written by 'adopt plan --out'")
	}
	for _, file := range o.PlanFiles {
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
	o.auth, _ = o.Git.Complete(nil)
	o.Git.Warn(o.ErrOut, o.Repo)
	if o.tpl, err = templates.New(o.Templates); err != nil {
		return usageErrorf("%v", err)
	}
	if o.cluster, err = connect(o.ConfigFlags); err != nil {
		return err
	}
	return nil
}

// Validate rejects bad flags and plans made for another cluster.
func (o *StatusOptions) Validate() error {
	if !oneOf(printer.StatusFormats, o.Output) {
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.StatusFormats, ", "))
	}
	for _, f := range o.FailOn {
		if !oneOf(statusFailOn, f) {
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
	if o.Provider != "" && !oneOf(gitops.ProviderNames(), o.Provider) {
		return usageErrorf("--provider %q is not supported: use one of %s", o.Provider, strings.Join(gitops.ProviderNames(), ", "))
	}
	for _, i := range o.inputs {
		if err := plan.CheckCluster(i.Plan, o.cluster.rest.Host, o.cluster.context); err != nil {
			return usageErrorf("--plan %s: %v", i.File, err)
		}
	}
	return nil
}

// Run reads everything, judges, prints, and writes what was asked for.
func (o *StatusOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	first := o.inputs[0].Plan
	argoNS := first.ArgoCDNamespace()
	tracking, err := argoapp.ReadTracking(ctx, o.cluster.kube, argoNS, first.Tracking.Version)
	if err != nil {
		return o.cluster.explain(err)
	}
	src := status.Sources{Dynamic: o.cluster.clients.Dynamic, Kube: o.cluster.kube, Tracking: tracking}
	if o.Repo != "" {
		repo, err := gitops.Clone(ctx, gitops.CloneOptions{URL: o.Repo, Auth: o.auth})
		if err != nil {
			return err
		}
		src.Repo, src.RepoName, src.Base = repo, repo.URL(), o.Base
		if err := o.provider(&src, repo); err != nil {
			return err
		}
	}
	refs, facts, notes, err := status.Collect(ctx, src, o.inputs)
	if err != nil {
		return err
	}
	var cov *status.Coverage
	if !o.NoCoverage {
		apps, err := argoapp.ListApplications(ctx, o.cluster.clients.Metadata)
		if err != nil {
			return o.cluster.explain(err)
		}
		cov, err = status.Count(ctx, status.CoverageOptions{Clients: o.cluster.clients, Namespaces: o.namespaces(), Config: o.cfg, Tracking: tracking, Apps: apps})
		if err != nil {
			return o.cluster.explain(err)
		}
	}
	r := status.Assemble(o.now(), refs, facts, cov, notes)
	if o.Record != "" {
		if r.History, err = status.History(o.Record); err != nil {
			return usageErrorf("%v", err)
		}
		if _, err := status.Record(o.Record, r.Snapshot()); err != nil {
			return err
		}
		r.History = append(r.History, r.Snapshot())
	}
	if err := printer.Status(o.Out, r, o.Output); err != nil {
		return err
	}
	if o.HTML != "" {
		if err := o.writeHTML(r); err != nil {
			return err
		}
	}
	var why []string
	for _, f := range o.FailOn {
		switch {
		case f == "stuck" && r.Stuck > 0:
			why = append(why, fmt.Sprintf("%d stuck", r.Stuck))
		case f == "regressed" && r.Counts.Regressed > 0:
			why = append(why, fmt.Sprintf("%d regressed", r.Counts.Regressed))
		}
	}
	if len(why) > 0 {
		return &exitError{code: ExitFindings, err: fmt.Errorf("--fail-on %s: %s (see the reasons above)", strings.Join(o.FailOn, ","), strings.Join(why, ", "))}
	}
	return nil
}

// provider sets up the pull-request lookup apply's provider would answer,
// or says in src.PRNote why there is none.
func (o *StatusOptions) provider(src *status.Sources, repo *gitops.Repo) error {
	if repo.Local() {
		src.PRNote = "--repo is a local path: no pull-request host to ask"
		return nil
	}
	ch, err := gitops.ChooseProvider(gitops.ProviderChoice{RepoURL: repo.URL(), Provider: o.Provider, APIURL: o.APIURL, Token: o.auth.Token})
	switch {
	case errors.Is(err, gitops.ErrPRProvider), errors.Is(err, gitops.ErrNoToken):
		src.PRNote = err.Error()
		return nil
	case err != nil:
		// A plain Git server (no owner/name path) hosts no pull requests.
		src.PRNote = fmt.Sprintf("%s is not an owner/name repository of a pull-request host", repo.URL())
		return nil
	}
	p, err := gitops.NewProvider(ch.Name, gitops.ProviderOptions{APIURL: ch.APIURL, Token: ch.Token})
	if err != nil {
		return usageErrorf("%v", err)
	}
	sr, ok := p.(gitops.PRStateReader)
	if !ok {
		src.PRNote = ch.Name + " cannot report pull-request states"
		return nil
	}
	src.PRs, src.PRRepo = sr, ch.Repo
	return nil
}

// namespaces is the coverage scope: every namespace when any plan scanned
// all of them, else the plans' namespaces.
func (o *StatusOptions) namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, i := range o.inputs {
		ns := i.Plan.Cluster.Namespace
		if ns == "" {
			return nil
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

// writeHTML renders the report and writes it atomically.
func (o *StatusOptions) writeHTML(r *status.Report) error {
	t, err := o.tpl.LoadHTML(templates.StatusReport, printer.StatusHTMLFuncs())
	if err != nil {
		return usageErrorf("%v", err)
	}
	var b bytes.Buffer
	if err := printer.StatusHTML(&b, r, t); err != nil {
		return fmt.Errorf("render %s: %w", templates.StatusReport, err)
	}
	tmp := o.HTML + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html %s: %w. Pick a writable path", o.HTML, err)
	}
	if err := os.Rename(tmp, o.HTML); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("--html %s: %w", o.HTML, err)
	}
	return nil
}
