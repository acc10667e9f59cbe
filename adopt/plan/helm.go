package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// Finding codes of Helm releases.
const (
	CodeHelmBlocked      = "helm-release-blocked"
	CodeHelmSecretValue  = "helm-secret-value"
	CodeHelmHook         = "helm-hook"
	CodeHelmProof        = "helm-render-differs"
	CodeHelmProofFailed  = "helm-render-failed"
	CodeHelmNewer        = "helm-newer-revision"
	CodeHelmRecordsSkip  = "helm-records-unread"
	CodeHelmName         = "helm-application-name"
	CodeHelmChartSource  = "helm-chart-source"
	CodeHelmDependencies = "helm-chart-dependencies"
	codeHelmBlockedShort = "chart source unknown: add helmRepositories"
)

// helmApps completes each Helm-sourced Application from what was read of
// its release. A release that cannot be adopted (no record, unknown chart
// source) gets no Application: its objects stay in the plan with App ""
// and a critical finding, and every other Application is unaffected.
func helmApps(p *Plan, cands []*candidate, in Inputs) []Application {
	if in.HelmUnread != "" {
		p.Findings = append(p.Findings, Finding{CodeHelmRecordsSkip, Warning, in.HelmUnread})
	}
	var byRef map[string]*candidate // made at the first Helm release: most plans have none
	index := func() map[string]*candidate {
		if byRef == nil {
			byRef = make(map[string]*candidate, len(cands))
			for _, c := range cands {
				byRef[c.obj.Ref.String()] = c
			}
		}
		return byRef
	}
	var out []Application
	for _, a := range p.Applications {
		if a.Source != "helm" {
			out = append(out, a)
			continue
		}
		key := a.Namespace + "/" + a.Helm.ReleaseName
		rel, ok := in.Helm[key]
		why := rel.Blocked
		switch {
		case !ok && in.HelmUnread != "":
			why = "its release records could not be read (" + in.HelmUnread + ")"
		case !ok:
			why = fmt.Sprintf("no deployed revision of Helm release %s found in its records (sh.helm.release.v1.%s.v<N> Secrets or ConfigMaps)", key, a.Helm.ReleaseName)
		case why == "" && rel.Source.RepoURL == "" && rel.Source.Path == "":
			why = codeHelmBlockedShort
		}
		if why != "" {
			next := "Plan again once that is done"
			if strings.HasPrefix(why, helmrelease.ErrUnknownSource.Error()) {
				next = "Add the chart's repository to adopt.yaml helmRepositories (chart name: repo URL or oci://) and plan again"
			}
			msg := fmt.Sprintf("Helm release %s (chart %s %s) is not adopted, so Application %s is not proposed: %s. %s", key, orUnknown(a.Helm.Chart), a.Helm.Version, a.Name, why, next)
			p.Findings = append(p.Findings, Finding{CodeHelmBlocked, Critical, msg})
			for _, ref := range a.Objects {
				c := index()[ref]
				c.obj.App = ""
				c.obj.Findings = append(c.obj.Findings, Finding{CodeHelmBlocked, Critical, fmt.Sprintf("Helm release %s is not adopted (no Application): %s", key, why)})
				sortFindings(c.obj.Findings)
				c.obj.Risk = maxSeverity(c.obj.Findings)
			}
			continue
		}
		hs := rel.Source
		a.Helm = &hs
		a = labelTrackedName(p, a, index(), out)
		for _, f := range rel.Findings {
			f.Message = fmt.Sprintf("Application %s (Helm release %s): %s", a.Name, key, f.Message)
			p.Findings = append(p.Findings, f)
		}
		for _, path := range hs.Placeholders {
			p.Findings = append(p.Findings, Finding{CodeHelmSecretValue, Warning, fmt.Sprintf(
				"Application %s: value %s of Helm release %s is secret-like and is written as placeholder %q, never in plain text; its Secret's data is kept from live. Move it out of the values: the chart's existingSecret pattern, a SealedSecret, an ExternalSecret or SOPS", a.Name, path, key, redact.Placeholder(path))})
		}
		for _, h := range hs.Hooks {
			f := Finding{CodeHelmHook, Info, fmt.Sprintf(
				"Application %s: Helm hook %s %s (%s) becomes an Argo CD hook: %s", a.Name, h.Kind, h.Name, strings.Join(h.Events, ","), h.ArgoCD)}
			if redact.IsSecret("", h.Kind) && !strings.HasPrefix(h.ArgoCD, "never") {
				// Argo CD deletes and re-creates a hook at each sync, from
				// the chart rendered with the plan's values: placeholders
				// (and values the chart generates) would replace the live
				// Secret's data.
				f.Severity = Critical
				f.Message += ". Argo CD re-creates a hook Secret from the chart at each sync, with adopt's placeholders in place of its secret values, so the live values would be lost: move the Secret out of the hook (or into a secret-management source) before the Application syncs"
			}
			p.Findings = append(p.Findings, f)
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// HookArgoCD says when Argo CD runs a Helm hook with these events: Argo CD
// maps Helm hooks to its own phases and runs them at every sync, not only
// at install or upgrade.
func HookArgoCD(events []string) string {
	var phases []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			phases = append(phases, p)
		}
	}
	for _, e := range events {
		switch e {
		case "pre-install", "pre-upgrade":
			add("PreSync")
		case "post-install", "post-upgrade":
			add("PostSync")
		case "pre-delete", "post-delete", "pre-rollback", "post-rollback":
			add("never (" + e + " has no Argo CD equivalent)")
		case "test":
			add("never (helm test hooks are skipped)")
		default:
			add("never (" + e + ")")
		}
	}
	if len(phases) == 0 {
		return "never"
	}
	s := strings.Join(phases, " and ")
	if seen["PreSync"] || seen["PostSync"] {
		s += ", at every sync (Helm ran it only at install or upgrade)"
	}
	return s
}

// AddHelmProof turns each Helm-sourced Application's proof into findings:
// an immutable-field change is critical (the first sync would fail), any
// other difference from the release's manifest a warning, a chart that could
// not be rendered a warning. Secret data kept from live is not a finding.
func (p *Plan) AddHelmProof() {
	for _, a := range p.Applications {
		if a.Helm == nil || a.Helm.Proof == nil {
			continue
		}
		pr := a.Helm.Proof
		if pr.Error != "" {
			p.Findings = append(p.Findings, Finding{CodeHelmProofFailed, Warning, fmt.Sprintf("Application %s: the chart could not be rendered to prove it equal to Helm release %s: %s", a.Name, a.Helm.ReleaseName, pr.Error)})
			continue
		}
		for _, d := range pr.Differences {
			switch {
			case d.Kept:
			case d.Immutable:
				p.Findings = append(p.Findings, Finding{CodeSyncWouldFail, Critical, fmt.Sprintf("Application %s: %s renders differently from Helm release %s: %s", a.Name, d.Object, a.Helm.ReleaseName, d.Text)})
			default:
				p.Findings = append(p.Findings, Finding{CodeHelmProof, Warning, fmt.Sprintf("Application %s: %s renders differently from Helm release %s: %s", a.Name, d.Object, a.Helm.ReleaseName, d.Text)})
			}
		}
	}
	p.Sort()
}

// labelTrackedName names a Helm-sourced Application after its release when
// Argo CD tracks by the app.kubernetes.io/instance label: Argo CD sets that
// label to the Application's name, and charts set it to the release name,
// so any other name makes every object OutOfSync and "shared" with a
// phantom Application. When the release name is taken, the name stays and
// a warning says what to do.
func labelTrackedName(p *Plan, a Application, byRef map[string]*candidate, done []Application) Application {
	t := p.Tracking
	if t.Method != argoapp.TrackingLabel && t.Method != argoapp.TrackingAnnotationAndLabel || t.InstanceLabelKey != argoapp.DefaultInstanceLabelKey || a.Name == a.Helm.ReleaseName {
		return a
	}
	want := a.Helm.ReleaseName
	for _, b := range append(append([]Application{}, done...), p.Applications...) {
		if b.Name == want {
			p.Findings = append(p.Findings, Finding{CodeHelmName, Warning, fmt.Sprintf(
				"Application %s: Argo CD tracks by the %s label, which the chart sets to the release name %q, but Application %s already has that name: the first sync would relabel every object. Switch argocd-cm application.resourceTrackingMethod to annotation, or rename one of them", a.Name, t.InstanceLabelKey, want, want)})
			return a
		}
	}
	p.Findings = append(p.Findings, Finding{CodeHelmName, Info, fmt.Sprintf(
		"Application for Helm release %s/%s is named %q, after the release, not %q: Argo CD tracks by the %s label, which the chart sets to the release name", a.Namespace, want, want, a.Name, t.InstanceLabelKey)})
	for _, ref := range a.Objects {
		byRef[ref].obj.App = want
	}
	a.Name = want
	return a
}

// RenderGitChart renders Helm-sourced Application a whose chart is in the
// GitOps repo (a.Helm.Path) as Argo CD's repo-server will render the
// Application apply writes for it: the chart from ix, release
// a.Helm.ReleaseName, namespace a.Namespace, a.Helm.ValueFiles, then
// a.Helm.Values; the same rendering as an existing Application's chart.
func RenderGitChart(ix *gitindex.Index, r helmrelease.Renderer, a Application) (helmrelease.Rendered, error) {
	src, err := gitChartSource(*a.Helm)
	if err != nil {
		return helmrelease.Rendered{}, err
	}
	return renderGitChart(ix, Revisions{}, r, argoapp.Spec{Name: a.Name, Destination: a.Namespace}, src, "")
}

// gitChartSource is the Application source apply writes for h, a chart in
// the GitOps repo.
func gitChartSource(h HelmSource) (v1alpha1.ApplicationSource, error) {
	src := v1alpha1.ApplicationSource{Path: h.Path, Helm: &v1alpha1.ApplicationSourceHelm{ReleaseName: h.ReleaseName, ValueFiles: h.ValueFiles}}
	if len(h.Values) > 0 {
		b, err := json.Marshal(h.Values)
		if err != nil {
			return src, fmt.Errorf("helm values: %w", err)
		}
		src.Helm.ValuesObject = &runtime.RawExtension{Raw: b}
	}
	return src, nil
}

// matchReleaseCharts gives the objects of each hand-installed Helm release
// whose chart is in the GitOps repo (HelmSource.Path) their Git match: the
// chart rendered as the Application proposed for it will render it
// (<chart>/Chart.yaml, line 0), so their drift is measured against what
// its first sync applies, as for an existing Application's chart. The data
// of the release's Secrets is left out of the match: the Application keeps
// it from live (KeepSecrets), and the values hold placeholders for it. A
// chart that does not render is a warning (its dependencies not vendored
// are already one); its objects stay without a match.
func matchReleaseCharts(cands []candidate, in Inputs) []Finding {
	var fs []Finding
	charts := map[string]map[gitindex.Key]*gitindex.Manifest{} // by release key
	for i := range cands {
		c := &cands[i]
		o := c.obj
		if o.HelmRelease == "" || o.Namespace == "" || c.existing != nil || c.manifest != nil || len(c.ambiguous) > 0 {
			continue
		}
		key := helmrelease.Key(o.Namespace, o.HelmRelease)
		byKey, done := charts[key]
		if !done {
			byKey = releaseChart(in, key, &fs)
			charts[key] = byKey
		}
		if m := byKey[gitindex.Key{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}]; m != nil {
			c.match(m, in.Index)
		}
	}
	return fs
}

// releaseChart renders the chart in Git of Helm release key (namespace/name)
// as its proposed Application will, by object; nil when the release has no
// chart in Git or it does not render (a finding in fs).
func releaseChart(in Inputs, key string, fs *[]Finding) map[gitindex.Key]*gitindex.Manifest {
	rel, ok := in.Helm[key]
	h := rel.Source
	if !ok || rel.Blocked != "" || h.Path == "" {
		return nil
	}
	ns, _, _ := strings.Cut(key, "/")
	src, err := gitChartSource(h)
	var ms []*gitindex.Manifest
	if err == nil {
		ms, err = renderChart(in.Index, Revisions{}, in.Charts, argoapp.Spec{Name: h.ReleaseName, Destination: ns}, src, "")
	}
	var de *gitindex.DependencyError
	switch {
	case errors.As(err, &de):
		return nil
	case err != nil:
		*fs = append(*fs, Finding{CodeSourceNotRendered, Warning, fmt.Sprintf(
			"Helm release %s: its chart in Git at %s does not render as its Application would (%v): its objects carry no Git match and no drift; plan --preview says what the first sync would do", key, h.Path, err)})
		return nil
	}
	keep := map[string]bool{}
	for _, s := range h.KeepSecrets {
		keep[s] = true
	}
	byKey := map[gitindex.Key]*gitindex.Manifest{}
	for _, m := range ms {
		k := m.Key
		if k.Namespace == "" {
			k.Namespace = ns
		}
		if k.Group == "" && k.Kind == "Secret" && keep[k.Namespace+"/"+k.Name] {
			kept := *m
			kept.Object = maps.Clone(m.Object)
			delete(kept.Object, "data")
			delete(kept.Object, "stringData")
			m = &kept
		}
		byKey[k] = m
	}
	return byKey
}
