package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
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
	Git             gitops.AuthFlags
	Hub             hubFlags
	Contexts        []string
	AllContexts     bool
	ArgoCDClusters  string
	OutDir          string
	Parallel        int

	// NoIgnoreDifferences are Application name globs (--no-ignore-differences).
	NoIgnoreDifferences []string

	genericiooptions.IOStreams
	getenv  func(string) string // adopt's environment (invocation.getenv)
	cluster *cluster
	hub     *cluster
	fleet   []fleet.Cluster
	// registered: the fleet is --argocd-clusters' registrations.
	registered bool
	scopeNS    string
	progress   bool
	cfg        *config.Config
	gitSrc     gitindex.Source
}

func newPlanCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	o := &PlanOptions{ConfigFlags: flags, IOStreams: streams, getenv: getenv, Output: "table", ArgoCDNamespace: argoapp.DefaultNamespace}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Find untracked objects, judge their risk, match them with Git and propose Applications",
		Long: `Discover every listable object in the cluster (or in the namespaces -n names,
separated by commas; one that does not exist is an error)
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
  adopt plan --repo https://git.example.com/org/gitops.git --fail-on critical -o markdown

  # Code scanning (SARIF 2.1.0) and a CI test report (JUnit XML)
  adopt plan --repo . -o sarif > adopt.sarif
  adopt plan --repo . -o junit --fail-on warning > adopt-junit.xml

  # A fleet (docs/fleet.md): workload clusters by kubeconfig context, with Argo CD on mgmt
  adopt plan --contexts eu-1,eu-2 --argocd-context mgmt --out-dir plans/sprint

  # A fleet of the clusters registered with Argo CD on mgmt whose cluster Secrets
  # carry env=prod, each reached with its Secret's credentials (in memory only);
  # a bare --argocd-clusters takes every registered cluster
  adopt plan --argocd-context mgmt --argocd-clusters=env=prod --out-dir plans/prod`,
		Args: planArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "scan every namespace and cluster-scoped types (the default unless -n is given)")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: "+strings.Join(printer.Formats, "|"))
	f.StringVar(&o.OutFile, "out", "", "also write the plan file (YAML) to this path")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", o.ArgoCDNamespace, "namespace of the Argo CD control plane (holds argocd-cm and, with --argocd-context, the cluster Secrets)")
	f.StringVar(&o.ArgoCDVersion, "argocd-version", "", "Argo CD version, for the default tracking method (default: the application controller's image tag)")
	f.BoolVar(&o.ShowSkipped, "show-skipped", false, "list skipped objects and types, and informational findings")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.Int64Var(&o.ChunkSize, "chunk-size", 500, "return large lists in chunks of this size, as kubectl does")
	f.StringVar(&o.Repo, "repo", "", "GitOps repo to match objects with: a local path, an https:// or ssh:// URL, or git@host:path (read in memory); a checkout's URL is its branch's upstream remote, else origin")
	o.Git.AddFlags(f)
	o.Hub.AddFlags(f)
	o.addFleetFlags(cmd)
	f.StringVar(&o.Revision, "revision", "", "branch, tag or commit of --repo (default: HEAD)")
	f.StringVar(&o.ConfigFile, "config", "", "adopt.yaml with exclusions, destination, project, repo URL, apps dir and naming (default: ./adopt.yaml if present)")
	f.StringVar(&o.GroupBy, "group-by", "", "how to group objects into Applications: "+strings.Join(plan.GroupByValues, "|")+" (default: adopt.yaml's groupBy, else auto)")
	f.StringSliceVar(&o.NoIgnoreDifferences, "no-ignore-differences", nil, "write no ignoreDifferences into these Applications (name globs, '*' for all), though --preview found fields another writer owns; the plan records it")
	f.BoolVar(&o.Preview, "preview", false, "dry-run Argo CD's first sync of every object (server-side apply, dryRun=All) and check that changed workloads fit on the nodes; writes nothing")
	f.StringVar(&o.FailOn, "fail-on", "", "exit with code 3 when a finding is at least this severe: critical|warning")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("group-by", cobra.FixedCompletions(plan.GroupByValues, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"critical", "warning"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete resolves the cluster connection, adopt.yaml and the scan scope.
func (o *PlanOptions) Complete(cmd *cobra.Command) error {
	var err error
	if o.scopeNS, err = namespaceScope(cmd, o.ConfigFlags, o.AllNamespaces); err != nil {
		return err
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
		auth, _ := o.Git.Complete(o.getenv)
		o.Git.Warn(o.ErrOut, o.Repo, o.Quiet)
		o.gitSrc = gitindex.Source{Location: o.Repo, Revision: o.Revision, Auth: auth}
	}
	c, err := connect(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.cluster = c
	if o.hub, err = o.Hub.connect(o.ConfigFlags); err != nil {
		return err
	}
	if err := o.completeFleet(cmd); err != nil {
		return err
	}
	o.progress = !o.Quiet && isTerminal(o.ErrOut)
	return nil
}

// Validate rejects bad input.
func (o *PlanOptions) Validate() error {
	if !slices.Contains(printer.Formats, o.Output) && o.Output != "md" {
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.Formats, ", "))
	}
	if !slices.Contains(plan.GroupByValues, o.GroupBy) {
		return usageErrorf("unknown --group-by %q: use one of %s", o.GroupBy, strings.Join(plan.GroupByValues, ", "))
	}
	if o.FailOn != "" && o.FailOn != "critical" && o.FailOn != "warning" {
		return usageErrorf("unknown --fail-on %q: use critical or warning", o.FailOn)
	}
	if err := o.validateFleet(); err != nil {
		return err
	}
	if o.Revision != "" && o.Repo == "" {
		return usageErrorf("--revision needs --repo")
	}
	if o.ChunkSize < 0 {
		return usageErrorf("--chunk-size must be 0 or more")
	}
	if o.Repo != "" {
		if _, err := gitops.ParseLocation(o.Repo); err != nil {
			return usageErrorf("--repo: %v", err)
		}
	}
	if o.ArgoCDVersion != "" {
		if _, err := argoapp.VersionFromFlag(o.ArgoCDVersion); err != nil {
			return usageErrorf("%v", err)
		}
	}
	return nil
}

// Run scans the cluster, prints the plan and applies --fail-on.
func (o *PlanOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.fleet) > 0 {
		return o.runFleet(ctx)
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
	if err := printer.Print(o.Out, p, o.Output, printer.Options{Color: useColor(o.Out), ShowSkipped: o.ShowSkipped, Version: version, FailOn: plan.Severity(o.FailOn)}); err != nil {
		return err
	}
	if o.FailOn != "" && p.Worst().AtLeast(plan.Severity(o.FailOn)) {
		return &exitError{code: ExitFindings, err: fmt.Errorf("findings at or above --fail-on %s: %s", o.FailOn, printer.SummaryLine(p))}
	}
	return nil
}

// scanOptions are the pipeline's inputs from the flags.
func (o *PlanOptions) scanOptions() planner.Options {
	so := scanOptions(o.cluster, o.scopeNS, o.cfg, o.ArgoCDNamespace, o.ArgoCDVersion, o.gitSrc, o.getenv)
	so.GroupBy, so.ChunkSize, so.Preview, so.Hub = plan.GroupBy(o.GroupBy), o.ChunkSize, o.Preview, scanHub(o.hub)
	so.NoIgnoreDifferences = o.NoIgnoreDifferences
	so.Unsealed = o.OutFile != "" // WriteFile seals it as it writes
	if o.progress {
		so.Say = func(format string, a ...any) { fmt.Fprintf(o.ErrOut, format, a...) }
		so.Listed = func(done, total, objects int) {
			fmt.Fprintf(o.ErrOut, "\rlisted %d/%d types, %d objects", done, total, objects)
			if done == total {
				fmt.Fprintln(o.ErrOut)
			}
		}
		so.Previewed = func(done, total int) {
			fmt.Fprintf(o.ErrOut, "\rpreviewing %d/%d", done, total)
			if done == total {
				fmt.Fprintln(o.ErrOut)
			}
		}
	}
	return so
}

func (o *PlanOptions) build(ctx context.Context) (*plan.Plan, error) {
	return planner.Plan(ctx, o.scanOptions())
}
