package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// PlanOptions are the inputs of `adopt plan`.
type PlanOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	AllNamespaces   bool
	Output          string
	OutFile         string
	ArgoCDNamespace string
	ArgoCDVersion   string
	ShowSkipped     bool
	Quiet           bool
	ChunkSize       int64
	Repo            string
	Revision        string
	ConfigFile      string
	GroupBy         string
	FailOn          string
	Preview         bool

	genericiooptions.IOStreams
	cluster  *cluster
	scopeNS  string
	progress bool
	cfg      *config.Config
	gitSrc   gitindex.Source
}

func newPlanCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PlanOptions{ConfigFlags: flags, IOStreams: streams, Output: "table", ArgoCDNamespace: "argocd"}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Find untracked objects, judge their risk, match them with Git and propose Applications",
		Long: `Discover every listable object in the cluster (or in one namespace with -n)
that no Argo CD Application tracks, say who put it there, measure its annotation
budget exactly as the API server counts it (the sum of key and value bytes,
against a cap of 262,144 bytes), match it with the GitOps repo (--repo), and
group the objects into proposed Applications.

The tracking method is read from argocd-cm in --argocd-namespace; when it does
not say, the Argo CD version's default is used (label on v2, annotation on v3)
and said so. A tracking id that names a missing Application, or another object
than its carrier, does not count as tracking.

Types the credentials may not list are reported as "not scanned"; they never
abort the scan. The plan never writes to the cluster.

` + exitCodesHelp,
		Example: `  # Every namespace and cluster-scoped type
  adopt plan

  # Match with the GitOps repo and write the reviewable plan file
  adopt plan --repo ../gitops --out plan.yaml

  # In CI: fail (exit 3) when anything is critical
  adopt plan --repo https://git.example.com/org/gitops.git --fail-on critical -o markdown`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "scan every namespace and cluster-scoped types (the default unless -n is given)")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: "+strings.Join(printer.Formats, "|"))
	f.StringVar(&o.OutFile, "out", "", "also write the plan file (YAML) to this path")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", o.ArgoCDNamespace, "namespace of the Argo CD control plane (holds argocd-cm)")
	f.StringVar(&o.ArgoCDVersion, "argocd-version", "", "Argo CD version, for the default tracking method (default: the application controller's image tag)")
	f.BoolVar(&o.ShowSkipped, "show-skipped", false, "list skipped objects and types, and informational findings")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.Int64Var(&o.ChunkSize, "chunk-size", 500, "return large lists in chunks of this size, as kubectl does")
	f.StringVar(&o.Repo, "repo", "", "GitOps repo to match objects with: a local path or a URL (read in memory; credentials from the URL or ADOPT_GIT_USERNAME/ADOPT_GIT_TOKEN)")
	f.StringVar(&o.Revision, "revision", "", "branch, tag or commit of --repo (default: HEAD)")
	f.StringVar(&o.ConfigFile, "config", "", "adopt.yaml with exclusions, destination, project, repo URL, apps dir and naming (default: ./adopt.yaml if present)")
	f.StringVar(&o.GroupBy, "group-by", "", "how to group objects into Applications: "+strings.Join(plan.GroupByValues, "|")+" (default: adopt.yaml's groupBy, else auto)")
	f.BoolVar(&o.Preview, "preview", false, "dry-run Argo CD's first sync of every object (server-side apply, dryRun=All) and check that changed workloads fit on the nodes; writes nothing")
	f.StringVar(&o.FailOn, "fail-on", "", "exit with code 3 when a finding is at least this severe: critical|warning")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("group-by", cobra.FixedCompletions(plan.GroupByValues, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"critical", "warning"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete resolves the cluster connection, adopt.yaml and the scan scope.
func (o *PlanOptions) Complete(cmd *cobra.Command) error {
	if cmd.Flags().Changed("namespace") && !o.AllNamespaces {
		o.scopeNS = *o.ConfigFlags.Namespace
	}
	if cmd.Flags().Changed("namespace") && o.AllNamespaces {
		return usageErrorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	cfg, err := config.Load(o.ConfigFile)
	if err != nil {
		return usageErrorf("%v", err)
	}
	o.cfg = cfg
	if o.GroupBy == "" {
		o.GroupBy = cfg.GroupBy
	}
	if o.Repo != "" {
		o.gitSrc = gitindex.Source{Location: o.Repo, Revision: o.Revision,
			Username: os.Getenv("ADOPT_GIT_USERNAME"), Password: os.Getenv("ADOPT_GIT_TOKEN")}
	}
	c, err := connect(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.cluster = c
	o.progress = !o.Quiet && isTerminal(o.ErrOut)
	return nil
}

// Validate rejects bad input.
func (o *PlanOptions) Validate() error {
	if !oneOf(printer.Formats, o.Output) && o.Output != "md" {
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.Formats, ", "))
	}
	if !oneOf(plan.GroupByValues, o.GroupBy) {
		return usageErrorf("unknown --group-by %q: use one of %s", o.GroupBy, strings.Join(plan.GroupByValues, ", "))
	}
	if o.FailOn != "" && o.FailOn != "critical" && o.FailOn != "warning" {
		return usageErrorf("unknown --fail-on %q: use critical or warning", o.FailOn)
	}
	if o.Revision != "" && o.Repo == "" {
		return usageErrorf("--revision needs --repo")
	}
	if o.ChunkSize < 0 {
		return usageErrorf("--chunk-size must be 0 or more")
	}
	return nil
}

func oneOf(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Run scans the cluster, prints the plan and applies --fail-on.
func (o *PlanOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.build(ctx)
	if err != nil {
		return err
	}
	if o.OutFile != "" {
		if err := plan.WriteFile(o.OutFile, p); err != nil {
			return err
		}
		if !o.Quiet {
			fmt.Fprintf(o.ErrOut, "plan %s written to %s\n", p.ID, o.OutFile)
		}
	}
	if err := printer.Print(o.Out, p, o.Output, printer.Options{Color: useColor(o.Out), ShowSkipped: o.ShowSkipped}); err != nil {
		return err
	}
	if o.FailOn != "" && p.Worst().AtLeast(plan.Severity(o.FailOn)) {
		return &exitError{code: ExitFindings, err: fmt.Errorf("findings at or above --fail-on %s: %s", o.FailOn, printer.SummaryLine(p))}
	}
	return nil
}

func (o *PlanOptions) build(ctx context.Context) (*plan.Plan, error) {
	var ix *gitindex.Index
	if o.Repo != "" {
		o.say("reading repo %s\n", gitops.Redact(o.Repo))
		var err error
		if ix, err = gitindex.Load(ctx, o.gitSrc); err != nil {
			return nil, err
		}
	}
	kube, err := kubernetes.NewForConfig(o.cluster.rest)
	if err != nil {
		return nil, err
	}
	tracking, err := argoapp.ReadTracking(ctx, kube, o.ArgoCDNamespace, o.ArgoCDVersion)
	if err != nil {
		return nil, o.cluster.explain(err)
	}
	apps, err := argoapp.ListApplications(ctx, o.cluster.clients.Metadata)
	if err != nil {
		return nil, o.cluster.explain(err)
	}
	skipType := func(t discover.Type) string {
		if why := judge.SkipType(t); why != "" {
			return why
		}
		if rule := o.cfg.ExcludesType(t.Group, t.Kind); rule != "" {
			return "excluded by adopt.yaml " + rule
		}
		return ""
	}
	opts := discover.Options{Namespace: o.scopeNS, SkipType: skipType, PageSize: o.ChunkSize}
	if o.progress {
		opts.Progress = func(done, total, objects int) {
			fmt.Fprintf(o.ErrOut, "\rlisted %d/%d types, %d objects", done, total, objects)
			if done == total {
				fmt.Fprintln(o.ErrOut)
			}
		}
	}
	res, err := discover.Collect(ctx, o.cluster.clients, opts)
	if err != nil {
		return nil, o.cluster.explain(err)
	}
	bodies := func(objs []discover.Object, want func(*discover.Object) bool, fn func(*discover.Object, map[string]any, error)) {
		discover.Each(ctx, o.cluster.clients, objs, 4, want, fn)
	}
	p := plan.Build(plan.Inputs{
		Result: res, Tracking: tracking, Apps: apps, Config: o.cfg, Index: ix, GroupBy: plan.GroupBy(o.GroupBy), Bodies: bodies,
		Cluster: plan.Cluster{Server: o.cluster.rest.Host, Context: o.cluster.context, Namespace: o.scopeNS},
	})
	if o.Preview {
		if err := o.preview(ctx, kube, p, ix); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// say writes progress to stderr when it is a terminal and not --quiet.
func (o *PlanOptions) say(format string, a ...any) {
	if o.progress {
		fmt.Fprintf(o.ErrOut, format, a...)
	}
}
