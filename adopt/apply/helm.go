package apply

import (
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// checkHelm refuses a Helm-sourced Application the plan does not record
// fully: apply writes the chart source exactly as recorded and never
// exports a Helm release's objects raw.
func checkHelm(p *plan.Plan, app plan.Application) error {
	h := app.Helm
	missing := ""
	switch {
	case h == nil:
		missing = "its chart source"
	case h.ReleaseName == "":
		missing = "the release name"
	case h.Chart == "":
		missing = "the chart name"
	case h.Version == "":
		missing = "the chart version"
	case h.RepoURL == "" && h.Path == "":
		missing = "the chart repository or its directory in Git (chart source unknown: add helmRepositories to adopt.yaml)"
	case app.Namespace == "":
		missing = "the release namespace"
	}
	if missing != "" {
		return &ContractError{msg: fmt.Sprintf("plan %s: Helm-sourced Application %s does not record %s; adopt apply writes only a chart source, never raw exports of Helm-owned objects. Re-run adopt plan", p.ID, app.Name, missing)}
	}
	return nil
}

// helmObjects are the objects apply must not export: those of Helm-sourced
// Applications (Argo CD renders them from the chart) and those of no
// Application (a blocked Helm release).
func helmObjects(p *plan.Plan) map[string]bool {
	in := map[string]bool{}
	for _, app := range p.Applications {
		if app.Source == "helm" {
			continue
		}
		for _, ref := range app.Objects {
			in[ref] = true
		}
	}
	out := map[string]bool{}
	for _, ob := range p.Objects {
		if !in[ob.Ref.String()] {
			out[ob.Ref.String()] = true
		}
	}
	return out
}

// HelmRepoURL is the repoURL Argo CD expects for a chart repository: an
// http(s) URL as is, an OCI registry without its oci:// scheme (Argo CD
// reads it as a Helm OCI repository registered with enableOCI).
func HelmRepoURL(u string) string { return strings.TrimPrefix(u, "oci://") }

// placeHelm places a Helm-sourced Application: the chart at the version
// the release runs (from its repository, or its directory in the GitOps
// repo at the branch apply writes to), the release name, the values file
// or the values (secret-like ones as placeholders), the release namespace,
// server-side apply, and the chart's Secrets' data kept from live. It
// writes nothing but the Application.
func (a *Applier) placeHelm(app plan.Application, out *output) (*placed, error) {
	h := app.Helm
	repo, where := HelmRepoURL(h.RepoURL), HelmRepoURL(h.RepoURL)
	if h.Path != "" {
		repo = a.repoURL(app)
		where = "Git " + h.Path + " in " + repo
	}
	pl := &placed{s: AppSummary{Name: app.Name, Namespace: app.Namespace, Path: fmt.Sprintf("chart %s %s from %s (Helm release %s)", h.Chart, h.Version, where, h.ReleaseName)}}
	s := &pl.s
	values, err := argoapp.HelmValuesYAML(h.Values)
	if err != nil {
		return pl, fmt.Errorf("Application %s: %w", app.Name, err)
	}
	opts := []string{argoapp.SyncOptionServerSideApply}
	var ignore []argoapp.IgnoreDifference
	for _, ref := range h.KeepSecrets {
		ns, name, _ := strings.Cut(ref, "/")
		ignore = append(ignore, argoapp.IgnoreDifference{Kind: "Secret", Namespace: ns, Name: name, JSONPointers: []string{"/data", "/stringData"}})
	}
	ignore, opts = ignoreDifferences(app, s, ignore, opts)
	opts, err = a.csaOption(app, s, opts)
	if err != nil {
		return pl, err
	}
	keep := map[string]bool{}
	for _, ref := range h.KeepSecrets {
		keep[ref] = true
	}
	for _, ref := range app.Objects {
		e := a.objs[ref]
		where := "rendered by Argo CD from chart " + h.Chart + " " + h.Version + " (never exported)"
		if e.obj.IsSecret() && keep[e.obj.Namespace+"/"+e.obj.Name] {
			where += "; its data is kept from live"
		}
		s.Objects = append(s.Objects, ObjectSummary{Ref: ref, Where: where})
	}
	for _, k := range h.Placeholders {
		s.Notes = append(s.Notes, fmt.Sprintf("value %s is a placeholder, not the secret: move it to the chart's existingSecret, a SealedSecret, an ExternalSecret or SOPS", k))
	}
	d := argoapp.ApplicationData{
		RepoURL: repo, Chart: h.Chart, TargetRevision: h.Version, HelmReleaseName: h.ReleaseName, HelmValueFiles: h.ValueFiles, HelmValues: values,
		IgnoreDifferences: ignore, SyncOptions: opts,
	}
	if h.Path != "" {
		d.Chart, d.Path, d.TargetRevision = "", h.Path, a.o.TargetRevision
	}
	a.complete(pl, app, d, out)
	return pl, nil
}
