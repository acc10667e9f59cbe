package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
)

// allRegistered is --argocd-clusters given without a selector.
const allRegistered = "*"

// addFleetFlags registers the flags that make plan a fleet plan.
func (o *PlanOptions) addFleetFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&o.Contexts, "contexts", nil, "plan several workload clusters (kubeconfig contexts, comma-separated) into a fleet plan; needs --out-dir")
	f.BoolVar(&o.AllContexts, "all-contexts", false, "plan every context of the kubeconfig (but --argocd-context's) into a fleet plan; needs --out-dir")
	f.StringVar(&o.ArgoCDClusters, "argocd-clusters", "", "plan the clusters registered with --argocd-context's Argo CD whose cluster Secrets match this label `selector` (bare: all), each with its Secret's own credentials, into a fleet plan; needs --out-dir. Write the selector after '=': --argocd-clusters=env=prod")
	f.Lookup("argocd-clusters").NoOptDefVal = allRegistered
	f.StringVar(&o.OutDir, "out-dir", "", "with --contexts or --argocd-clusters: write each cluster's plan (<context>.yaml) and the fleet index (fleet.yaml) into this directory")
	f.IntVar(&o.Parallel, "parallel", 4, "with --contexts or --argocd-clusters: how many clusters to scan at once")
	_ = cmd.RegisterFlagCompletionFunc("argocd-clusters", cobra.NoFileCompletions)
}

// planArgs refuses arguments, naming the one mistake pflag makes likely:
// a bare --argocd-clusters takes no value after a space.
func planArgs(cmd *cobra.Command, args []string) error {
	if f := cmd.Flags().Lookup("argocd-clusters"); len(args) > 0 && f.Changed && f.Value.String() == allRegistered {
		return usageErrorf("--argocd-clusters takes its selector after '=': --argocd-clusters=%s (a bare --argocd-clusters selects every registered cluster)", args[0])
	}
	return cobra.NoArgs(cmd, args)
}

// completeFleet resolves the fleet's clusters: --contexts, every context
// (--all-contexts), or the management cluster's registrations
// (--argocd-clusters, listed now).
func (o *PlanOptions) completeFleet(cmd *cobra.Command) error {
	o.registered = cmd.Flags().Changed("argocd-clusters")
	if n := btoi(len(o.Contexts) > 0) + btoi(o.AllContexts) + btoi(o.registered); n > 1 {
		return usageErrorf("--contexts, --all-contexts and --argocd-clusters cannot be used together")
	}
	switch {
	case o.registered:
		return o.completeRegistered(cmd.Context())
	case o.AllContexts:
		raw, err := o.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return usageErrorf("cannot read the kubeconfig's contexts: %v", err)
		}
		for name := range raw.Contexts {
			if name != o.Hub.Context {
				o.Contexts = append(o.Contexts, name)
			}
		}
		sort.Strings(o.Contexts)
		if len(o.Contexts) == 0 {
			return usageErrorf("--all-contexts: the kubeconfig has no context besides the management cluster's")
		}
	}
	for _, name := range o.Contexts {
		o.fleet = append(o.fleet, o.fleetCluster(name))
	}
	return nil
}

// completeRegistered lists the management cluster's registrations, keeps
// those --argocd-clusters selects and connects to each with its Secret's
// credentials (in memory only); one adopt cannot use is that cluster's
// failure.
func (o *PlanOptions) completeRegistered(ctx context.Context) error {
	if o.hub == nil {
		return usageErrorf("--argocd-clusters reads the clusters registered with Argo CD on the management cluster: give --argocd-context (or --argocd-kubeconfig)")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	selector := o.ArgoCDClusters
	if selector == allRegistered {
		selector = ""
	}
	regs, err := argoapp.Registrations(ctx, o.hub.Kube, o.ArgoCDNamespace)
	if err != nil {
		return o.hub.Explain(err)
	}
	if regs, err = argoapp.Select(regs, selector); err != nil {
		return usageErrorf("--argocd-clusters on the management cluster %s, namespace %s: %v", o.hub.Config.Host, o.ArgoCDNamespace, err)
	}
	for _, r := range regs {
		o.fleet = append(o.fleet, o.registeredCluster(r))
	}
	return nil
}

// validateFleet checks the fleet flags.
func (o *PlanOptions) validateFleet() error {
	switch {
	case len(o.fleet) > 0 && (o.OutDir == "" || o.OutFile != "" || o.Preview):
		return usageErrorf("--contexts and --argocd-clusters write a fleet plan: give --out-dir DIR (not --out), without --preview")
	case o.OutDir != "" && len(o.fleet) == 0:
		return usageErrorf("--out-dir goes with --contexts or --argocd-clusters; for one cluster use --out FILE")
	case o.Parallel < 1:
		return usageErrorf("--parallel must be at least 1")
	case len(o.fleet) > 0 && !slices.Contains([]string{"table", "json", "yaml"}, o.Output):
		return usageErrorf("a fleet plan prints as table, json or yaml, not %s", o.Output)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fleetCluster connects to one context of --contexts; a bad context is
// that cluster's failure, not the run's.
func (o *PlanOptions) fleetCluster(name string) fleet.Cluster {
	c, err := connect(contextFlags(o.ConfigFlags, name))
	if err != nil {
		return fleet.Cluster{Name: name, Err: err}
	}
	return fleet.Cluster{Name: name, Scan: o.fleetScan(c)}
}

// registeredCluster is one registration of --argocd-clusters, named by its
// registered name.
func (o *PlanOptions) registeredCluster(r argoapp.Registration) fleet.Cluster {
	c, err := connectRegistration(r, o.ConfigFlags)
	if err != nil {
		return fleet.Cluster{Name: r.Name, Via: fleet.ViaArgoCDCluster, Server: r.Server, Err: err}
	}
	return fleet.Cluster{Name: r.Name, Via: fleet.ViaArgoCDCluster, Server: r.Server, Scan: o.fleetScan(c)}
}

func (o *PlanOptions) fleetScan(c *cluster) planner.Options {
	so := scanOptions(c, "", o.cfg, o.ArgoCDNamespace, o.ArgoCDVersion, o.gitSrc, o.getenv)
	so.Cluster.Namespace = o.scopeNS
	so.GroupBy, so.ChunkSize, so.Hub = plan.GroupBy(o.GroupBy), o.ChunkSize, scanHub(o.hub)
	so.Unsealed = true // fleet.WriteDir seals each plan as it writes it
	return so
}

// connectRegistration connects to a registered cluster with its cluster
// Secret's credentials and the main flags' --request-timeout. It makes no
// request; the credentials stay in the returned clients.
func connectRegistration(r argoapp.Registration, main *genericclioptions.ConfigFlags) (*cluster, error) {
	if r.Unusable != "" {
		return nil, fmt.Errorf("%s", r.Unusable)
	}
	cfg := r.RESTConfig()
	if main.Timeout != nil {
		t, err := clientcmd.ParseTimeout(*main.Timeout)
		if err != nil {
			return nil, usageErrorf("--request-timeout: %v", err)
		}
		cfg.Timeout = t
	}
	return connectREST(cfg, r.Name, r.Secret)
}

// runFleet plans every cluster of the fleet, writes the fleet plan and
// prints its index; one cluster failing is reported, not fatal.
func (o *PlanOptions) runFleet(ctx context.Context) error {
	progress := func(cluster string, err error) {
		if !o.progress {
			return
		}
		if err != nil {
			fmt.Fprintf(o.ErrOut, "cluster %s: not scanned: %v\n", cluster, err)
			return
		}
		fmt.Fprintf(o.ErrOut, "cluster %s: planned\n", cluster)
	}
	results := fleet.Plan(ctx, o.fleet, o.Parallel, progress)
	var registered []argoapp.Cluster
	if o.hub != nil {
		// Only for label selectors: a management cluster that cannot be
		// read has already failed every cluster's plan with the reason.
		registered, _ = argoapp.RegisteredClusters(ctx, o.hub.Kube, o.ArgoCDNamespace)
	}
	ix, err := fleet.WriteDir(o.OutDir, results, registered)
	var long *fleet.LabelError
	if errors.As(err, &long) {
		return usageErrorf("fleet plan %s: %v", o.OutDir, err)
	}
	if err != nil {
		return err
	}
	if err := printer.Fleet(o.Out, ix, o.Output); err != nil {
		return err
	}
	worst, err := fleet.Worst(results)
	if err != nil {
		return err
	}
	if o.FailOn != "" && worst.AtLeast(plan.Severity(o.FailOn)) {
		return &exitError{code: ExitFindings, err: fmt.Errorf("findings at or above --fail-on %s in the fleet plan %s", o.FailOn, o.OutDir)}
	}
	return nil
}
