package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/runbook"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

// ApplyOptions are the inputs of `adopt apply`.
type ApplyOptions struct {
	ConfigFlags     *genericclioptions.ConfigFlags
	PlanFile        string
	AllNamespaces   bool
	ArgoCDNamespace string
	Repo            string
	RepoURL         string
	Branch          string
	Base            string
	AppsDir         string
	DryRun          bool
	NoPush          bool
	Force           bool
	Author          string
	GitToken        string
	GitUser         string
	SSHKey          string
	KnownHosts      string
	Templates       string
	Secrets         string
	FixRunbooks     bool
	AutoSync        bool
	Prune           bool
	DestServer      string
	DestName        string
	Quiet           bool
	ArgoCDVersion   string
	CSAMigration    string
	pr              prOptions

	genericiooptions.IOStreams
	cluster    *cluster
	scopeNS    string
	plan       *plan.Plan
	onTheFly   bool
	author     gitops.Signature
	authorNote string
	auth       gitops.Auth
	tpl        *templates.Set
	version    argoapp.DetectedVersion
}

func newApplyCmd(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ApplyOptions{ConfigFlags: flags, IOStreams: streams, ArgoCDNamespace: "argocd", AppsDir: "argocd/apps/",
		Secrets: string(export.SecretsSkip), DestServer: argoapp.InClusterServer, CSAMigration: csaAuto}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Write the proposed Applications and clean manifests into the GitOps repo, on a branch",
		Long: `Turn a reviewed adoption plan into one commit on a branch of the GitOps repo.
Nothing in the cluster changes: apply only reads the live objects it exports.

For each proposed Application it renders an Argo CD Application (server-side
apply, no automated sync or prune unless asked, no resources finalizer) into
--apps-dir. Objects whose manifest is already in Git are pointed at, not
copied; the others are exported as clean manifests into the Application's
source path. Secrets are never written with their values.

Running it again with the same plan makes no new commit; a changed plan adds
one. When someone else pushed to the branch meanwhile, the commit is rebuilt
on top and pushed again (never forced unless --force).`,
		Example: `  # Apply a reviewed plan to a local clone (no network)
  adopt apply --plan plan.yaml --repo ../gitops

  # Show the diff it would commit, write nothing
  adopt apply --plan plan.yaml --repo https://git.example.com/org/gitops.git --dry-run

  # Compute the plan now, push with a token from the environment
  ADOPT_GIT_TOKEN=... adopt apply -n litellm-test --repo https://git.example.com/org/gitops.git`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	f := cmd.Flags()
	o.pr.AddFlags(f)
	f.StringVar(&o.PlanFile, "plan", "", "the reviewed plan file; without it the plan is computed now, as `adopt plan` would")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "without --plan: scan every namespace (the default unless -n is given)")
	f.StringVar(&o.ArgoCDNamespace, "argocd-namespace", o.ArgoCDNamespace, "namespace the Applications are created in (Argo CD's control plane)")
	f.StringVar(&o.Repo, "repo", "", "the GitOps repo: an https://, ssh:// or git@host:path URL, or a local path (required)")
	f.StringVar(&o.RepoURL, "repo-url", "", "source.repoURL written into the Applications (default: --repo without credentials; for a local path, its origin remote)")
	f.StringVar(&o.Branch, "branch", "", "branch to write (default adopt/<plan id>)")
	f.StringVar(&o.Base, "base", "", "branch a new branch starts from, and the Applications' targetRevision (default: the repo's default branch)")
	f.StringVar(&o.AppsDir, "apps-dir", o.AppsDir, "directory for the Application manifests")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the unified diff that would be committed, and write nothing")
	f.BoolVar(&o.NoPush, "no-push", false, "commit in a temporary clone and do not push")
	f.BoolVar(&o.Force, "force", false, "reset the branch onto --base and force-push it")
	f.StringVar(&o.Author, "author", "", `commit author "Name <email>" (default: git config user.name and user.email)`)
	f.StringVar(&o.GitToken, "git-token", "", "HTTPS access token (default $ADOPT_GIT_TOKEN)")
	f.StringVar(&o.GitUser, "git-user", "", "user name for HTTPS basic auth with --git-token")
	f.StringVar(&o.SSHKey, "ssh-key", "", "private key for SSH URLs (default: the SSH agent)")
	f.StringVar(&o.KnownHosts, "known-hosts", "", "known_hosts file for SSH host key checking (default $SSH_KNOWN_HOSTS or ~/.ssh/known_hosts)")
	f.StringVar(&o.Templates, "templates", "", "directory overriding "+templates.Application+" and/or "+templates.CommitMessage)
	f.StringVar(&o.Secrets, "secrets", o.Secrets, "Secrets: skip (leave out, exclude from the Application) or placeholder (keys only, excluded from sync)")
	f.BoolVar(&o.FixRunbooks, "fix-runbooks", false, "rewrite runbook lines that still kubectl-apply an adopted file by hand")
	f.BoolVar(&o.AutoSync, "auto-sync", false, "enable automated sync on the Applications")
	f.BoolVar(&o.Prune, "prune", false, "enable automated prune (needs --auto-sync)")
	f.StringVar(&o.DestServer, "dest-server", o.DestServer, "spec.destination.server of the Applications")
	f.StringVar(&o.DestName, "dest-name", "", "spec.destination.name of the Applications (instead of --dest-server)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.ArgoCDVersion, "argocd-version", "", "Argo CD version the Applications will run on (default: the application controller's image tag, else the version the plan recorded)")
	f.StringVar(&o.CSAMigration, "csa-migration", o.CSAMigration, "ClientSideApplyMigration=false on the Applications: auto (where Argo CD 3.1.0-3.3.1's client-side-apply migration would pass the annotation cap), keep (never), disable (always)")
	_ = cmd.RegisterFlagCompletionFunc("csa-migration", cobra.FixedCompletions([]string{csaAuto, csaKeep, csaDisable}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete loads the plan (or says it will compute one), the credentials,
// the author and the templates.
func (o *ApplyOptions) Complete(cmd *cobra.Command) error {
	if cmd.Flags().Changed("namespace") && o.AllNamespaces {
		return usageErrorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	if cmd.Flags().Changed("namespace") {
		o.scopeNS = *o.ConfigFlags.Namespace
	}
	if o.PlanFile != "" {
		data, err := os.ReadFile(o.PlanFile)
		if err != nil {
			return usageErrorf("cannot read --plan %s: %v", o.PlanFile, err)
		}
		if o.plan, err = plan.Unmarshal(data); err != nil {
			return usageErrorf("--plan %s: %v", o.PlanFile, err)
		}
	} else {
		o.onTheFly = true
	}
	if o.GitToken == "" {
		o.GitToken = os.Getenv("ADOPT_GIT_TOKEN")
	}
	o.auth = gitops.Auth{Token: o.GitToken, Username: o.GitUser, SSHKeyFile: o.SSHKey, KnownHostsFile: o.KnownHosts}
	if o.Author != "" {
		a, err := gitops.ParseAuthor(o.Author)
		if err != nil {
			return usageErrorf("--author: %v", err)
		}
		o.author = a
	} else if a, ok := gitops.ConfiguredAuthor(localDir(o.Repo)); ok {
		o.author, o.authorNote = a, "from git config"
	} else {
		o.author = gitops.Signature{Name: "adopt", Email: "adopt@localhost"}
		o.authorNote = "no --author and no git config user.name/user.email; using adopt <adopt@localhost>"
	}
	tpl, err := templates.New(o.Templates)
	if err != nil {
		return usageErrorf("%v", err)
	}
	o.tpl = tpl
	c, err := connect(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.cluster = c
	if o.plan != nil {
		if err := plan.CheckCluster(o.plan, c.rest.Host, c.context); err != nil {
			return usageErrorf("%v", err)
		}
	}
	return nil
}

// localDir is repo when it is a local path, else "".
func localDir(repo string) string {
	if repo == "" || strings.Contains(repo, "://") || (strings.Contains(repo, "@") && strings.Contains(repo, ":")) {
		return ""
	}
	return repo
}

// Validate rejects bad input with one sentence.
func (o *ApplyOptions) Validate() error {
	switch {
	case o.Repo == "":
		return usageErrorf("--repo is required: the GitOps repo URL or a local path")
	case o.Secrets != string(export.SecretsSkip) && o.Secrets != string(export.SecretsPlaceholder):
		return usageErrorf("--secrets %q: use skip or placeholder", o.Secrets)
	case o.Prune && !o.AutoSync:
		return usageErrorf("--prune only applies to automated sync: add --auto-sync, or drop --prune")
	case o.DestName != "" && o.DestServer != argoapp.InClusterServer && o.DestServer != "":
		return usageErrorf("--dest-name and --dest-server cannot be used together")
	case o.AppsDir == "" || path.IsAbs(o.AppsDir) || strings.HasPrefix(path.Clean(o.AppsDir), ".."):
		return usageErrorf("--apps-dir %q must be a relative path inside the repo", o.AppsDir)
	case o.DryRun && o.Force:
		return usageErrorf("--dry-run and --force cannot be used together")
	case o.pr.OpenPR && o.NoPush && !o.DryRun:
		return usageErrorf("--open-pr needs the branch pushed: drop --no-push")
	case o.CSAMigration != csaAuto && o.CSAMigration != csaKeep && o.CSAMigration != csaDisable:
		return usageErrorf("--csa-migration %q: use auto, keep or disable", o.CSAMigration)
	}
	if o.ArgoCDVersion != "" {
		if _, err := argoapp.VersionFromFlag(o.ArgoCDVersion); err != nil {
			return usageErrorf("%v", err)
		}
	}
	return o.pr.Validate()
}

// exported is one object prepared for the repo.
type exported struct {
	obj plan.Object
	// file is the repo path of the manifest (exported or already in Git).
	file string
	// data is the exported manifest; nil when the object is in Git or skipped.
	data []byte
	// secret is set for Secrets: "skip" or "placeholder".
	secret string
	keys   []string
}

// Run writes the adoption into the repo.
func (o *ApplyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p := o.plan
	if o.onTheFly {
		if !o.Quiet {
			fmt.Fprintln(o.ErrOut, "no --plan given: computing the plan from the cluster now, as `adopt plan` would; review it with `adopt plan --out plan.yaml` first for anything that matters")
		}
		cfg, err := config.Load("")
		if err != nil {
			return usageErrorf("%v", err)
		}
		po := &PlanOptions{ConfigFlags: o.ConfigFlags, ArgoCDNamespace: o.ArgoCDNamespace, IOStreams: o.IOStreams,
			cluster: o.cluster, scopeNS: o.scopeNS, cfg: cfg, GroupBy: cfg.GroupBy,
			gitSrc: gitindex.Source{Location: o.Repo, Username: o.GitUser, Password: o.GitToken}, Repo: o.Repo,
			ArgoCDVersion: o.ArgoCDVersion}
		if p, err = po.build(ctx); err != nil {
			return err
		}
	}
	if err := o.detectVersion(ctx, p); err != nil {
		return err
	}
	if w := versionMismatch(p, o.version); w != "" {
		fmt.Fprintln(o.ErrOut, "warning: "+w)
	}
	if len(p.Applications) == 0 {
		fmt.Fprintln(o.Out, "the plan proposes no Application: nothing to write")
		return nil
	}
	id := adoptionID(p)
	objs, err := o.export(ctx, p)
	if err != nil {
		return err
	}

	cloneDir := ""
	if o.NoPush && !o.DryRun {
		if cloneDir, err = os.MkdirTemp("", "adopt-apply-"); err != nil {
			return err
		}
	}
	repo, err := gitops.Clone(ctx, gitops.CloneOptions{URL: o.Repo, Auth: o.auth, Dir: cloneDir})
	if err != nil {
		return err
	}
	base := o.Base
	if base == "" {
		if base = repo.DefaultBranch(); base == "" {
			return usageErrorf("cannot tell the default branch of %s: pass --base", repo.URL())
		}
	}
	branch := o.Branch
	if branch == "" {
		branch = "adopt/" + id
	}
	repoURL := o.RepoURL
	if repoURL == "" {
		repoURL = repo.SourceURL()
	}
	appTpl, err := o.tpl.Load(templates.Application)
	if err != nil {
		return err
	}
	msgTpl, err := o.tpl.Load(templates.CommitMessage)
	if err != nil {
		return err
	}

	var findings []runbook.Finding
	var apps []appSummary
	build := func(r *gitops.Repo) (gitops.Content, error) {
		files := map[string][]byte{}
		apps = apps[:0]
		for _, a := range p.Applications {
			s, err := o.renderApp(r, p, id, a, objs, repoURL, base, appTpl, files)
			if err != nil {
				return gitops.Content{}, err
			}
			apps = append(apps, s)
		}
		var err error
		if findings, err = o.runbooks(r, objs, id, files); err != nil {
			return gitops.Content{}, err
		}
		msg, err := commitMessage(msgTpl, p, id, apps, objs, findings, o.AutoSync)
		if err != nil {
			return gitops.Content{}, err
		}
		return gitops.Content{Files: files, Message: msg}, nil
	}
	res, err := repo.Publish(ctx, gitops.Change{Branch: branch, Base: base, Build: build, Author: o.author},
		gitops.PublishOptions{NoPush: o.NoPush || o.DryRun, Force: o.Force})
	if err != nil {
		return err
	}
	o.report(p, id, repo, base, res, apps, objs, findings, cloneDir)
	if !o.pr.OpenPR || o.NoPush || o.DryRun {
		return nil
	}
	in := PRInput{
		RepoURL: repo.URL(), Head: branch, Base: base, Token: o.GitToken,
		Plan: p, PlanPath: o.PlanFile, TemplatesDir: o.Templates, Out: o.Out,
		Exported: map[string]string{}, Secrets: map[string]string{}, CSAMigration: map[string]string{},
	}
	for _, f := range findings {
		in.Runbooks = append(in.Runbooks, f.String())
	}
	for _, a := range apps {
		if a.CSAMigration != "" {
			in.CSAMigration[a.Name] = a.CSAMigration
		}
	}
	for ref, e := range objs {
		switch {
		case e.secret != "":
			in.Secrets[ref] = "Secret values are never written to Git (--secrets=" + e.secret + "); give it a secret-management source such as SealedSecret, ExternalSecret or SOPS"
		case e.data != nil:
			in.Exported[ref] = e.file
		}
	}
	_, err = o.pr.Open(ctx, in)
	return err
}

// export reads every object that is not in Git and cleans it. Secrets are
// read only to list their keys, and only for --secrets=placeholder.
func (o *ApplyOptions) export(ctx context.Context, p *plan.Plan) (map[string]*exported, error) {
	out := map[string]*exported{}
	eo := export.Options{InstanceLabelKey: p.Tracking.InstanceLabelKey}
	for _, obj := range p.Objects {
		e := &exported{obj: obj}
		out[obj.Ref()] = e
		if export.IsSecret(obj.Group, obj.Kind) {
			e.secret = o.Secrets
		}
		if obj.Git != nil {
			e.file = obj.Git.Path
			continue
		}
		if e.secret == string(export.SecretsSkip) {
			continue
		}
		gvr := schema.GroupVersionResource{Group: obj.Group, Version: obj.Version, Resource: obj.Resource}
		live, err := export.Fetch(ctx, o.cluster.clients.Dynamic, gvr, obj.Namespace, obj.Name)
		if err != nil {
			return nil, fmt.Errorf("read %s to export it: %w", obj.Ref(), o.cluster.explain(err))
		}
		var clean *unstructured.Unstructured
		if e.secret != "" {
			e.keys = export.SecretKeys(live)
			clean = export.SecretPlaceholder(live, eo)
		} else if clean, err = export.Clean(live, eo); err != nil {
			return nil, err
		}
		live = nil
		if e.data, err = export.Marshal(clean.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", obj.Ref(), err)
		}
	}
	return out, nil
}

// appSummary is what the commit message and the report say per Application.
type appSummary struct {
	Name      string
	Namespace string
	Path      string
	File      string
	Objects   []objectSummary
	Notes     []string
	// CSAMigration says why the Application sets
	// ClientSideApplyMigration=false ("" when it does not).
	CSAMigration string
}

type objectSummary struct {
	Ref   string
	Where string
}

// renderApp places one Application's objects and renders its manifest into
// files.
func (o *ApplyOptions) renderApp(r *gitops.Repo, p *plan.Plan, id string, a plan.Application, objs map[string]*exported, repoURL, base string, tpl *template.Template, files map[string][]byte) (appSummary, error) {
	s := appSummary{Name: a.Name, Namespace: a.Namespace, Path: a.SourcePath}
	var inGit, exportedHere []*exported
	for _, ref := range a.Objects {
		e := objs[ref]
		if e == nil {
			return s, usageErrorf("plan is inconsistent: Application %s lists %s, which is not among its objects. Re-run adopt plan", a.Name, ref)
		}
		if e.obj.Git != nil {
			inGit = append(inGit, e)
		} else {
			exportedHere = append(exportedHere, e)
		}
	}
	// An Application whose objects are all in Git points at their directory.
	srcPath := strings.TrimSuffix(a.SourcePath, "/")
	if len(exportedHere) == 0 && len(inGit) > 0 {
		dirs := map[string]bool{}
		for _, e := range inGit {
			dirs[path.Dir(e.file)] = true
		}
		if len(dirs) == 1 {
			srcPath = path.Dir(inGit[0].file)
		}
	}
	s.Path = srcPath
	var adoptedFiles, exclude []string
	for _, e := range exportedHere {
		name := export.FileName(e.obj.Group, e.obj.Kind, e.obj.Name)
		switch {
		case e.secret == string(export.SecretsSkip):
			s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "left out (Secret: needs SealedSecret, ExternalSecret or SOPS)"})
			continue
		case e.secret == string(export.SecretsPlaceholder):
			e.file = path.Join(srcPath, name)
			files[e.file] = e.data
			exclude = append(exclude, name)
			s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "placeholder " + e.file + " (keys only, excluded from sync)"})
			continue
		}
		e.file = path.Join(srcPath, name)
		files[e.file] = e.data
		adoptedFiles = append(adoptedFiles, name)
		s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "exported to " + e.file})
	}
	for _, e := range inGit {
		if path.Dir(e.file) != srcPath {
			s.Notes = append(s.Notes, fmt.Sprintf("%s is in Git at %s, outside the Application's path %s; it is not covered", e.obj.Ref(), e.file, srcPath))
			s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "in Git at " + e.file + " (NOT covered: outside " + srcPath + ")"})
			continue
		}
		if e.secret != "" {
			exclude = append(exclude, path.Base(e.file))
			s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "in Git at " + e.file + ", excluded (Secret)"})
			continue
		}
		adoptedFiles = append(adoptedFiles, path.Base(e.file))
		s.Objects = append(s.Objects, objectSummary{e.obj.Ref(), "in Git at " + e.file})
	}
	include := a.Include
	if len(include) == 0 {
		others, err := otherManifests(r, srcPath, adoptedFiles, exclude, files)
		if err != nil {
			return s, err
		}
		if others {
			include = adoptedFiles
		}
	}
	sort.Strings(include)
	sort.Strings(exclude)
	opts := []string{argoapp.SyncOptionServerSideApply}
	if add, why := o.csaMigration(p, a); add {
		opts = append(opts, argoapp.SyncOptionNoCSAMigration)
		s.CSAMigration = why
	} else if why != "" {
		s.Notes = append(s.Notes, why)
	}
	d := argoapp.ApplicationData{
		Name: a.Name, Namespace: o.ArgoCDNamespace, Project: a.Project, PlanID: id, Objects: a.Objects,
		RepoURL: repoURL, Path: srcPath, TargetRevision: base,
		Include: argoapp.Glob(include), Exclude: argoapp.Glob(exclude),
		DestinationServer: o.DestServer, DestinationName: o.DestName, DestinationNamespace: a.Namespace,
		AutoSync: o.AutoSync, Prune: o.Prune, SyncOptions: opts,
	}
	if d.DestinationName != "" {
		d.DestinationServer = ""
	}
	if d.Project == "" {
		d.Project = "default"
	}
	out, err := argoapp.RenderApplication(tpl, d)
	if err != nil {
		return s, err
	}
	s.File = path.Join(o.AppsDir, a.Name+".yaml")
	files[s.File] = out
	return s, nil
}

// otherManifests reports whether dir holds manifests besides the adopted
// and excluded ones, counting files already in the repo and files being
// written now.
func otherManifests(r *gitops.Repo, dir string, adopted, excluded []string, files map[string][]byte) (bool, error) {
	known := map[string]bool{}
	for _, n := range append(append([]string{}, adopted...), excluded...) {
		known[n] = true
	}
	all, err := r.Files()
	if err != nil {
		return false, err
	}
	for f := range files {
		all = append(all, f)
	}
	for _, f := range all {
		if path.Dir(f) != dir || known[path.Base(f)] {
			continue
		}
		switch strings.ToLower(path.Ext(f)) {
		case ".yaml", ".yml", ".json":
			return true, nil
		}
	}
	return false, nil
}

// runbooks scans the repo's Markdown and shell files for hand applies of
// adopted manifests that are in Git, and rewrites them with --fix-runbooks.
func (o *ApplyOptions) runbooks(r *gitops.Repo, objs map[string]*exported, id string, files map[string][]byte) ([]runbook.Finding, error) {
	var targets []runbook.Target
	for _, e := range objs {
		if e.obj.Git != nil {
			targets = append(targets, runbook.Target{Path: e.obj.Git.Path, App: e.obj.App})
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Path < targets[j].Path })
	all, err := r.Files()
	if err != nil {
		return nil, err
	}
	var findings []runbook.Finding
	for _, f := range all {
		if !runbook.IsRunbook(f) {
			continue
		}
		data, err := r.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s in %s: %w", f, r.URL(), err)
		}
		fs := runbook.Scan(f, data, targets)
		findings = append(findings, fs...)
		if o.FixRunbooks && len(fs) > 0 {
			files[f] = runbook.Fix(data, fs, id)
		}
	}
	return findings, nil
}

// commitMessage renders the commit message template.
func commitMessage(t *template.Template, p *plan.Plan, id string, apps []appSummary, objs map[string]*exported, findings []runbook.Finding, autoSync bool) (string, error) {
	var secrets, rb []string
	for _, e := range objs {
		if e.secret == "" {
			continue
		}
		s := e.obj.Ref()
		if len(e.keys) > 0 {
			s += " (keys: " + strings.Join(e.keys, ", ") + ")"
		}
		secrets = append(secrets, s)
	}
	sort.Strings(secrets)
	for _, f := range findings {
		rb = append(rb, f.String())
	}
	data := map[string]any{
		"PlanID": id, "Cluster": p.Cluster.Server, "Applications": apps, "Objects": len(p.Objects),
		"Secrets": secrets, "Runbooks": rb, "AutoSync": autoSync,
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render commit message: %w", err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// report prints what apply did.
func (o *ApplyOptions) report(p *plan.Plan, id string, repo *gitops.Repo, base string, res *gitops.Result, apps []appSummary, objs map[string]*exported, findings []runbook.Finding, cloneDir string) {
	w := o.Out
	if o.DryRun {
		if res.Changed {
			fmt.Fprint(w, res.Diff)
		}
		fmt.Fprintf(w, "dry run: plan %s on branch %s of %s (from %s): %d file(s) would change; nothing was written\n", id, res.Branch, repo.URL(), base, len(res.Paths))
		return
	}
	if o.authorNote != "" && !o.Quiet {
		fmt.Fprintf(o.ErrOut, "author %s <%s> (%s)\n", o.author.Name, o.author.Email, o.authorNote)
	}
	fmt.Fprintf(w, "plan %s: %d Application(s), %d object(s)\n", id, len(apps), len(p.Objects))
	for _, a := range apps {
		fmt.Fprintf(w, "  Application %s -> %s (manifest %s)\n", a.Name, a.Path, a.File)
		for _, ob := range a.Objects {
			fmt.Fprintf(w, "    %s: %s\n", ob.Ref, ob.Where)
		}
		if a.CSAMigration != "" {
			fmt.Fprintf(w, "    %s: %s\n", argoapp.SyncOptionNoCSAMigration, a.CSAMigration)
		}
		for _, n := range a.Notes {
			fmt.Fprintf(w, "    warning: %s\n", n)
		}
	}
	var secrets []string
	for _, e := range objs {
		if e.secret != "" {
			secrets = append(secrets, e.obj.Ref())
		}
	}
	sort.Strings(secrets)
	for _, s := range secrets {
		fmt.Fprintf(w, "  secret %s left out of sync: give it a secret-management source (SealedSecret, ExternalSecret, SOPS)\n", s)
	}
	for _, f := range findings {
		fix := ""
		if o.FixRunbooks {
			fix = " (rewritten)"
		}
		fmt.Fprintf(w, "  runbook %s%s\n", f, fix)
	}
	if len(findings) > 0 && !o.FixRunbooks {
		fmt.Fprintln(w, "  run again with --fix-runbooks to rewrite those lines")
	}
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "branch %s of %s is up to date at %s: no new commit\n", res.Branch, repo.URL(), short(res.Commit))
	case res.Pushed:
		how := "pushed"
		if res.Attempts > 1 {
			how = fmt.Sprintf("pushed after rebuilding on a concurrent push (%d attempts)", res.Attempts)
		}
		fmt.Fprintf(w, "committed %s on branch %s of %s (from %s), %d file(s); %s\n", short(res.Commit), res.Branch, repo.URL(), base, len(res.Paths), how)
		for _, f := range res.Paths {
			fmt.Fprintf(w, "  wrote %s\n", f)
		}
	default:
		fmt.Fprintf(w, "committed %s on branch %s in %s, not pushed (--no-push); push it with: git -C %s push origin %s\n", short(res.Commit), res.Branch, cloneDir, cloneDir, res.Branch)
	}
	if res.Changed || !o.DryRun {
		fmt.Fprintf(w, "next: review and merge %s, let Argo CD sync, then run adopt finalize\n", res.Branch)
	}
}

// adoptionID is a short content hash naming the adoption: the cluster, and
// which objects each proposed Application adopts from which path.
// Measurements (budgets, provenance) are left out, so the same adoption keeps
// its id, and its branch, while the live objects change.
func adoptionID(p *plan.Plan) string {
	h := sha256.New()
	fmt.Fprintf(h, "cluster %s\n", p.Cluster.Server)
	for _, a := range p.Applications {
		fmt.Fprintf(h, "app %s %s %s\n", a.Name, a.Namespace, a.SourcePath)
		for _, o := range a.Objects {
			fmt.Fprintf(h, "  %s\n", o)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// --csa-migration values.
const (
	csaAuto    = "auto"
	csaKeep    = "keep"
	csaDisable = "disable"
)

// detectVersion finds the Argo CD version the Applications will run on:
// --argocd-version, else the application controller's image tag in
// --argocd-namespace, else the version the plan recorded.
func (o *ApplyOptions) detectVersion(ctx context.Context, p *plan.Plan) error {
	if o.ArgoCDVersion != "" {
		v, err := argoapp.VersionFromFlag(o.ArgoCDVersion)
		if err != nil {
			return usageErrorf("%v", err)
		}
		o.version = v
		return nil
	}
	kube, err := kubernetes.NewForConfig(o.cluster.rest)
	if err != nil {
		return err
	}
	v, err := argoapp.VersionFromCluster(ctx, kube, o.ArgoCDNamespace)
	if err != nil {
		return o.cluster.explain(err)
	}
	if !v.Version.Known() && p.Tracking.Version != "" {
		if pv, err := argoapp.ParseVersion(p.Tracking.Version); err == nil {
			src := p.Tracking.VersionSource
			if src == "" {
				src = "unknown source"
			}
			v = argoapp.DetectedVersion{Version: pv, Raw: p.Tracking.Version, Source: fmt.Sprintf("plan %s (%s)", p.ID, src)}
		}
	}
	o.version = v
	return nil
}

// versionMismatch warns when the plan was made for an Argo CD version that
// differs from apply's in what the predictions depend on: the default
// tracking method (what Argo CD writes into each object) or the
// client-side-apply migration trap.
func versionMismatch(p *plan.Plan, v argoapp.DetectedVersion) string {
	pv, err := argoapp.ParseVersion(p.Tracking.Version)
	if err != nil || !v.Version.Known() {
		return ""
	}
	if argoapp.DefaultTrackingMethod(pv) == argoapp.DefaultTrackingMethod(v.Version) && argoapp.CSAMigrationTrap(pv) == argoapp.CSAMigrationTrap(v.Version) {
		return ""
	}
	return fmt.Sprintf("plan %s was made for Argo CD %s (tracking %q), but this apply targets %s: its client-side-apply migration predictions may not hold; run adopt plan --argocd-version %s again",
		p.ID, pv, p.Tracking.Method, v, v.Version)
}

// csaMigration decides whether Application a gets
// ClientSideApplyMigration=false, and says why; when it does not but an
// object is at risk, why is a warning for the report.
func (o *ApplyOptions) csaMigration(p *plan.Plan, a plan.Application) (bool, string) {
	var trapped []string
	for _, ref := range a.Objects {
		if ob := p.Object(ref); ob != nil && ob.CSAMigration.Fails {
			trapped = append(trapped, fmt.Sprintf("%s (%d B)", ref, ob.CSAMigration.Bytes))
		}
	}
	v := o.version
	risk := fmt.Sprintf("the client-side-apply migration of Argo CD 3.1.0-3.3.1 writes last-applied again and would pass the %d B annotation cap for %s, failing the first sync", budget.AnnotationCap, strings.Join(trapped, ", "))
	switch {
	case o.CSAMigration == csaDisable:
		return true, "set by --csa-migration=disable; adopt finalize migrates field ownership instead"
	case len(trapped) == 0:
		return false, ""
	case o.CSAMigration == csaKeep && argoapp.CSAMigrationTrap(v.Version):
		return false, fmt.Sprintf("on %s, %s; --csa-migration=keep leaves ClientSideApplyMigration on", v, risk)
	case o.CSAMigration == csaKeep:
		return false, ""
	case argoapp.CSAMigrationTrap(v.Version):
		return true, fmt.Sprintf("on %s, %s; with the migration off, the first sync succeeds and adopt finalize migrates field ownership instead", v, risk)
	case !v.Version.Known():
		return false, fmt.Sprintf("%s: if it is 3.1.0-3.3.1, %s; pass --argocd-version, or --csa-migration=disable", v, risk)
	}
	return false, ""
}
