package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
)

// commitFlags say where and how apply commits: the repository and its
// branches, the author and templates, and whether to push.
type commitFlags struct {
	Repo      string
	Branch    string
	Base      string
	DryRun    bool
	NoPush    bool
	Force     bool
	Author    string
	Templates string

	author     gitops.Signature
	authorNote string
	tpl        *templates.Set
}

// AddFlags registers --repo, --branch, --base, --dry-run, --no-push,
// --force, --author and --templates.
func (c *commitFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&c.Repo, "repo", "", "the GitOps repo: an https:// or ssh:// URL, git@host:path, or a local path (required)")
	f.StringVar(&c.Branch, "branch", "", "branch to write (default adopt/<plan id>)")
	f.StringVar(&c.Base, "base", "", "branch a new branch starts from, and the Applications' targetRevision (default: the repo's default branch)")
	f.BoolVar(&c.DryRun, "dry-run", false, "print the unified diff that would be committed, and write nothing")
	f.BoolVar(&c.NoPush, "no-push", false, "commit in a temporary clone and do not push")
	f.BoolVar(&c.Force, "force", false, "reset the branch onto --base and force-push it")
	f.StringVar(&c.Author, "author", "", `commit author "Name <email>" (default: git config user.name and user.email)`)
	f.StringVar(&c.Templates, "templates", "", "directory overriding "+templates.Application+" and/or "+templates.CommitMessage)
}

// Complete resolves the author and loads the templates.
func (c *commitFlags) Complete() error {
	var err error
	if c.author, c.authorNote, err = gitops.ChooseAuthor(c.Author, c.Repo); err != nil {
		return usageErrorf("--author: %v", err)
	}
	if c.tpl, err = templates.New(c.Templates); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

// Validate needs a repository apply can parse and refuses --force with
// --dry-run.
func (c *commitFlags) Validate() error {
	switch {
	case c.Repo == "":
		return usageErrorf("--repo is required: the GitOps repo URL or a local path")
	case c.DryRun && c.Force:
		return usageErrorf("--dry-run and --force cannot be used together")
	}
	if _, err := gitops.ParseLocation(c.Repo); err != nil {
		return usageErrorf("--repo: %v", err)
	}
	return nil
}

// checkout is what --repo, --base and --no-push say to clone: with a
// working tree for --no-push (kept for review), else a private temporary
// object store that apply removes.
func (c *commitFlags) checkout(auth gitops.Auth) apply.CheckoutOptions {
	return apply.CheckoutOptions{URL: c.Repo, Auth: auth, Base: c.Base, OnDisk: c.NoPush && !c.DryRun}
}

// pushes reports whether the commit is pushed.
func (c *commitFlags) pushes() bool { return !c.NoPush && !c.DryRun }

// runOptions are the plan engine's inputs: the plan (or how to compute
// it now, with the content flags already folded into adopt.yaml), where
// its objects and the Argo CD version are read, and how to write.
func (o *ApplyOptions) runOptions() apply.RunOptions {
	ro := apply.RunOptions{Plan: o.plan, Cluster: applyCluster(o.cluster), ArgoCDVersion: o.ArgoCDVersion,
		Render: o.render(), Checkout: o.checkout(o.auth), Write: o.writeOptions()}
	if o.hub != nil {
		ro.Hub = o.hub.Kube
	}
	if o.plan == nil {
		argoNS := o.Overrides.ArgoCDNamespace
		if argoNS == "" {
			argoNS = argoapp.DefaultNamespace
		}
		ro.Scan = scanOptions(o.cluster, o.scopeNS, o.cfg, argoNS, o.ArgoCDVersion, gitindex.Source{Location: o.Repo, Auth: o.auth}, o.getenv)
		ro.Scan.Hub = scanHub(o.hub)
	}
	return ro
}

// applyCluster is the apply engine's view of c: where a plan's objects
// are read, and how its errors are explained.
func applyCluster(c *cluster) apply.Cluster {
	return apply.Cluster{Dynamic: c.Clients.Dynamic, Core: c.Clients.Core, Kube: c.Kube, Explain: c.Explain}
}

// render is how the flags say every plan's Applications are written.
func (o *ApplyOptions) render() apply.RenderOptions {
	return apply.RenderOptions{Secrets: export.SecretMode(o.Secrets), FixRunbooks: o.FixRunbooks, AutoSync: o.AutoSync, Prune: o.Prune,
		CSAMigration: apply.CSAMode(o.CSAMigration), Templates: o.tpl, PushSecrets: o.PushSecrets}
}

// writeOptions are how the flags say the change is committed.
func (o *ApplyOptions) writeOptions() apply.WriteOptions {
	return apply.WriteOptions{Branch: o.Branch, RepoURL: o.Overrides.RepoURL, Author: o.author, DryRun: o.DryRun, NoPush: o.NoPush, Force: o.Force}
}

// warn prints the engine's warnings, one line each.
func (o *ApplyOptions) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(o.ErrOut, "warning: "+w)
	}
}

// noteAuthor tells the author apply chose, once the commit is made.
func (o *ApplyOptions) noteAuthor() {
	if o.authorNote != "" && !o.Quiet && !o.DryRun {
		fmt.Fprintf(o.ErrOut, "author %s <%s> (%s)\n", o.author.Name, o.author.Email, o.authorNote)
	}
}

// openPR opens (or updates) the pull request for the pushed branch when
// --open-pr asks for one.
func (o *ApplyOptions) openPR(ctx context.Context, in apply.PRInput) error {
	if !o.pr.OpenPR || !o.pushes() {
		return nil
	}
	_, err := o.pr.Open(ctx, in, o.auth.Token, o.tokenFrom, o.Out)
	return err
}

// contractOr gives a plan or override the engine refused exit code 2.
func contractOr(err error) error {
	var ce *apply.ContractError
	if errors.As(err, &ce) {
		return usageErrorf("%v", err)
	}
	return err
}
