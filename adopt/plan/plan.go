// Package plan owns the AdoptionPlan: the reviewable document that `adopt
// plan` writes and `apply` and `finalize` read. It builds a plan from what
// discovery collected, the judge decided and the Git index matched, groups
// the objects into proposed Applications, records every finding, and keeps
// its ordering stable so the same cluster always gives the same bytes. It
// does no I/O of its own beyond encoding and decoding; object bodies come
// through the Bodies function its caller passes in.
package plan

import (
	"fmt"
	"github.com/adopt-dev/adopt/adopt/config"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/argoapp"
)

// APIVersion and Kind identify the plan document.
const (
	APIVersion = "adopt.dev/v1alpha1"
	Kind       = "AdoptionPlan"
)

// Plan is the AdoptionPlan document.
type Plan struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// ID is a digest of the rest of the document: the same findings give
	// the same id.
	ID       string           `json:"id" yaml:"id"`
	Cluster  Cluster          `json:"cluster" yaml:"cluster"`
	Tracking argoapp.Tracking `json:"tracking" yaml:"tracking"`
	ArgoCD   ArgoCD           `json:"argocd" yaml:"argocd"`
	Repo     *Repo            `json:"repo,omitempty" yaml:"repo,omitempty"`
	Settings Settings         `json:"settings" yaml:"settings"`
	Summary  Summary          `json:"summary" yaml:"summary"`
	// Findings are plan-wide (not about one object).
	Findings []Finding `json:"findings,omitempty" yaml:"findings,omitempty"`
	// Applications are the proposed Argo CD Applications; each names its
	// objects by Object.Ref.
	Applications []Application `json:"applications" yaml:"applications"`
	Objects      []Object      `json:"objects" yaml:"objects"`
	Skipped      []Skipped     `json:"skipped,omitempty" yaml:"skipped,omitempty"`
	NotScanned   []NotScanned  `json:"notScanned,omitempty" yaml:"notScanned,omitempty"`

	// synced are manifests Build matched objects with that the repo's
	// index cannot find again by their Git match, by Object.Ref (see
	// SyncManifest); never written to the file.
	synced map[string]*gitindex.Manifest
}

// SyncManifest is the manifest Build matched the object ref with, when
// the repo's index cannot find it again by the object's Git match: a
// chart an existing Application renders, or a file at the revision an
// existing Application is pinned to. nil otherwise, and for a plan read
// from a file.
func (p *Plan) SyncManifest(ref string) *gitindex.Manifest { return p.synced[ref] }

// ArgoCDNamespace is the namespace of the Argo CD the plan was made
// against: the one its tracking was read in, or argoapp.DefaultNamespace
// for a plan that predates the field. Every verb takes it from here.
func (p *Plan) ArgoCDNamespace() string {
	if p.Tracking.Namespace != "" {
		return p.Tracking.Namespace
	}
	return argoapp.DefaultNamespace
}

// Cluster names the cluster a plan was made for.
type Cluster struct {
	Server  string `json:"server" yaml:"server"`
	Context string `json:"context,omitempty" yaml:"context,omitempty"`
	// Namespace is the scope planned (-n): one namespace, or several
	// separated by commas, sorted; "" for the whole cluster.
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// Namespaces are the namespaces planned; none for the whole cluster.
func (c Cluster) Namespaces() []string {
	if c.Namespace == "" {
		return nil
	}
	return strings.Split(c.Namespace, ",")
}

// ArgoCD says what was found of Argo CD in the cluster.
type ArgoCD struct {
	// Installed is false when the Application CRD is not served.
	Installed bool `json:"installed" yaml:"installed"`
	// ApplicationsChecked is false when tracking ids could not be checked
	// against the Applications (not listable).
	ApplicationsChecked bool   `json:"applicationsChecked" yaml:"applicationsChecked"`
	Note                string `json:"note" yaml:"note"`
	// Management is set when Argo CD runs on another cluster than the one
	// planned (hub and spoke, --argocd-context).
	Management *Management `json:"management,omitempty" yaml:"management,omitempty"`
	// Root is the existing Application that syncs the apps directory (app
	// of apps), or, when none does, another directory of Applications or
	// a kustomization listing them (Root.Dir); nil when none does, and the
	// new Applications must then be applied by hand after the merge.
	Root *Root `json:"root,omitempty" yaml:"root,omitempty"`
}

// Management is the cluster Argo CD runs on, and how it knows the cluster
// planned.
type Management struct {
	Server  string `json:"server" yaml:"server"`
	Context string `json:"context,omitempty" yaml:"context,omitempty"`
	// Cluster is the name of the cluster Secret registering the planned
	// cluster ("" when it is not registered).
	Cluster string `json:"cluster,omitempty" yaml:"cluster,omitempty"`
}

// Repo is the GitOps repo revision the plan was matched against.
type Repo struct {
	Source string `json:"source" yaml:"source"`
	// Remote and RemoteURL are the remote of a checkout (or bare
	// repository) given as --repo: its checked-out branch's upstream, else
	// origin; RemoteURL carries no credentials. Empty for a URL, a plain
	// directory, or a repository with no remote.
	Remote         string   `json:"remote,omitempty" yaml:"remote,omitempty"`
	RemoteURL      string   `json:"remoteURL,omitempty" yaml:"remoteURL,omitempty"`
	Revision       string   `json:"revision" yaml:"revision"`
	Manifests      int      `json:"manifests" yaml:"manifests"`
	Kustomizations []string `json:"kustomizations,omitempty" yaml:"kustomizations,omitempty"`
	// Rendered are the kustomizations rendered: each a place an
	// Application could point (an overlay, a base or both).
	Rendered     []string           `json:"rendered,omitempty" yaml:"rendered,omitempty"`
	SkippedFiles []gitindex.Skipped `json:"skippedFiles,omitempty" yaml:"skippedFiles,omitempty"`
	// Unrendered are the kustomizations that could not be rendered.
	Unrendered []gitindex.Skipped `json:"unrendered,omitempty" yaml:"unrendered,omitempty"`
}

// Settings are the choices the plan was made with (from adopt.yaml and
// flags), for apply to follow.
type Settings struct {
	GroupBy GroupBy `json:"groupBy" yaml:"groupBy"`
	// RepoURL is the GitOps repo's URL: the new Applications' repoURL, and
	// the URL an existing Application's source must have to be rendered
	// from the repo. RepoURLFrom says where it came from: "adopt.yaml",
	// "--repo", or the checkout's remote (Repo.Remote).
	RepoURL     string `json:"repoURL,omitempty" yaml:"repoURL,omitempty"`
	RepoURLFrom string `json:"repoURLFrom,omitempty" yaml:"repoURLFrom,omitempty"`
	// AllowValues are adopt.yaml's allowValues: values that look like
	// secrets that a reviewer let be exported (apply follows them).
	AllowValues []config.AllowValue `json:"allowValues,omitempty" yaml:"allowValues,omitempty"`
	AppsDir     string              `json:"appsDir" yaml:"appsDir"`
	ExportDir   string              `json:"exportDir" yaml:"exportDir"`
	Project     string              `json:"project" yaml:"project"`
	Destination string              `json:"destination" yaml:"destination"`
	// Naming is the template the new Applications' names follow, when
	// adopt.yaml's nameTemplate or the repo's Applications gave one
	// ("" for adopt's default); NamingFrom says which.
	Naming     string `json:"naming,omitempty" yaml:"naming,omitempty"`
	NamingFrom string `json:"namingFrom,omitempty" yaml:"namingFrom,omitempty"`
}

// Summary counts the plan's findings.
type Summary struct {
	Objects       int `json:"objects" yaml:"objects"`
	AtRisk        int `json:"atRisk" yaml:"atRisk"`
	Critical      int `json:"critical" yaml:"critical"`
	Warning       int `json:"warning" yaml:"warning"`
	NotInGit      int `json:"notInGit" yaml:"notInGit"`
	Ambiguous     int `json:"ambiguous" yaml:"ambiguous"`
	Drifted       int `json:"drifted" yaml:"drifted"`
	Skipped       int `json:"skipped" yaml:"skipped"`
	NotScanned    int `json:"notScanned" yaml:"notScanned"`
	Tracked       int `json:"tracked" yaml:"tracked"`
	StaleTracking int `json:"staleTracking" yaml:"staleTracking"`
	// Preview counts the first-sync preview's outcomes (plan --preview).
	Preview *preview.Summary `json:"preview,omitempty" yaml:"preview,omitempty"`
}

// Object is one untracked object proposed for adoption.
type Object struct {
	objref.Ref `yaml:",inline"`
	Provenance string           `json:"provenance" yaml:"provenance"`
	Evidence   string           `json:"evidence" yaml:"evidence"`
	Confidence judge.Confidence `json:"confidence" yaml:"confidence"`
	Managers   []string         `json:"managers,omitempty" yaml:"managers,omitempty"`
	DataBytes  int              `json:"dataBytes" yaml:"dataBytes"`
	Budget     budget.Budget    `json:"budget" yaml:"budget"`
	Level      budget.Level     `json:"level" yaml:"level"`
	// NextApply predicts the next client-side apply's annotation total.
	NextApply judge.NextApply `json:"nextApply" yaml:"nextApply"`
	// CSAMigration predicts Argo CD 3.1.0-3.3.1's client-side-apply
	// migration at the first sync (see judge.CSAMigration).
	CSAMigration judge.CSAMigration `json:"csaMigration" yaml:"csaMigration"`
	// HelmRelease is set for objects a Helm release installed.
	HelmRelease string `json:"helmRelease,omitempty" yaml:"helmRelease,omitempty"`
	// StaleTracking says why a tracking mark the object carries does not
	// count.
	StaleTracking string `json:"staleTracking,omitempty" yaml:"staleTracking,omitempty"`
	// App is the name of the proposed Application that adopts the object.
	App string `json:"app" yaml:"app"`
	// Git is where the object's manifest lives in the GitOps repo; nil when
	// it is not in Git (or no repo was given) or when it is ambiguous (it
	// then has no Application and is not exported).
	Git *GitMatch `json:"git,omitempty" yaml:"git,omitempty"`
	// Ambiguous lists every manifest when the object is defined more than
	// once and none could be chosen by content.
	Ambiguous []GitMatch `json:"ambiguous,omitempty" yaml:"ambiguous,omitempty"`
	// Drift compares the live object with its manifest (nil when not
	// compared).
	Drift *gitindex.Drift `json:"drift,omitempty" yaml:"drift,omitempty"`
	// Risk is the highest finding severity ("" when none).
	Risk     Severity  `json:"risk,omitempty" yaml:"risk,omitempty"`
	Findings []Finding `json:"findings,omitempty" yaml:"findings,omitempty"`
	// Preview is what Argo CD's first sync would do (plan --preview).
	Preview *preview.Result `json:"preview,omitempty" yaml:"preview,omitempty"`
	// SecretForm, on a Secret, is the form it is adopted in (a
	// SealedSecret); nil for a Secret left out, and for every other kind.
	SecretForm *SecretForm `json:"secretForm,omitempty" yaml:"secretForm,omitempty"`

	// resourceVersion is the live object's when it was listed; never
	// written to the file (it changes on every write, status included).
	resourceVersion string
}

// ResourceVersion is the live object's resourceVersion when the plan
// listed it; "" for a plan read from a file.
func (o *Object) ResourceVersion() string { return o.resourceVersion }

// GitMatch locates an object's manifest in the GitOps repo.
type GitMatch struct {
	Path string `json:"path" yaml:"path"`
	Line int    `json:"line" yaml:"line"`
	// Kustomization is the kustomization whose render holds the object.
	Kustomization string `json:"kustomization,omitempty" yaml:"kustomization,omitempty"`
	// Reason says why this manifest was chosen when more than one in the
	// repo defines the object (in Object.Git), or how it compares with
	// live when none could be chosen (in Object.Ambiguous); "" for the only
	// one.
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
	// Revision is the commit the manifest was read at, when an existing
	// Application's targetRevision is not the plan's revision; "" when it
	// is.
	Revision string `json:"revision,omitempty" yaml:"revision,omitempty"`
}

// Application is one proposed Argo CD Application.
type Application struct {
	Name string `json:"name" yaml:"name"`
	// Namespace is the destination namespace ("" for cluster-scoped only).
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Project   string `json:"project" yaml:"project"`
	// Source is where the Application's manifests come from: "git" (a
	// directory already in the repo), "export" (the live objects, to be
	// exported), "helm" (a Helm chart; objects are never exported raw) or
	// "existing" (an Application that already renders them).
	Source string `json:"source" yaml:"source"`
	// RepoURL is the GitOps repo (empty when unknown).
	RepoURL string `json:"repoURL,omitempty" yaml:"repoURL,omitempty"`
	// DestinationServer or DestinationName is the target cluster.
	DestinationServer string `json:"destinationServer,omitempty" yaml:"destinationServer,omitempty"`
	DestinationName   string `json:"destinationName,omitempty" yaml:"destinationName,omitempty"`
	// SourcePath is the directory in the GitOps repo the Application syncs.
	SourcePath string `json:"sourcePath" yaml:"sourcePath"`
	// Include lists file names for directory.include when SourcePath holds
	// more than the adopted objects.
	Include []string `json:"include,omitempty" yaml:"include,omitempty"`
	// Kustomize is set when SourcePath is a kustomization (rendered by Argo
	// CD, not by adopt).
	Kustomize bool `json:"kustomize,omitempty" yaml:"kustomize,omitempty"`
	// Helm is set for a Helm-sourced Application.
	Helm *HelmSource `json:"helm,omitempty" yaml:"helm,omitempty"`
	// Existing is set for an Application that already exists and renders
	// the objects (Source "existing"): apply writes nothing for it.
	Existing *Existing `json:"existing,omitempty" yaml:"existing,omitempty"`
	// Extends names the Application that already exists (in the cluster,
	// or defined in Git) by this one's name, or syncing its path to its
	// namespace: apply adds the objects to it, never replaces it
	// (CodeExtends).
	Extends string `json:"extends,omitempty" yaml:"extends,omitempty"`
	// Generator is set when the repo's ApplicationSet generates the
	// Application from SourcePath, a directory apply writes the objects
	// into (placeGenerated): apply writes no Application of its own, and
	// Name is the one the set gives it.
	Generator *Generator `json:"generator,omitempty" yaml:"generator,omitempty"`
	// Objects are the adopted objects, by Object.Ref.
	Objects []string `json:"objects" yaml:"objects"`
	// IgnoreDifferences are the spec.ignoreDifferences entries the
	// first-sync preview found for the objects (fields another writer
	// owns); apply writes them with RespectIgnoreDifferences=true unless
	// IgnoreDifferencesOff says why not. Empty without plan --preview.
	IgnoreDifferences []preview.IgnoreDifference `json:"ignoreDifferences,omitempty" yaml:"ignoreDifferences,omitempty"`
	// IgnoreDifferencesOff says why apply writes none of the entries
	// ("turned off by --no-ignore-differences", "turned off by adopt.yaml
	// noIgnoreDifferences", or an existing Application, which apply does
	// not write); "" when apply writes them.
	IgnoreDifferencesOff string `json:"ignoreDifferencesOff,omitempty" yaml:"ignoreDifferencesOff,omitempty"`
}

// IgnoreSummary says in one line what apply does with the entries ("" when
// there are none).
func (a Application) IgnoreSummary() string {
	n := len(a.IgnoreDifferences)
	switch {
	case n == 0:
		return ""
	case a.IgnoreDifferencesOff != "":
		return fmt.Sprintf("%d ignoreDifferences entr%s NOT written (%s): the Application will show these fields OutOfSync or, with self-heal, fight their writer", n, plural(n, "y", "ies"), a.IgnoreDifferencesOff)
	}
	return fmt.Sprintf("%d ignoreDifferences entr%s written, with RespectIgnoreDifferences=true (fields another writer owns; turn off with --no-ignore-differences)", n, plural(n, "y", "ies"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WrittenIgnoreDifferences are the entries apply writes into the
// Application: IgnoreDifferences, or none when they are turned off.
func (a Application) WrittenIgnoreDifferences() []preview.IgnoreDifference {
	if a.IgnoreDifferencesOff != "" {
		return nil
	}
	return a.IgnoreDifferences
}

// HelmSource is the chart a Helm-sourced Application installs, as read
// from the release's newest deployed revision. apply writes exactly this:
// from a chart repository, source.repoURL = RepoURL, chart = Chart,
// targetRevision = Version; from the GitOps repo, source.repoURL = the
// plan's repo, path = Path, targetRevision = the branch apply writes to;
// and helm.releaseName = ReleaseName, helm.valueFiles = ValueFiles,
// helm.valuesObject = Values.
type HelmSource struct {
	ReleaseName string `json:"releaseName" yaml:"releaseName"`
	Chart       string `json:"chart,omitempty" yaml:"chart,omitempty"`
	Version     string `json:"version,omitempty" yaml:"version,omitempty"`
	AppVersion  string `json:"appVersion,omitempty" yaml:"appVersion,omitempty"`
	// Revision is the release revision read; Storage the driver holding its
	// records (Secret or ConfigMap) and Records their names, which adopt
	// never adopts or changes.
	Revision int      `json:"revision,omitempty" yaml:"revision,omitempty"`
	Storage  string   `json:"storage,omitempty" yaml:"storage,omitempty"`
	Records  []string `json:"records,omitempty" yaml:"records,omitempty"`
	// RepoURL is the chart repository (http(s) or oci://); Path, instead,
	// the chart's directory in the GitOps repo (a Chart.yaml with the
	// release's chart name and version), which wins over a repository.
	// SourceFrom says where the source was found and, when both had the
	// chart, which was chosen and why. Both empty: the source is unknown
	// and the release has no Application.
	RepoURL    string `json:"repoURL,omitempty" yaml:"repoURL,omitempty"`
	Path       string `json:"path,omitempty" yaml:"path,omitempty"`
	SourceFrom string `json:"sourceFrom,omitempty" yaml:"sourceFrom,omitempty"`
	// ValueFiles (relative to Path) hold the release's user-supplied
	// values when one of the chart's own files equals them; Values is then
	// empty. Set only for a chart in Git.
	ValueFiles []string `json:"valueFiles,omitempty" yaml:"valueFiles,omitempty"`
	// Values are the user-supplied values with every secret-like value
	// replaced by a placeholder; Placeholders are the key paths replaced.
	Values       map[string]any `json:"values,omitempty" yaml:"values,omitempty"`
	Placeholders []string       `json:"placeholders,omitempty" yaml:"placeholders,omitempty"`
	// KeepSecrets are the chart's Secrets (namespace/name) whose data the
	// Application keeps from live (ignoreDifferences +
	// RespectIgnoreDifferences=true), so placeholders and generated values
	// never overwrite a live secret.
	KeepSecrets []string `json:"keepSecrets,omitempty" yaml:"keepSecrets,omitempty"`
	// Hooks are the release's Helm hooks, which Argo CD runs as its own.
	Hooks []HelmHook `json:"hooks,omitempty" yaml:"hooks,omitempty"`
	// Proof compares the chart rendered with ValueFiles and Values against
	// the release's manifest (plan --preview).
	Proof *HelmProof `json:"proof,omitempty" yaml:"proof,omitempty"`
}

// HelmHook is one Helm hook and what Argo CD makes of it.
type HelmHook struct {
	Kind   string   `json:"kind" yaml:"kind"`
	Name   string   `json:"name" yaml:"name"`
	Events []string `json:"events" yaml:"events"`
	// ArgoCD says when Argo CD runs it instead.
	ArgoCD string `json:"argocd" yaml:"argocd"`
}

// HelmProof is the chart rendered at Version with Values compared, object
// by object, with the manifest the release recorded.
type HelmProof struct {
	Objects     int              `json:"objects" yaml:"objects"`
	Identical   int              `json:"identical" yaml:"identical"`
	Differences []HelmDifference `json:"differences,omitempty" yaml:"differences,omitempty"`
	// Error is why the chart could not be rendered ("" when it was).
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// HelmDifference is one object that renders differently from the release.
type HelmDifference struct {
	Object string `json:"object" yaml:"object"`
	Text   string `json:"text" yaml:"text"`
	// Kept: Secret data, kept from live. Immutable: the sync would fail.
	Kept      bool `json:"kept,omitempty" yaml:"kept,omitempty"`
	Immutable bool `json:"immutable,omitempty" yaml:"immutable,omitempty"`
}

// Equal reports whether the proof found nothing that the first sync would
// change (differences in kept Secret data do not count).
func (p *HelmProof) Equal() bool {
	if p == nil || p.Error != "" {
		return false
	}
	for _, d := range p.Differences {
		if !d.Kept {
			return false
		}
	}
	return true
}

// Skipped is an object or type left out, with the reason.
type Skipped struct {
	Kind      string `json:"kind" yaml:"kind"`
	Group     string `json:"group,omitempty" yaml:"group,omitempty"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Name is empty when the whole type was skipped.
	Name   string `json:"name,omitempty" yaml:"name,omitempty"`
	Class  string `json:"class" yaml:"class"`
	Reason string `json:"reason" yaml:"reason"`
}

// NotScanned is a type that could not be listed.
type NotScanned struct {
	Type   string `json:"type" yaml:"type"`
	Reason string `json:"reason" yaml:"reason"`
}
