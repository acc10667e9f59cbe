package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// helmReleases reads the Helm releases the discovered objects belong to and
// resolves each chart's source: a chart directory in the GitOps repo (ix,
// nil without --repo) with the release's chart name and version, else a
// chart repository. Release records that cannot be read are reported
// (unread), not fatal: the releases' objects get no Application.
func helmReleases(ctx context.Context, o Options, j *redact.Judge, res *discover.Result, ix *gitindex.Index) (rels map[string]*helmrelease.Release, in map[string]plan.HelmRelease, unread string) {
	need := false
	for i := range res.Objects {
		ob := &res.Objects[i]
		if ob.Annotations["meta.helm.sh/release-name"] != "" || ob.Labels["app.kubernetes.io/managed-by"] == "Helm" {
			need = true
			break
		}
	}
	if !need {
		return nil, nil, ""
	}
	rels, err := readReleases(ctx, o)
	if err != nil {
		return nil, nil, err.Error() + "; grant get/list on secrets (and configmaps) where Helm releases live"
	}
	srcs := helmrelease.DefaultSources(o.Config.HelmRepositories, o.Getenv)
	if o.HelmSources != nil {
		srcs = *o.HelmSources
	}
	in = map[string]plan.HelmRelease{}
	var render *helmrelease.Renderer // made when two charts in Git must be told apart
	for k, r := range rels {
		hs := plan.HelmSource{
			ReleaseName: r.Name, Chart: r.Chart, Version: r.Version, AppVersion: r.AppVersion,
			Revision: r.Revision, Storage: r.Storage, Records: r.Records,
			KeepSecrets: helmrelease.Secrets(r.Manifest, r.Namespace),
		}
		hs.Values, hs.Placeholders, _ = helmrelease.Redact(j, r.Config, r.Manifest, r.HookManifest)
		if len(hs.Values) == 0 {
			hs.Values = nil
		}
		for _, h := range r.Hooks {
			hs.Hooks = append(hs.Hooks, plan.HelmHook{Kind: h.Kind, Name: h.Name, Events: h.Events, ArgoCD: plan.HookArgoCD(h.Events)})
		}
		hr := plan.HelmRelease{Source: hs}
		src, err := srcs.Find(r.Chart, r.Version)
		var dirs []string
		if ix != nil {
			dirs = ix.ChartDirs(r.Chart, r.Version)
		}
		switch {
		case len(dirs) > 0:
			var why string
			if len(dirs) > 1 {
				if render == nil {
					cr := chartRenderer(o, true)
					render = &cr
				}
				dirs, why = chartsByRender(ix, *render, dirs, r)
			}
			gitChart(ix, dirs, why, r, &hr, src, err)
		case err != nil:
			hr.Blocked = err.Error()
		default:
			hr.Source.RepoURL, hr.Source.SourceFrom = src.RepoURL, src.From
		}
		if r.Newer != "" && hr.Blocked == "" {
			hr.Blocked = fmt.Sprintf("its newest revision is not deployed (%s): finish or roll back the upgrade first", r.Newer)
		}
		in[k] = hr
	}
	return rels, in, ""
}

// chartsByRender orders dirs, chart directories in Git with the release's
// chart name and version, by how the chart renders with the release's
// values (in memory only): first those whose render equals the manifest
// the release recorded (Secret data aside, as Argo CD keeps it from
// live), then by fewest objects that differ, then by path. why says how
// they compared, for the plan's SourceFrom.
func chartsByRender(ix *gitindex.Index, rd helmrelease.Renderer, dirs []string, r *helmrelease.Release) ([]string, string) {
	type cmp struct {
		dir, text string
		differ    int
	}
	var cs []cmp
	for _, dir := range dirs {
		c := cmp{dir: dir, differ: -1}
		ch, err := ix.Chart(dir)
		var out helmrelease.Rendered
		if err == nil {
			out, err = rd.Render(ch, r.Name, r.Namespace, r.Config)
		}
		var res helmrelease.Comparison
		if err == nil {
			res, err = helmrelease.Compare(r.Manifest, out.Manifest, r.Namespace)
		}
		switch {
		case err != nil:
			c.text = fmt.Sprintf("%s does not render (%v)", dir, err)
		default:
			c.differ = 0
			for _, d := range res.Diffs {
				if !d.Kept {
					c.differ++
				}
			}
			c.text = fmt.Sprintf("%s renders %d of the release's %d objects differently", dir, c.differ, res.Objects)
			if c.differ == 0 {
				c.text = dir + " renders what the release recorded"
			}
		}
		cs = append(cs, c)
	}
	rank := func(c cmp) int {
		if c.differ < 0 {
			return int(^uint(0) >> 1)
		}
		return c.differ
	}
	slices.SortStableFunc(cs, func(a, b cmp) int { return rank(a) - rank(b) })
	out, texts := make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		out[i], texts[i] = c.dir, c.text
	}
	return out, "chosen by rendering each with the release's values: " + strings.Join(texts, "; ")
}

// gitChart makes hr's source the chart directory in the GitOps repo that
// has the release's chart name and version (dirs, the best first; why
// says how they were told apart when several do): Git wins over a chart
// repository (repo, or repoErr when none has it), and SourceFrom and a
// finding say so. The release's
// user-supplied values become a values file of the chart when one equals
// them (none at all for values.yaml, which Helm reads anyway); otherwise
// they stay inline, redacted. Dependencies the chart does not vendor are a
// finding: Argo CD builds them, adopt cannot render the chart.
func gitChart(ix *gitindex.Index, dirs []string, why string, r *helmrelease.Release, hr *plan.HelmRelease, repo helmrelease.Source, repoErr error) {
	dir := dirs[0]
	hs := &hr.Source
	hs.Path = dir
	hs.SourceFrom = fmt.Sprintf("Git: chart directory %s of the GitOps repo (its Chart.yaml is %s %s)", dir, r.Chart, r.Version)
	var also []string
	if len(dirs) > 1 {
		also = append(also, fmt.Sprintf("also in Git at %s: %s", strings.Join(dirs[1:], ", "), why))
	}
	if repoErr == nil {
		also = append(also, fmt.Sprintf("also in %s at %s: the chart in Git wins, as it is what the repo holds for Argo CD to sync", repo.From, repo.RepoURL))
	}
	if len(also) > 0 {
		hs.SourceFrom += "; " + strings.Join(also, "; ")
		hr.Findings = append(hr.Findings, plan.Finding{Code: plan.CodeHelmChartSource, Severity: plan.Info, Message: "chart source is " + hs.SourceFrom})
	}
	vf := helmrelease.ValuesFile(r.Config, ix.ValuesFiles(dir), func(f string) ([]byte, error) { return ix.ReadFile(path.Join(dir, f)) })
	switch vf {
	case "":
	case "values.yaml": // the chart's defaults: Helm reads them anyway
		hs.Values, hs.Placeholders = nil, nil
	default:
		hs.Values, hs.Placeholders, hs.ValueFiles = nil, nil, []string{vf}
	}
	var de *gitindex.DependencyError
	if _, err := ix.Chart(dir); errors.As(err, &de) {
		hr.Findings = append(hr.Findings, plan.Finding{Code: plan.CodeHelmDependencies, Severity: plan.Warning, Message: de.Error() +
			". Argo CD's repo-server runs `helm dependency build` itself before it renders the chart, so the Application is proposed, but adopt has not proven it renders what the release runs, and the sync fails if Argo CD cannot reach the dependency's repository (register it in Argo CD when it needs credentials). Vendor the dependencies as said, then plan again to have the render proven"})
	}
}

// chartInGit says whether a release's chart is in the GitOps repo.
func chartInGit(in map[string]plan.HelmRelease) bool {
	for _, r := range in {
		if r.Source.Path != "" {
			return true
		}
	}
	return false
}

// chartRenderer renders charts for the planned cluster's version and, with
// apiVersions, its API versions, as Argo CD passes the destination's to
// helm template. Reading the API versions is a discovery of every group:
// it is left out when no chart will be rendered for an Application.
func chartRenderer(o Options, apiVersions bool) helmrelease.Renderer {
	r := helmrelease.Renderer{}
	if apiVersions {
		r.APIVersions = helmrelease.APIVersions(o.Kube.Discovery())
	}
	if v, err := o.Kube.Discovery().ServerVersion(); err == nil {
		r.KubeVersion = v.GitVersion
	}
	return r
}

// renderRelease renders a Helm-sourced Application as Argo CD will: its
// chart from the GitOps repo (ix) when it is there, else fetched from its
// repository at its version, with the plan's values.
func renderRelease(ctx context.Context, r helmrelease.Renderer, ix *gitindex.Index, app plan.Application) (helmrelease.Rendered, error) {
	hs := app.Helm
	if hs.Path != "" {
		if ix == nil {
			return helmrelease.Rendered{}, fmt.Errorf("the chart is in Git at %s but the repo was not read: pass --repo", hs.Path)
		}
		return plan.RenderGitChart(ix, r, app)
	}
	ch, err := helmrelease.Fetch(ctx, helmrelease.Source{RepoURL: hs.RepoURL, Chart: hs.Chart}, hs.Version)
	if err != nil {
		return helmrelease.Rendered{}, err
	}
	return r.Render(ch, hs.ReleaseName, app.Namespace, hs.Values)
}

// helmProof renders each Helm-sourced Application's chart (renderRelease:
// placeholders included, as Argo CD will render it), compares it object
// by object with the release's stored manifest, and dry-runs the first
// sync of each rendered object that is in the plan (Secrets aside: their
// data is kept from live).
func helmProof(ctx context.Context, o Options, j *redact.Judge, explain func(error) error, p *plan.Plan, ix *gitindex.Index, rels map[string]*helmrelease.Release, pv *preview.Previewer, results map[string]preview.Result) error {
	r := chartRenderer(o, true)
	byKey := map[string]*plan.Object{}
	for i := range p.Objects {
		ob := &p.Objects[i]
		byKey[ob.Group+"/"+ob.Kind+" "+ob.Namespace+"/"+ob.Name] = ob
	}
	for i := range p.Applications {
		app := &p.Applications[i]
		hs := app.Helm
		if app.Source != "helm" || hs == nil {
			continue
		}
		rel := rels[helmrelease.Key(app.Namespace, hs.ReleaseName)]
		if rel == nil {
			continue
		}
		_, _, hide := helmrelease.Redact(j, rel.Config, rel.Manifest, rel.HookManifest)
		proof := &plan.HelmProof{}
		hs.Proof = proof
		out, err := renderRelease(ctx, r, ix, *app)
		if err != nil {
			proof.Error = err.Error()
			continue
		}
		cmp, err := helmrelease.Compare(rel.Manifest, out.Manifest, app.Namespace)
		if err != nil {
			proof.Error = err.Error()
			continue
		}
		proof.Objects, proof.Identical = cmp.Objects, cmp.Identical
		for _, d := range cmp.Diffs {
			proof.Differences = append(proof.Differences, plan.HelmDifference{Object: d.Object, Text: d.Text, Kept: d.Kept, Immutable: d.Immutable})
		}
		for _, doc := range releaseutil.SplitManifests(out.Manifest) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || len(u.Object) == 0 {
				continue
			}
			if u.GetNamespace() == "" {
				u.SetNamespace(app.Namespace)
			}
			gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
			ob := byKey[gv.Group+"/"+u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()]
			if ob == nil {
				// cluster-scoped objects carry no namespace in the plan
				ob = byKey[gv.Group+"/"+u.GetKind()+" /"+u.GetName()]
				if ob != nil {
					u.SetNamespace("")
				}
			}
			if ob == nil || ob.App != app.Name || ob.IsSecret() {
				continue
			}
			gvr := ob.GVR()
			live, err := export.Fetch(ctx, o.Dynamic, gvr, ob.Namespace, ob.Name)
			if err != nil {
				return explain(fmt.Errorf("%s: %w", ob.Ref.String(), err))
			}
			id := ""
			if p.Tracking.Method != argoapp.TrackingLabel {
				id = argoapp.TrackingID{AppName: app.Name, Ref: ob.Ref}.String()
			}
			res, err := pv.Object(ctx, preview.Input{Resource: gvr, Manifest: u, Live: live, TrackingID: id, Hide: hide})
			if err != nil {
				return explain(fmt.Errorf("preview %s: %w", ob.Ref.String(), err))
			}
			results[ob.Ref.String()] = res
		}
	}
	p.AddHelmProof()
	return nil
}

// readReleases reads the Helm releases of the scope planned: the whole
// cluster, or each namespace of -n.
func readReleases(ctx context.Context, o Options) (map[string]*helmrelease.Release, error) {
	scope := o.Cluster.Namespaces()
	if len(scope) == 0 {
		return helmrelease.Read(ctx, o.Kube, "")
	}
	all := map[string]*helmrelease.Release{}
	for _, ns := range scope {
		rels, err := helmrelease.Read(ctx, o.Kube, ns)
		if err != nil {
			return nil, err
		}
		maps.Copy(all, rels)
	}
	return all, nil
}
