package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
)

// PlanOptions are the inputs of `adopt plan`.
type PlanOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	AllNamespaces   bool
	Output          string
	OutFile         string
	ArgoCDNamespace string
	ShowSkipped     bool
	Quiet           bool
	ChunkSize       int64

	genericiooptions.IOStreams
	cluster  *cluster
	scopeNS  string
	progress bool
}

func newPlanCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PlanOptions{ConfigFlags: flags, IOStreams: streams, Output: "table", ArgoCDNamespace: "argocd"}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Find untracked objects, measure their annotation budget and propose their adoption",
		Long: `Discover every listable object in the cluster (or in one namespace with -n)
that no Argo CD Application tracks, and measure its annotation budget exactly as
the API server counts it: the sum of key and value bytes, against a cap of
262,144 bytes.

The tracking method is read from argocd-cm in --argocd-namespace; when it is
absent, annotation tracking (Argo CD 3's default) is assumed and said so.`,
		Example: `  # Every namespace and cluster-scoped type
  adopt plan

  # One namespace, as JSON
  adopt plan -n litellm-test -o json

  # Write the reviewable plan file
  adopt plan --out plan.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(cmd); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "scan every namespace and cluster-scoped types (the default unless -n is given)")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: "+strings.Join(printer.Formats, "|"))
	f.StringVar(&o.OutFile, "out", "", "also write the plan file (YAML) to this path")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", o.ArgoCDNamespace, "namespace of the Argo CD control plane (holds argocd-cm)")
	f.BoolVar(&o.ShowSkipped, "show-skipped", false, "list skipped objects and types with the reason")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.Int64Var(&o.ChunkSize, "chunk-size", 500, "return large lists in chunks of this size, as kubectl does")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.Formats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete resolves the cluster connection and the scan scope.
func (o *PlanOptions) Complete(cmd *cobra.Command) error {
	if cmd.Flags().Changed("namespace") && !o.AllNamespaces {
		o.scopeNS = *o.ConfigFlags.Namespace
	}
	if cmd.Flags().Changed("namespace") && o.AllNamespaces {
		return usageErrorf("-n/--namespace and -A/--all-namespaces cannot be used together")
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
	for _, f := range printer.Formats {
		if o.Output == f {
			return nil
		}
	}
	return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.Formats, ", "))
}

// Run scans the cluster and prints the plan.
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
			fmt.Fprintf(o.ErrOut, "plan written to %s\n", o.OutFile)
		}
	}
	return printer.Print(o.Out, p, o.Output, printer.Options{Color: useColor(o.Out), ShowSkipped: o.ShowSkipped})
}

func (o *PlanOptions) build(ctx context.Context) (*plan.Plan, error) {
	kube, err := kubernetes.NewForConfig(o.cluster.rest)
	if err != nil {
		return nil, err
	}
	tracking, err := argoapp.ReadTracking(ctx, kube, o.ArgoCDNamespace, "")
	if err != nil {
		return nil, o.cluster.explain(err)
	}
	opts := discover.Options{Namespace: o.scopeNS, SkipType: judge.SkipType, PageSize: o.ChunkSize}
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
	return plan.Build(res, tracking, plan.Cluster{Server: o.cluster.rest.Host, Context: o.cluster.context, Namespace: o.scopeNS}), nil
}
