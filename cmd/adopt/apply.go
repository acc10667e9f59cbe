package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/printer"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// ApplyOptions are the inputs of `adopt apply`.
type ApplyOptions struct {
	ConfigFlags   *genericclioptions.ConfigFlags
	PlanFile      string
	ConfigFile    string
	AllNamespaces bool
	commitFlags
	Git           gitops.AuthFlags
	Hub           hubFlags
	Secrets       string
	FixRunbooks   bool
	PushSecrets   bool
	AutoSync      bool
	Prune         bool
	Quiet         bool
	ArgoCDVersion string
	CSAMigration  string
	// Overrides are the content flags; with --plan they may only repeat it.
	Overrides apply.Overrides
	pr        prOptions

	genericiooptions.IOStreams
	getenv    func(string) string // adopt's environment (invocation.getenv)
	cluster   *cluster
	hub       *cluster
	scopeNS   string
	plan      *plan.Plan
	cfg       *config.Config
	auth      gitops.Auth
	tokenFrom string
	// fleet is a fleet plan (--plan DIR or its fleet.yaml), with a
	// connection per cluster by context, and the engine's view of each.
	fleet    *fleet.Fleet
	clusters map[string]*cluster
	members  map[string]apply.Cluster
}

func newApplyCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) *cobra.Command {
	cmd, _ := applyCommand(flags, streams, getenv)
	return cmd
}

// applyCommand is the apply command and the options its flags fill.
func applyCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, getenv func(string) string) (*cobra.Command, *ApplyOptions) {
	o := &ApplyOptions{ConfigFlags: flags, IOStreams: streams, getenv: getenv, pr: prOptions{getenv: getenv}, Secrets: string(export.SecretsSkip), CSAMigration: string(apply.CSAAuto)}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Write the proposed Applications and clean manifests into the GitOps repo, on a branch",
		Long: `Turn a reviewed adoption plan into one commit on a branch of the GitOps repo.
Nothing in the cluster changes (but with --push-secrets): apply reads the live objects it exports.

The plan is the contract: each Application is rendered with the Argo CD
namespace, apps directory, export directory, project, destination and
repoURL the plan records, and with exactly the plan's objects. A flag that
contradicts the plan is refused (exit 2); flags about how to commit
(--branch, --base, --open-pr, ...) are fine.

For each proposed Application it renders an Argo CD Application (server-side
apply, no automated sync or prune unless asked, no resources finalizer).
Objects whose manifest is already in Git are pointed at, not copied; the
others are exported as clean manifests into the Application's source path.
Secrets are never written with their values.

A fleet plan (--plan DIR, or DIR/fleet.yaml, from plan --contexts) is
written as one commit: each proposed ApplicationSet (list or clusters
generator, ServerSideApply=true, no automated prune, workloads preserved on
deletion) and every cluster's other Applications; each cluster's objects are
read from its context in the index (docs/fleet.md).

Running it again with the same plan makes no new commit; a changed plan adds
one. When someone else pushed to the branch meanwhile, the commit is rebuilt
on top and pushed again (never forced unless --force).

` + exitCodesHelp,
		Example: `  # Apply a reviewed plan to a local clone (no network)
  adopt apply --plan plan.yaml --repo ../gitops

  # Show the diff it would commit, write nothing
  adopt apply --plan plan.yaml --repo https://git.example.com/org/gitops.git --dry-run

  # Over SSH, with the key's passphrase from the environment
  ADOPT_SSH_KEY_PASSPHRASE=... adopt apply --plan plan.yaml --repo git@git.example.com:org/gitops.git --ssh-key ~/.ssh/id_ed25519

  # A fleet plan: ApplicationSets for the groups on several clusters
  adopt apply --plan plans/sprint-12 --argocd-context mgmt --repo git@git.example.com:org/gitops.git --open-pr

  # Compute the plan now, push with a token from the environment
  ADOPT_GIT_TOKEN=... adopt apply -n litellm-test --repo https://git.example.com/org/gitops.git`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	o.pr.AddFlags(f)
	o.commitFlags.AddFlags(f)
	o.Git.AddFlags(f)
	o.Hub.AddFlags(f)
	f.StringVar(&o.PlanFile, "plan", "", "the reviewed plan file, or a fleet plan (its directory or fleet.yaml); without it the plan is computed now, as `adopt plan` would")
	f.StringVar(&o.ConfigFile, "config", "", "without --plan: adopt.yaml for the plan computed now (default: ./adopt.yaml if present)")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "without --plan: scan every namespace (the default unless -n is given)")
	f.StringVar(&o.Overrides.ArgoCDNamespace, "argocd-namespace", "", "namespace the Applications are created in (default: the plan's Argo CD namespace)")
	f.StringVar(&o.Overrides.RepoURL, "repo-url", "", "source.repoURL of the Applications (default: the plan's repoURL, else --repo without credentials, or a local path's upstream remote, else origin)")
	f.StringVar(&o.Overrides.AppsDir, "apps-dir", "", "directory for the Application manifests (default: the plan's appsDir)")
	f.StringVar(&o.Secrets, "secrets", o.Secrets, "Secrets: skip (leave out, exclude from the Application) or placeholder (keys only, excluded from sync)")
	f.BoolVar(&o.FixRunbooks, "fix-runbooks", false, "rewrite runbook lines that still kubectl-apply an adopted file by hand")
	f.BoolVar(&o.PushSecrets, "push-secrets", false, "for each Secret the plan adopts as an ExternalSecret (form eso): push its value to the store now and prove, key by key, that the store gives it back, before the pull request (a cluster write; default: finalize --sync pushes after the merge; docs/secrets.md)")
	f.BoolVar(&o.AutoSync, "auto-sync", false, "enable automated sync on the Applications")
	f.BoolVar(&o.Prune, "prune", false, "enable automated prune (needs --auto-sync)")
	f.StringVar(&o.Overrides.DestServer, "dest-server", "", "spec.destination.server of the Applications (default: the plan's destination)")
	f.StringVar(&o.Overrides.DestName, "dest-name", "", "spec.destination.name of the Applications (default: the plan's destination)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.ArgoCDVersion, "argocd-version", "", "Argo CD version the Applications will run on (default: the application controller's image tag, else the version the plan recorded)")
	f.StringVar(&o.CSAMigration, "csa-migration", o.CSAMigration, "ClientSideApplyMigration=false on the Applications: auto (where Argo CD 3.1.0-3.3.1's client-side-apply migration would pass the annotation cap; refuses when the version is unknown), keep (never), disable (always)")
	_ = cmd.RegisterFlagCompletionFunc("csa-migration", cobra.FixedCompletions(apply.CSAModes, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("secrets", cobra.FixedCompletions([]string{string(export.SecretsSkip), string(export.SecretsPlaceholder)}, cobra.ShellCompDirectiveNoFileComp))
	return cmd, o
}

// Complete loads the plan (or adopt.yaml for computing one), the
// credentials, the author and the templates.
func (o *ApplyOptions) Complete(cmd *cobra.Command) error {
	var err error
	if o.scopeNS, err = namespaceScope(cmd, o.ConfigFlags, o.AllNamespaces); err != nil {
		return err
	}
	if o.PlanFile != "" && o.scopeNS != "" {
		return usageErrorf("-n/--namespace shapes a plan computed now; with --plan, the plan records the namespaces it was made for: drop -n")
	}
	if o.PlanFile != "" && fleet.IsIndex(o.PlanFile) {
		return o.completeFleet(cmd.Context())
	}
	if o.PlanFile != "" {
		if o.plan, err = plan.ReadFile(o.PlanFile); err != nil {
			return usageErrorf("--plan: %v", err)
		}
	} else {
		cfg, err := config.Load(o.ConfigFile)
		if err != nil {
			return usageErrorf("%v", err)
		}
		o.Overrides.Config(cfg)
		o.cfg = cfg
	}
	if err := o.completeCommit(); err != nil {
		return err
	}
	c, err := connect(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.cluster = c
	if o.hub, err = o.Hub.connect(o.ConfigFlags); err != nil {
		return err
	}
	return nil
}

// completeCommit resolves the Git credentials, the author and the
// templates.
func (o *ApplyOptions) completeCommit() error {
	o.auth, o.tokenFrom = o.Git.Complete(o.getenv)
	o.Git.Warn(o.ErrOut, o.Repo, o.Quiet)
	return o.commitFlags.Complete()
}

// Validate rejects bad input with one sentence, including flags that
// contradict the plan.
func (o *ApplyOptions) Validate() error {
	if err := o.commitFlags.Validate(); err != nil {
		return err
	}
	switch {
	case o.Secrets != string(export.SecretsSkip) && o.Secrets != string(export.SecretsPlaceholder):
		return usageErrorf("--secrets %q: use skip or placeholder", o.Secrets)
	case o.Prune && !o.AutoSync:
		return usageErrorf("--prune only applies to automated sync: add --auto-sync, or drop --prune")
	case o.PushSecrets && o.DryRun:
		return usageErrorf("--push-secrets writes to the External Secrets store and --dry-run writes nothing: drop one")
	case o.pr.OpenPR && o.NoPush && !o.DryRun:
		return usageErrorf("--open-pr needs the branch pushed: drop --no-push")
	case !slices.Contains(apply.CSAModes, o.CSAMigration):
		return usageErrorf("--csa-migration %q: use auto, keep or disable", o.CSAMigration)
	case o.plan != nil && o.ConfigFile != "":
		return usageErrorf("--config shapes a plan computed now; with --plan, the plan already records adopt.yaml's settings: drop --config")
	}
	if err := o.Overrides.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if o.ArgoCDVersion != "" {
		if _, err := argoapp.VersionFromFlag(o.ArgoCDVersion); err != nil {
			return usageErrorf("%v", err)
		}
	}
	if o.fleet != nil {
		return o.validateFleet()
	}
	if o.plan != nil {
		if err := plan.CheckCluster(o.plan, o.cluster.Config.Host, o.cluster.Context); err != nil {
			return usageErrorf("%v", err)
		}
		if err := o.Overrides.Check(o.plan); err != nil {
			return usageErrorf("%v", err)
		}
		if err := checkHub(o.plan, o.hub); err != nil {
			return err
		}
	}
	return o.pr.Validate()
}

// Run writes the adoption into the repo: the plan engine (or the fleet's),
// then the printer, then the pull request. An interrupt (Ctrl-C) or
// SIGTERM cancels the run, so that the clone's temporary directory is
// removed before adopt exits; a second one kills it at once.
func (o *ApplyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	sigCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(sigCtx, stop)
	err := o.run(sigCtx)
	if err != nil && sigCtx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("interrupted: %w. Run the same command again to finish", err)
	}
	return err
}

// gcPercent is apply's (see applyGCPercent).
func (o *ApplyOptions) gcPercent() int { return applyGCPercent }

func (o *ApplyOptions) run(ctx context.Context) error {
	if o.fleet != nil {
		return o.runFleet(ctx)
	}
	if o.plan == nil && !o.Quiet {
		fmt.Fprintln(o.ErrOut, "no --plan given: computing the plan from the cluster now, as `adopt plan` would; review it with `adopt plan --out plan.yaml` first for anything that matters")
	}
	res, err := apply.Run(ctx, o.runOptions())
	if res != nil {
		o.warn(res.Warnings)
	}
	if err != nil {
		return contractOr(err)
	}
	if res.Commit == nil {
		fmt.Fprintln(o.Out, "the plan proposes no Application: nothing to write")
		return nil
	}
	o.noteAuthor()
	printer.Apply(o.Out, printer.ApplyResult{Summary: res.Summary, Repo: res.Checkout.Repo.URL(), Base: res.Checkout.Base, Result: res.Commit, DryRun: o.DryRun, CloneDir: res.Checkout.Dir})
	return o.openPR(ctx, res.PRInput(o.PlanFile, o.Templates))
}
