package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
)

// FinalizeOptions are the inputs of `adopt finalize`.
type FinalizeOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	PlanFile        string
	Apps            []string
	Timeout         time.Duration
	PollInterval    time.Duration
	Settle          time.Duration
	AllowHealth     []string
	Sync            bool
	DryRun          bool
	Output          string
	JournalFile     string
	Undo            bool
	Revision        string
	ArgoCDNamespace string
	Quiet           bool
	Parallel        int
	// RetireHelmRecords removes the records of each adopted Helm release
	// once its Application is ready and its objects are finalized.
	RetireHelmRecords bool

	ArgoCDVersion string
	// API is Argo CD API mode.
	API argoAPIFlags
	Hub hubFlags

	genericiooptions.IOStreams
	getenv  func(string) string // adopt's environment (invocation.getenv)
	cluster *cluster
	// hub is the management cluster Argo CD runs on (nil: the cluster itself).
	hub  *cluster
	plan *plan.Plan
	sel  finalize.Selection
	// fleet is a fleet plan (--plan DIR or its fleet.yaml), its clusters
	// reached through connector.
	fleet     *fleet.Fleet
	connector *fleetConnector
}

func newFinalizeCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	o := &FinalizeOptions{ConfigFlags: flags, IOStreams: streams, getenv: getenv, Output: "table", Timeout: 10 * time.Minute, PollInterval: 5 * time.Second, Settle: finalize.DefaultSettle, Parallel: finalize.DefaultParallel}
	cmd := &cobra.Command{
		Use:   "finalize",
		Short: "After the first sync, remove the stale last-applied annotation and hand-apply field ownership",
		Long: `For each Application of the plan (or each --app), wait until its first sync
succeeded and it is Synced and Healthy, and every adopted object carries its
tracking id. Then, per object, one guarded JSON patch (test of the
resourceVersion and of the annotation's value) removes
kubectl.kubernetes.io/last-applied-configuration and makes argocd-controller
the sole owner of the fields it applies: kubectl-client-side-apply is migrated
(csaupgrade), and kubectl, kubectl-last-applied, kubectl-create and the other
hand-apply managers lose the fields argocd-controller also owns. Managers of
other controllers are left alone. Nothing is deleted.

An Application that is not Healthy is explained (scheduler reason, crash
loop, failing probe, missing command) and its objects are left untouched.

Every change is journaled (the annotation's value, except for Secrets) next
to the plan, or in --journal; --undo puts the removed annotations back.

Nothing is deleted unless --retire-helm-records is given: then, for each
Application adopted from a Helm release, once it is Synced and Healthy and
its objects are finalized, the release's records (sh.helm.release.v1.*,
Secrets or ConfigMaps labelled owner=helm) are deleted, each guarded by its
UID and resourceVersion and kept whole in the journal (mode 0600) first, so
that helm uninstall can no longer delete what Argo CD manages. A release
with a revision the plan did not see is refused. --undo creates the records
again with the same content.

Applications are read through the Kubernetes API; with --argocd-server they
are read, watched and synced through argocd-server instead (Argo CD API mode,
token in --argocd-token or $ARGOCD_AUTH_TOKEN, never printed). The Argo CD
version (--argocd-version, else asked of argocd-server, else the application
controller's image tag) is reported with its source; on 3.1.0 to 3.3.1 a sync
started by --sync adds ClientSideApplyMigration=false.`,
		Example: `  # Wait for the first sync of every planned Application, then clean up
  adopt finalize --plan plan.yaml

  # Show the patches without sending them
  adopt finalize --plan plan.yaml --dry-run

  # Start the first sync (server-side apply, no prune) if none happened yet
  adopt finalize --plan plan.yaml --app adopt-litellm-test --sync --timeout 15m

  # Argo CD API mode: read and sync the Applications through argocd-server
  ARGOCD_AUTH_TOKEN=... adopt finalize --plan plan.yaml --argocd-server argocd.example.internal:443 --sync

  # A fleet plan: every cluster, each generated Application, a journal per cluster
  adopt finalize --plan plans/sprint-12 --argocd-context mgmt --sync

  # Also retire each adopted Helm release's records (helm list no longer shows it)
  adopt finalize --plan plan.yaml --retire-helm-records

  # Put the removed annotations, and any retired Helm records, back
  adopt finalize --plan plan.yaml --undo`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.PlanFile, "plan", "", "the plan file written by 'adopt plan --out', or a fleet plan's directory or fleet.yaml (required)")
	f.StringArrayVar(&o.Apps, "app", nil, "finalize only this Application of the plan (repeatable)")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for each Application's first successful sync and health")
	f.DurationVar(&o.PollInterval, "poll-interval", o.PollInterval, "how often to read the Application while waiting")
	f.DurationVar(&o.Settle, "settle", o.Settle, "after cleanup, watch each Application this long and report the field and manager if it goes OutOfSync (0: do not watch)")
	f.StringSliceVar(&o.AllowHealth, "allow-health", nil, "health statuses accepted besides Healthy, e.g. Progressing,Suspended")
	f.BoolVar(&o.Sync, "sync", false, "start the first sync (ServerSideApply=true, no prune) when none has happened")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the patches; change nothing")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: "+strings.Join(printer.FinalizeFormats, "|"))
	f.StringVar(&o.JournalFile, "journal", "", "journal file (default: <plan>.journal next to the plan)")
	f.BoolVar(&o.Undo, "undo", false, "restore the annotations the journal records as removed, and the Helm records it records as retired")
	f.BoolVar(&o.RetireHelmRecords, "retire-helm-records", false, "after an adopted Helm release's Application is Synced and Healthy and its objects are finalized, delete the release's records (guarded, each kept whole in the journal for --undo)")
	f.StringVar(&o.Revision, "revision", "", "the adoption commit: require a successful sync that deployed it (or a later one)")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", "", "namespace of the Application resources (default: the plan's Argo CD namespace, else argocd)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.IntVar(&o.Parallel, "parallel", o.Parallel, "objects read and patched at once (each patch stays guarded; the report keeps the plan's order)")
	o.API.AddFlags(f)
	f.StringVar(&o.ArgoCDVersion, "argocd-version", "", "Argo CD version, e.g. v3.2.6 (default: asked of argocd-server in API mode, else the application controller's image tag)")
	o.Hub.AddFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.FinalizeFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the plan and resolves the cluster connection.
func (o *FinalizeOptions) Complete(cmd *cobra.Command) error {
	if err := noNamespace(cmd, "finalize"); err != nil {
		return err
	}
	o.API.Complete(o.getenv)
	if o.PlanFile == "" {
		return usageErrorf("--plan is required: the plan file written by 'adopt plan --out'")
	}
	if fleet.IsIndex(o.PlanFile) {
		return o.completeFleet()
	}
	var err error
	if o.plan, err = plan.ReadFile(o.PlanFile); err != nil {
		return usageErrorf("--plan: %v", err)
	}
	if o.JournalFile == "" {
		o.JournalFile = finalize.JournalPath(o.PlanFile)
	}
	c, err := connect(o.ConfigFlags)
	if err != nil {
		return err
	}
	if err := o.completeCluster(c); err != nil {
		return err
	}
	o.hub, err = o.Hub.connect(o.ConfigFlags)
	return err
}

// completeCluster takes the defaults from the plan and checks that c is
// the plan's cluster.
func (o *FinalizeOptions) completeCluster(c *cluster) error {
	o.Quiet = o.Quiet || o.Output != "table"
	o.cluster = c
	if err := plan.CheckCluster(o.plan, c.Config.Host, c.Context); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// Validate rejects bad input and selects the Applications and objects.
func (o *FinalizeOptions) Validate() error {
	if o.fleet != nil {
		return o.validateFleet()
	}
	if !slices.Contains(printer.FinalizeFormats, o.Output) {
		return usageErrorf("unknown output format %q: use one of %s", o.Output, strings.Join(printer.FinalizeFormats, ", "))
	}
	if err := o.API.Validate(!o.Undo); err != nil {
		return err
	}
	if o.ArgoCDVersion != "" {
		if _, err := argoapp.VersionFromFlag(o.ArgoCDVersion); err != nil {
			return usageErrorf("%v", err)
		}
	}
	if o.Undo && o.Sync {
		return usageErrorf("--undo and --sync cannot be used together")
	}
	if o.Undo && o.RetireHelmRecords {
		return usageErrorf("--undo and --retire-helm-records cannot be used together: --undo puts back every Helm record the journal records as retired")
	}
	if o.Timeout <= 0 || o.PollInterval <= 0 {
		return usageErrorf("--timeout and --poll-interval must be positive")
	}
	if o.Settle < 0 {
		return usageErrorf("--settle must be 0 or more")
	}
	if o.Parallel < 1 {
		return usageErrorf("--parallel must be at least 1")
	}
	if err := checkHub(o.plan, o.hub); err != nil {
		return err
	}
	if m := o.plan.ArgoCD.Management; m != nil && o.hub == nil && !o.API.Possible() && !o.Undo {
		return usageErrorf("plan %s was made with Argo CD on the management cluster %s (context %q): pass --argocd-context (and --argocd-kubeconfig if it is in another file), or --argocd-server", o.plan.ID, m.Server, m.Context)
	}
	sel, err := finalize.Select(o.plan, o.Apps)
	if err != nil {
		return usageErrorf("--plan %s: %v", o.PlanFile, err)
	}
	o.sel = sel
	return nil
}

// Run checks permissions, waits for each Application, finalizes its
// objects and prints the report.
func (o *FinalizeOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.fleet != nil {
		return o.runFleet(ctx)
	}
	s, closeConn, err := o.open(ctx)
	var rep *finalize.Report
	if err == nil {
		defer closeConn()
		rep, err = s.Run(ctx)
	}
	var ie *finalize.InputError
	switch {
	case errors.As(err, &ie):
		return usageErrorf("%v", ie.Err)
	case err != nil:
		return err
	}
	return o.print(rep)
}

// print prints the report; objects not finalized are ExitPartial.
func (o *FinalizeOptions) print(rep *finalize.Report) error {
	if err := printer.Finalize(o.Out, rep, o.Output); err != nil {
		return err
	}
	if bad := rep.Incomplete(); len(bad) > 0 {
		return &exitError{code: ExitPartial, err: fmt.Errorf("%d of %d objects not finalized: %s (see the reasons above, fix, and re-run: finished objects are skipped)", len(bad), rep.Total.Objects, strings.Join(bad, ", "))}
	}
	if bad := rep.ReleasesIncomplete(); len(bad) > 0 {
		what := "retired"
		if o.Undo {
			what = "restored"
		}
		return &exitError{code: ExitPartial, err: fmt.Errorf("the records of %s were not all %s (see the reasons above; fix and re-run)", strings.Join(bad, ", "), what)}
	}
	for _, a := range rep.Apps {
		if s := a.Settle; s != nil && !s.Synced {
			return &exitError{code: ExitPartial, err: fmt.Errorf("Application %s went %s within the %s settle window after cleanup (see above): Git disagrees with a writer; put the field in Git or add an ignoreDifferences entry for its manager, then re-run", a.Name, s.Sync, s.Window)}
		}
	}
	return nil
}

func (o *FinalizeOptions) progress(app string, s argoapp.AppState, waiting string) {
	if waiting == "" {
		fmt.Fprintf(o.ErrOut, "Application %s: synced and %s\n", app, s.Health)
		return
	}
	fmt.Fprintf(o.ErrOut, "Application %s: waiting: %s\n", app, waiting)
}
