// Package apply owns `adopt apply`'s engine: it turns a reviewed
// AdoptionPlan into the content of one commit in the GitOps repo (the Argo CD
// Applications, the clean exports of objects not in Git, rewritten runbook
// lines and the commit message) plus a summary of what it placed where.
//
// The plan is the contract: every setting it records (Argo CD namespace,
// apps directory, export directory, project, destination, repoURL, the
// objects of each Application) is rendered as recorded. A caller's override
// that contradicts the plan is refused (see Overrides.Check); nothing here
// re-derives a setting from a default.
//
// It reads live objects only to export them (and a Secret the plan adopts
// as a SealedSecret only to seal it, in memory, asking the controller to
// verify the result; one adopted in the SOPS form only to have the sops
// CLI encrypt it, the plaintext on its stdin), never puts a Secret's
// values in its output, and never prints. It writes to the cluster only
// when asked (Options.PushSecrets, --push-secrets): esoform.Push's own
// objects, removed once proven, and the store's key.
package apply

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/reads"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/adopt/runbook"
	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"github.com/adopt-dev/adopt/templates"
	"golang.org/x/sync/errgroup"
)

// Fetcher reads one live object (export.Fetch with the cluster's dynamic
// client).
type Fetcher func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)

// Live reads objects from a cluster's dynamic client: one at a time
// (export.Fetch), or a namespace or the whole cluster of one resource at
// once (export.List), ConfigMaps and Secrets as protobuf through core when
// it is set (a client of discover.ProtobufConfig; nil lists everything
// through dyn), and counts a resource's objects (export.Count).
func Live(dyn dynamic.Interface, core corev1client.CoreV1Interface) (Fetcher, Lister, Counter) {
	fetch := func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		return export.Fetch(ctx, dyn, gvr, ns, name)
	}
	list := func(ctx context.Context, gvr schema.GroupVersionResource, ns string, fn func(*unstructured.Unstructured) error) error {
		return export.List(ctx, dyn, core, gvr, ns, fn)
	}
	count := func(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
		return export.Count(ctx, dyn, gvr)
	}
	return fetch, list, count
}

// Options are the choices apply makes that the plan does not record: how
// the commit is written, not what the Applications say.
type Options struct {
	Plan *plan.Plan
	// Secrets says how Secrets not in Git are written.
	Secrets export.SecretMode
	// FixRunbooks rewrites runbook lines that still apply adopted files.
	FixRunbooks bool
	// AutoSync and Prune set the Applications' automated sync policy.
	AutoSync, Prune bool
	// CSAMigration is --csa-migration; Version the Argo CD version the
	// Applications will run on (ResolveVersion).
	CSAMigration CSAMode
	Version      argoapp.DetectedVersion
	// Templates renders the Application and the commit message.
	Templates *templates.Set
	// Fetch reads live objects to export them.
	Fetch Fetcher
	// List, when set, reads many objects of one resource at once, and
	// Count, when set, tells how many a list of the whole cluster reads.
	List  Lister
	Count Counter
	// Readers bounds concurrent Fetches; 0 means DefaultReaders.
	Readers int
	// RepoURL is the repository's own clean URL (gitops.Repo.SourceURL),
	// used when the plan records none.
	RepoURL string
	// TargetRevision is the Applications' targetRevision (the base branch).
	TargetRevision string
	// Kube reads the Secrets the plan adopts as SealedSecrets or
	// ExternalSecrets and reaches the Sealed Secrets controller (its
	// certificate, /v1/verify); nil refuses a plan with such a Secret. It
	// also reads the Secrets the plan adopts in the SOPS form.
	Kube kubernetes.Interface
	// Sops is the sops CLI that encrypts the Secrets the plan adopts in
	// the SOPS form (its zero value: sops on PATH).
	Sops sopsform.CLI
	// PushSecrets (--push-secrets) pushes each Secret the plan adopts in
	// form eso to its store and proves it reads back, through Kube and
	// Dynamic, once every other object was read (esoform.Push).
	PushSecrets bool
	Dynamic     dynamic.Interface
}

// Applier renders one plan into commit content.
type Applier struct {
	o       Options
	judge   *redact.Judge
	id      string
	objs    map[string]*exported
	appTpl  *template.Template
	msgTpl  *template.Template
	summary Summary
	// sopsCtx is Export's context: it bounds the sops runs of Build.
	sopsCtx context.Context
}

// exported is one object prepared for the repo.
type exported struct {
	obj plan.Object
	// file is the repo path of the manifest (exported or already in Git).
	file string
	// data is the exported manifest; nil when the object is in Git or skipped.
	data []byte
	// secret is set for Secrets: "skip" or "placeholder".
	secret export.SecretMode
	keys   []string
	// helm is set for an object Argo CD renders from a chart (or of a
	// blocked Helm release): never exported.
	helm bool
	// refused are the critical secret-value findings that keep it from
	// being exported (plan.SecretValues).
	refused []plan.Finding
	// sealed is set for a Secret written as a SealedSecret (data is its
	// manifest: ciphertext, never a value).
	sealed bool
	// sops is set for a Secret adopted in the SOPS form: plain is its
	// plaintext manifest and values its values, in memory until Build has
	// sops encrypt them (then data is sops's file, sopsConfig the SHA-256
	// of the .sops.yaml it was encrypted by, and plain and values nil).
	sops       *SopsSummary
	plain      []byte
	values     map[string][]byte
	sopsConfig string
	// eso is set for a Secret written as an ExternalSecret (data is its
	// manifest: a store and a key, never a value); pushed when apply
	// pushed it (PushSecrets): key names only.
	eso    bool
	pushed *esoform.Pushed
}

// Tree is the checked-out repository content apply reads: a gitops.Repo.
type Tree interface {
	Files() ([]string, error)
	ReadFile(path string) ([]byte, error)
}

// New checks that the plan can be applied as it says and loads the
// templates. It reads nothing from the cluster.
func New(o Options) (*Applier, error) {
	p := o.Plan
	if err := Check(p); err != nil {
		return nil, err
	}
	a := &Applier{o: o, id: AdoptionID(p)}
	var err error
	if a.appTpl, err = o.Templates.Load(templates.Application); err != nil {
		return nil, err
	}
	if a.msgTpl, err = o.Templates.Load(templates.CommitMessage); err != nil {
		return nil, err
	}
	return a, nil
}

// ID is the adoption id (AdoptionID of the plan).
func (a *Applier) ID() string { return a.id }

// Target sets what the Applications fetch: the repository's own clean URL
// (used when the plan records no repoURL) and the targetRevision.
func (a *Applier) Target(repoURL, revision string) {
	a.o.RepoURL, a.o.TargetRevision = repoURL, revision
}

// Check refuses a plan apply cannot render faithfully: an Application that
// names an object the plan does not hold, or a Helm-sourced Application
// whose chart source the plan does not fully record (it is written from the
// chart, never from raw exports).
func Check(p *plan.Plan) error {
	if m := p.ArgoCD.Management; m != nil && m.Cluster == "" {
		return &ContractError{msg: fmt.Sprintf("plan %s: cluster %s is not registered with the Argo CD on %s, so its Applications would have no destination (or deploy into the management cluster itself). Register it (argocd cluster add), then plan again", p.ID, p.Cluster.Server, m.Server)}
	}
	refs := make(map[string]bool, len(p.Objects))
	for _, ob := range p.Objects {
		refs[ob.Ref.String()] = true
	}
	for _, app := range p.Applications {
		if app.Source == "helm" || app.Helm != nil {
			if err := checkHelm(p, app); err != nil {
				return err
			}
		}
		for _, ref := range app.Objects {
			if !refs[ref] {
				return &ContractError{msg: fmt.Sprintf("plan %s is inconsistent: Application %s lists %s, which is not among its objects. Re-run adopt plan", p.ID, app.Name, ref)}
			}
		}
	}
	return nil
}

// ContractError is bad input: a plan or an override apply refuses, an Argo
// CD version it cannot tell, a repository without a default branch and no
// --base, or a pull request with no provider or token. The command maps it
// to a usage error (exit 2).
type ContractError struct{ msg string }

func (e *ContractError) Error() string { return e.msg }

// Lister reads every object of one resource in one namespace ("" for
// all, or a cluster-scoped resource), page by page, handing each item to
// fn (export.List with the cluster's clients).
type Lister func(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fn func(*unstructured.Unstructured) error) error

// Counter tells how many objects of one resource the whole cluster holds,
// -1 when it cannot tell (export.Count with the cluster's dynamic client).
type Counter func(ctx context.Context, gvr schema.GroupVersionResource) (int, error)

// DefaultReaders bounds Export's concurrent reads when Options.Readers is 0.
const DefaultReaders = 8

// Export reads every object that is not in Git and cleans it. Secrets are
// read only to list their keys, and only for SecretsPlaceholder. When
// Options.List is set, each resource's objects are read as reads.Choose
// says from their counts: one paginated list of the whole cluster (its
// size from Options.Count), one list per namespace holding at least
// reads.ListAtLeast of them, one GET for each of the others, at most
// Options.Readers at once. A list keeps only the objects to export; a
// failed list leaves its objects to the next way, and an object no list
// returned is read alone, so its error names it. The first failed read
// in plan order is returned; else, when objects hold values that look
// like secrets (plan.SecretValues, as the plan judged them), a
// SecretValuesError naming every one.
func (a *Applier) Export(ctx context.Context) error {
	p := a.o.Plan
	var err error
	if a.judge, err = redact.DefaultJudge(); err != nil {
		return err
	}
	a.objs = make(map[string]*exported, len(p.Objects))
	byGVR := map[schema.GroupVersionResource]map[string]*exported{} // by namespace and name
	var order, seal, sops, esos []*exported
	notExported := helmObjects(p)
	for _, obj := range p.Objects {
		e := &exported{obj: obj}
		a.objs[obj.Ref.String()] = e
		if notExported[obj.Ref.String()] {
			e.helm = true
			continue
		}
		if obj.Sealed() && obj.Git == nil {
			seal = append(seal, e)
			continue
		}
		if obj.Sops() && obj.Git == nil {
			sops = append(sops, e)
			continue
		}
		if obj.ESO() && obj.Git == nil {
			esos = append(esos, e)
			continue
		}
		if obj.IsSecret() {
			e.secret = a.o.Secrets
		}
		if obj.Git != nil {
			e.file = obj.Git.Path
			continue
		}
		if e.secret == export.SecretsSkip {
			continue
		}
		order = append(order, e)
		gvr := obj.GVR()
		if byGVR[gvr] == nil {
			byGVR[gvr] = map[string]*exported{}
		}
		byGVR[gvr][obj.Namespace+"/"+obj.Name] = e
	}
	if err := a.sealAll(ctx, seal); err != nil {
		return err
	}
	if err := a.readSops(ctx, sops); err != nil {
		return err
	}
	if err := a.esoAll(ctx, esos); err != nil {
		return err
	}
	errs := map[*exported]error{}
	var mu sync.Mutex
	fail := func(e *exported, err error) {
		mu.Lock()
		errs[e] = err
		mu.Unlock()
	}
	done := map[*exported]bool{}
	if a.o.List != nil {
		for gvr, want := range byGVR {
			if err := a.list(ctx, gvr, want, done, fail); err != nil {
				return err
			}
		}
	}
	readers := a.o.Readers
	if readers <= 0 {
		readers = DefaultReaders
	}
	var g errgroup.Group
	g.SetLimit(readers)
	for _, e := range order {
		if done[e] {
			continue
		}
		g.Go(func() error {
			obj := e.obj
			gvr := obj.GVR()
			live, err := a.o.Fetch(ctx, gvr, obj.Namespace, obj.Name)
			if err != nil {
				fail(e, &ObjectError{Ref: obj.Ref.String(), Op: "read to export it", Err: err})
				return nil
			}
			if err := a.clean(e, live); err != nil {
				fail(e, err)
			}
			return nil // each object's error is kept in errs, in plan order
		})
	}
	_ = g.Wait()
	refused := &SecretValuesError{}
	for _, e := range order {
		if err := errs[e]; err != nil {
			return err
		}
		if len(e.refused) > 0 {
			refused.Objects = append(refused.Objects, RefusedObject{Ref: e.obj.Ref.String(), Findings: e.refused})
		}
	}
	if len(refused.Objects) > 0 {
		return refused
	}
	return a.pushAll(ctx, esos)
}

// SecretValuesError is apply's refusal to export objects that hold values
// that look like secrets: every such object, in plan order, with each
// path and rule (the plan's critical secret-value findings), never a
// value.
type SecretValuesError struct {
	Objects []RefusedObject
}

// RefusedObject is one object apply does not export, and why.
type RefusedObject struct {
	Ref      string
	Findings []plan.Finding
}

func (e *SecretValuesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "not exported: %d object(s) hold values that look like secrets, and nothing was written:", len(e.Objects))
	for _, o := range e.Objects {
		for _, f := range o.Findings {
			fmt.Fprintf(&b, "\n  %s: %s", o.Ref, f.Message)
		}
	}
	return b.String()
}

// list reads the objects of want (gvr's, by namespace and name) that
// reads.Choose says to list, marking each done; only a cancelled ctx is
// an error.
func (a *Applier) list(ctx context.Context, gvr schema.GroupVersionResource, want map[string]*exported, done map[*exported]bool, fail func(*exported, error)) error {
	page := export.ListPage(gvr)
	counts := func() map[string]int {
		n := map[string]int{}
		for _, e := range want {
			if !done[e] {
				n[e.obj.Namespace]++
			}
		}
		return n
	}
	var count func() (int, error)
	if a.o.Count != nil {
		count = func() (int, error) { return a.o.Count(ctx, gvr) }
	}
	each := func(ns string) error {
		return a.o.List(ctx, gvr, ns, func(live *unstructured.Unstructured) error {
			e := want[live.GetNamespace()+"/"+live.GetName()]
			if e == nil || done[e] {
				return nil // not wanted: dropped as the pages stream
			}
			done[e] = true
			if err := a.clean(e, live); err != nil {
				fail(e, err)
			}
			return nil
		})
	}
	c := reads.Decide(counts(), page, count)
	if c.Cluster {
		if each("") == nil || ctx.Err() != nil {
			return ctx.Err() // what the list did not return is read alone
		}
		// A failed list leaves what it did not read to lists of their
		// namespaces and single reads.
		c = reads.Choose(counts(), -1, page)
	}
	for _, ns := range c.Lists() {
		if each(ns) != nil && ctx.Err() != nil {
			return ctx.Err() // a failed list leaves its objects to single reads
		}
	}
	return nil
}

// clean turns one live object into its export.
func (a *Applier) clean(e *exported, live *unstructured.Unstructured) error {
	eo := export.Options{InstanceLabelKey: a.o.Plan.Tracking.InstanceLabelKey}
	var clean *unstructured.Unstructured
	var err error
	if e.secret != "" {
		e.keys = export.SecretKeys(live)
		clean = export.SecretPlaceholder(live, eo)
	} else if clean, err = export.Clean(live, eo); err != nil {
		return fmt.Errorf("%s: %w", e.obj.Ref.String(), err)
	}
	if e.secret == "" {
		// Judged again as it is now, by the rule the plan judged it by:
		// nothing that looks like a secret is written to Git unless
		// adopt.yaml's allowValues (recorded in the plan) passes it.
		for _, f := range plan.SecretValues(a.judge, clean.Object, e.obj.Ref, a.o.Plan.Settings.AllowValues) {
			if f.Severity == plan.Critical {
				e.refused = append(e.refused, f)
			}
		}
		if len(e.refused) > 0 {
			return nil
		}
	}
	if e.data, err = export.Marshal(clean.Object); err != nil {
		return fmt.Errorf("%s: %w", e.obj.Ref.String(), err)
	}
	return nil
}

// ObjectError is a failed cluster read of one object; Err is the API
// error, for the caller to explain.
type ObjectError struct {
	Ref, Op string
	Err     error
}

func (e *ObjectError) Error() string { return e.Op + " " + e.Ref + ": " + e.Err.Error() }
func (e *ObjectError) Unwrap() error { return e.Err }

// Build computes the commit from the tree at the branch tip: it is the
// gitops.Change's Build, called again after a concurrent push.
func (a *Applier) Build(t Tree) (gitops.Content, error) {
	files := map[string][]byte{}
	s, err := a.build(&listedTree{Tree: t}, files, nil)
	if err != nil {
		return gitops.Content{}, err
	}
	msg, err := a.commitMessage(s)
	if err != nil {
		return gitops.Content{}, err
	}
	a.summary = s
	return gitops.Content{Files: files, Message: msg}, nil
}

// build renders the plan's Applications (but those in skip), exports and
// runbook fixes into files, and sums them up. The Applications are placed
// one after another in plan order (where an Application's files go depends
// on the files of those before it), rendered at once, and written in plan
// order: the files and the first error are those of rendering each in turn.
func (a *Applier) build(t *listedTree, files map[string][]byte, skip map[string]bool) (Summary, error) {
	if a.objs == nil {
		return Summary{}, fmt.Errorf("apply: Build before Export")
	}
	p := a.o.Plan
	s := Summary{PlanID: a.id, Plan: p.ID, Objects: len(p.Objects)}
	out := newOutput(files)
	var pls []*placed
	var placeErr error
	for _, app := range p.Applications {
		if skip[app.Name] || app.Existing != nil {
			continue // an existing Application adopts its objects when it syncs
		}
		pl, err := a.place(t, app, out)
		if err != nil {
			placeErr = err
			break
		}
		pls = append(pls, pl)
	}
	a.renderAll(pls)
	for _, pl := range pls {
		as, err := pl.write(out)
		if err != nil {
			return s, err
		}
		s.Applications = append(s.Applications, as)
	}
	if placeErr != nil {
		return s, placeErr
	}
	if err := a.listInRoot(t, pls, files); err != nil {
		return s, err
	}
	var err error
	if s.Runbooks, err = a.runbooks(t, files); err != nil {
		return s, err
	}
	s.FixRunbooks = a.o.FixRunbooks
	for _, e := range a.objs {
		switch {
		case e.helm:
		case e.sops != nil:
			s.Sops = append(s.Sops, *e.sops)
		case e.sealed:
			f := e.obj.SecretForm
			s.Sealed = append(s.Sealed, SealedSummary{Ref: e.obj.Ref.String(), File: e.file, Controller: f.Controller, Fingerprint: f.Fingerprint})
		case e.eso:
			f := e.obj.SecretForm
			s.ESO = append(s.ESO, ESOSummary{Ref: e.obj.Ref.String(), File: e.file, Store: f.Store, RemoteKey: f.RemoteKey, Pushed: e.pushed})
		case e.secret != "":
			s.Secrets = append(s.Secrets, SecretSummary{Ref: e.obj.Ref.String(), Mode: e.secret, Keys: e.keys})
		case e.data != nil:
			if s.Exported == nil {
				s.Exported = map[string]string{}
			}
			s.Exported[e.obj.Ref.String()] = e.file
		}
	}
	sort.Slice(s.Secrets, func(i, j int) bool { return s.Secrets[i].Ref < s.Secrets[j].Ref })
	sort.Slice(s.Sealed, func(i, j int) bool { return s.Sealed[i].Ref < s.Sealed[j].Ref })
	sort.Slice(s.Sops, func(i, j int) bool { return s.Sops[i].Ref < s.Sops[j].Ref })
	sort.Slice(s.ESO, func(i, j int) bool { return s.ESO[i].Ref < s.ESO[j].Ref })
	return s, nil
}

// Summary is what the last Build placed where.
func (a *Applier) Summary() Summary { return a.summary }

// Summary says what apply wrote, per Application and object.
type Summary struct {
	// PlanID is the adoption id; Plan the plan document's id.
	PlanID, Plan string
	Objects      int
	Applications []AppSummary
	Secrets      []SecretSummary
	// Sealed are the Secrets written as SealedSecrets.
	Sealed []SealedSummary
	// Sops are the Secrets written SOPS-encrypted.
	Sops []SopsSummary
	// ESO are the Secrets written as ExternalSecrets.
	ESO []ESOSummary
	// Exported maps an object's Ref to the file it was exported to.
	Exported    map[string]string
	Runbooks    []runbook.Finding
	FixRunbooks bool
}

// AppSummary is one rendered Application.
type AppSummary struct {
	Name      string
	Namespace string
	// Path is the source path; File the Application manifest's path.
	Path    string
	File    string
	Objects []ObjectSummary
	Notes   []string
	// CSAMigration says why the Application sets
	// ClientSideApplyMigration=false ("" when it does not).
	CSAMigration string
	// Reach says how the Application reaches the cluster: generated by the
	// repo's ApplicationSet (File is then ""), created by a root
	// Application, or applied by hand.
	Reach string
	// Application is what was rendered, for callers that check it.
	Application argoapp.ApplicationData
}

// ObjectSummary says where one object went.
type ObjectSummary struct {
	Ref   string
	Where string
}

// SecretSummary is a Secret kept out of Git's values.
type SecretSummary struct {
	Ref  string
	Mode export.SecretMode
	Keys []string
}

// String names the Secret, with its keys at most.
func (s SecretSummary) String() string {
	if len(s.Keys) == 0 {
		return s.Ref
	}
	return s.Ref + " (keys: " + strings.Join(s.Keys, ", ") + ")"
}

// Settings are the plan's recorded apps directory and Argo CD namespace,
// with the defaults for plans that predate a field.
func Settings(p *plan.Plan) (appsDir, argoNS string) {
	appsDir, argoNS = p.Settings.AppsDir, p.ArgoCDNamespace()
	if appsDir == "" {
		appsDir = config.Default().AppsDir
	}
	return appsDir, argoNS
}
