package apply

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/templates"
)

// Pull-request template names in templates/ (overridable with a directory).
const (
	PRTitleTemplate = "pr-title.tmpl"
	PRBodyTemplate  = "pr-body.tmpl"
)

// PRInput is what apply knows after pushing the branch.
type PRInput struct {
	// RepoURL is the GitOps repository's remote URL.
	RepoURL string
	// Head is the pushed branch, Base the branch it targets.
	Head, Base string
	// Plan is the adoption plan applied; PlanPath the file it came from.
	Plan     *plan.Plan
	PlanPath string
	// TemplatesDir is --templates (may be empty).
	TemplatesDir string
	// Exported maps an object's Ref to the path apply exported it to, for
	// objects that were not in Git.
	Exported map[string]string
	// Drift maps an object's Ref to a short drift note ("identical",
	// "live 8,126 B behind Git: data.usage_hook.py"); missing means unknown.
	Drift map[string]string
	// Runbooks are runbook findings, one sentence each.
	Runbooks []string
	// Secrets maps a Secret's Ref to why it was left out of Git, for
	// Secrets apply skipped; Secrets the plan skipped are listed too.
	Secrets map[string]string
	// Sealed maps a Secret's Ref to the SealedSecret file apply wrote for
	// it; SealedBy to the controller and key that sealed it.
	Sealed, SealedBy map[string]string
	// Encrypted maps a Secret's Ref to the SOPS-encrypted file apply wrote
	// for it; EncryptedBy to the rule and what was proven.
	Encrypted, EncryptedBy map[string]string
	// ESO maps a Secret's Ref to the ExternalSecret file apply wrote for
	// it; ESOFrom to the store and key it reads back; ESOProof to one
	// line per key apply --push-secrets proved the store gives back
	// (names only; none when apply did not push).
	ESO, ESOFrom map[string]string
	ESOProof     map[string][]string
	// CSAMigration maps an Application's name to why it sets
	// ClientSideApplyMigration=false.
	CSAMigration map[string]string
	// Title and Body, when Body is set, are the pull request as already
	// written (a fleet's, FleetSummary.PR), instead of the templates'.
	Title, Body string
}

// prData is what pr-title.tmpl and pr-body.tmpl see.
type prData struct {
	Cluster      string
	Head, Base   string
	Objects      int
	Applications []prApp
	Risks        []string
	Runbooks     []string
	Secrets      []prSecret
	Sealed       []prSealed
	Encrypted    []prSealed
	ESO          []prSealed
	// ESOPushed: apply --push-secrets pushed every Secret of ESO and
	// proved it reads back.
	ESOPushed bool
	NextStep  string
	// Root is the existing Application that syncs AppsDir and creates the
	// new Applications ("" when none does); New counts them.
	Root          string
	RootAutomated bool
	// RootKustomization is the kustomization the root reads, whose
	// resources list the new Applications' files ("" for a directory).
	RootKustomization string
	// RootChart, RootValuesFile and RootValuesKey are set when the root
	// renders a chart whose values list the new Applications.
	RootChart, RootValuesFile, RootValuesKey string
	AppsDir                                  string
	ArgoNamespace                            string
	New                                      int
	// Generated has a line per Application the repo's ApplicationSets
	// generate from the directories this pull request writes.
	Generated []string
}

type prApp struct {
	Name, Namespace, Path string
	Objects               []prObject
	// CSAMigration says why the Application sets
	// ClientSideApplyMigration=false ("" when it does not).
	CSAMigration string
	// Ignore says what apply does with the ignoreDifferences the plan
	// records, and Ignored has a line per entry (empty when none).
	Ignore  string
	Ignored []string
	// Preview summarises the first-sync preview of the Application's
	// objects, and Previews has a line per object (empty unless the plan
	// was made with --preview).
	Preview  string
	Previews []string
	// Helm is set for a Helm-sourced Application.
	Helm *prHelm
	// Existing names an existing Application (namespace/name) that
	// renders the objects; nothing is written for it.
	Existing string
	// Generator says which ApplicationSet generates the Application from
	// Path ("" when an Application file is written).
	Generator string
	// Chart says the root's chart creates the Application from the item
	// appended to its values list ("" when not).
	Chart string
}

// prHelm is a Helm-sourced Application's chart, the proof that it renders
// what the release recorded, and how to retire the release afterwards.
type prHelm struct {
	Release, Chart, Version, RepoURL, SourceFrom string
	// Path is the chart's directory in this repository ("" for a chart
	// repository's); ValueFiles the chart's values files it is given.
	Path         string
	ValueFiles   []string
	Placeholders []string
	// Proof is one line ("" when the plan was made without --preview);
	// Differences one line per object that differs.
	Proof       string
	Differences []string
	Hooks       []string
	Retire      []string
}

type prObject struct {
	Ref             string
	AnnotationBytes int
	PercentOfCap    float64
	Level           string
	Where           string
	Drift           string
}

type prSecret struct{ Ref, Reason string }

// prSealed is a Secret written as a SealedSecret: no value, only where
// and by which controller's key (for an ExternalSecret, which store and
// key, and Proof: what apply --push-secrets proved, per key name).
type prSealed struct {
	Ref, File, By string
	Proof         []string
}

// newPRData turns the plan and what apply did into the template data.
func newPRData(in PRInput) prData {
	d := prData{Head: in.Head, Base: in.Base, Runbooks: in.Runbooks}
	planPath := in.PlanPath
	if planPath == "" {
		planPath = "<plan file>"
	}
	d.NextStep = "adopt finalize --plan " + planPath
	p := in.Plan
	if p == nil {
		return d
	}
	d.AppsDir, d.ArgoNamespace = Settings(p)
	if r := p.ArgoCD.Root; r != nil {
		d.Root, d.RootAutomated, d.RootKustomization = r.Application, r.Automated, r.Kustomization
		d.AppsDir = AppFilesDir(p)
		if h := r.HelmValues; h != nil {
			d.RootChart, d.RootValuesFile, d.RootValuesKey = h.Chart, h.ValuesFile, h.Key
		}
	}
	for _, a := range p.Applications {
		switch {
		case a.Generator != nil:
			d.Generated = append(d.Generated, "ApplicationSet `"+a.Generator.ApplicationSet+"` generates Application `"+a.Name+"` from `"+a.SourcePath+"` once this is merged"+generatorPending(a.Generator)+".")
		case a.Existing == nil:
			d.New++
		}
	}
	d.Cluster = p.Cluster.Context
	if d.Cluster == "" {
		d.Cluster = p.Cluster.Server
	}
	byRef := map[string]plan.Object{}
	for _, ob := range p.Objects {
		byRef[ob.Ref.String()] = ob
	}
	for _, a := range p.Applications {
		pa := prApp{Name: a.Name, Namespace: a.Namespace, Path: a.SourcePath, CSAMigration: in.CSAMigration[a.Name], Helm: helmPR(a), Ignore: a.IgnoreSummary()}
		for _, d := range a.IgnoreDifferences {
			pa.Ignored = append(pa.Ignored, fmt.Sprintf("`%s`: %s (source: %s)", d, d.Reason, d.Source))
		}
		if e := a.Existing; e != nil {
			pa.Existing = e.Namespace + "/" + a.Name
		}
		if g := a.Generator; g != nil {
			form := "plain manifests"
			if g.Kustomization {
				form = "the manifests and a `kustomization.yaml` listing them, as the pattern's other directories have"
			}
			pa.Generator = fmt.Sprintf("Generated by ApplicationSet `%s` from `%s` (its Git directory generator's pattern `%s`): this pull request writes %s there and no Application of its own; the set names it `%s`%s.", g.ApplicationSet, a.SourcePath, g.Pattern, form, a.Name, generatorPending(g))
		}
		if r := p.ArgoCD.Root; r != nil && r.HelmValues.Item(a.Name) != nil && a.Existing == nil {
			h := r.HelmValues
			pa.Chart = fmt.Sprintf("Created by root Application `%s` from its Helm chart `%s`: this pull request writes the manifests to `%s` and appends an item for `%s` to `%s` in `%s`, and no Application file; the root's chart creates the Application on its next sync.", r.Application, h.Chart, a.SourcePath, a.Name, h.Key, h.ValuesFile)
		}
		counts := map[preview.Outcome]int{}
		for _, r := range a.Objects {
			ob, ok := byRef[r]
			if !ok {
				continue
			}
			po := prObject{Ref: r, AnnotationBytes: ob.Budget.AnnotationBytes, PercentOfCap: ob.Budget.PercentOfCap, Level: string(ob.Level), Drift: "not measured"}
			if po.Level == "" {
				po.Level = string(budget.LevelOK)
			}
			switch {
			case a.Helm != nil:
				po.Where = "rendered from chart `" + a.Helm.Chart + "` " + a.Helm.Version
				po.Drift = "see the Helm proof"
			case ob.Git != nil:
				po.Where = fmt.Sprintf("in Git at `%s:%d`", ob.Git.Path, ob.Git.Line)
			case in.Sealed[r] != "":
				po.Where = "sealed to `" + in.Sealed[r] + "`"
			case in.Encrypted[r] != "":
				po.Where = "encrypted with sops to `" + in.Encrypted[r] + "`"
			case in.ESO[r] != "":
				po.Where = "as an ExternalSecret in `" + in.ESO[r] + "`"
			case in.Exported[r] != "":
				po.Where = "exported to `" + in.Exported[r] + "`"
			default:
				po.Where = "exported (not in Git)"
			}
			switch {
			case in.Drift[r] != "":
				po.Drift = in.Drift[r]
			case ob.Drift != nil && ob.Drift.Identical():
				po.Drift = "identical"
			case ob.Drift != nil:
				po.Drift = fmt.Sprintf("live %d B behind Git: %s", ob.Drift.BytesBehind, strings.Join(ob.Drift.Fields, ", "))
			case in.Sealed[r] != "":
				po.Drift = "n/a (sealed from the cluster)"
			case in.Encrypted[r] != "":
				po.Drift = "n/a (encrypted from the cluster)"
			case in.ESO[r] != "":
				po.Drift = "n/a (read back from the store)"
			case ob.Git == nil:
				po.Drift = "n/a (exported from the cluster)"
			}
			pa.Objects = append(pa.Objects, po)
			if ob.Preview != nil {
				pa.Previews = append(pa.Previews, previewLines(r, ob)...)
				counts[ob.Preview.Outcome]++
			}
			d.Objects++
			if len(ob.Findings) > 0 {
				for _, f := range ob.Findings {
					d.Risks = append(d.Risks, fmt.Sprintf("`%s` (%s): %s", r, f.Severity, f.Message))
				}
			} else {
				d.Risks = append(d.Risks, objectRisks(ob)...)
			}
		}
		if len(pa.Previews) > 0 {
			pa.Preview = fmt.Sprintf("%d no-op, %d changing, %d failing", counts[preview.NoOp], counts[preview.Changes], counts[preview.WouldFail])
		}
		d.Applications = append(d.Applications, pa)
	}
	for _, f := range p.Findings {
		d.Risks = append(d.Risks, fmt.Sprintf("(%s) %s", f.Severity, f.Message))
	}
	for _, s := range p.Skipped {
		if redact.IsSecret(s.Group, s.Kind) && s.Name != "" && s.Class != judge.SkipHelm {
			d.Secrets = append(d.Secrets, prSecret{Ref: "Secret " + s.Namespace + "/" + s.Name, Reason: s.Reason})
		}
	}
	for ref, why := range in.Secrets {
		d.Secrets = append(d.Secrets, prSecret{Ref: ref, Reason: why})
	}
	sort.SliceStable(d.Secrets, func(i, j int) bool { return d.Secrets[i].Ref < d.Secrets[j].Ref })
	for ref, file := range in.Sealed {
		d.Sealed = append(d.Sealed, prSealed{Ref: ref, File: file, By: in.SealedBy[ref]})
	}
	sort.SliceStable(d.Sealed, func(i, j int) bool { return d.Sealed[i].Ref < d.Sealed[j].Ref })
	d.ESOPushed = len(in.ESO) > 0
	for ref, file := range in.ESO {
		d.ESO = append(d.ESO, prSealed{Ref: ref, File: file, By: in.ESOFrom[ref], Proof: in.ESOProof[ref]})
		d.ESOPushed = d.ESOPushed && in.ESOProof[ref] != nil
	}
	sort.SliceStable(d.ESO, func(i, j int) bool { return d.ESO[i].Ref < d.ESO[j].Ref })
	if len(d.Sealed) > 0 || len(d.ESO) > 0 {
		d.NextStep += " --sync"
	}
	for ref, file := range in.Encrypted {
		d.Encrypted = append(d.Encrypted, prSealed{Ref: ref, File: file, By: in.EncryptedBy[ref]})
	}
	sort.SliceStable(d.Encrypted, func(i, j int) bool { return d.Encrypted[i].Ref < d.Encrypted[j].Ref })
	return d
}

// generatorPending says, for an ApplicationSet not in the cluster yet,
// that it must be applied first ("" for one in the cluster).
func generatorPending(g *plan.Generator) string {
	if g.InGit == "" {
		return ""
	}
	return fmt.Sprintf(" (the ApplicationSet, defined at `%s`, is not in the cluster yet: it generates it once applied, by its root Application's sync or `kubectl apply -f %s`)", g.InGit, fileOfPlace(g.InGit))
}

// objectRisks states an object's risks, one sentence each, for plans
// written before the plan recorded findings.
func objectRisks(ob plan.Object) []string {
	var out []string
	r := "`" + ob.Ref.String() + "`"
	switch ob.Level {
	case budget.LevelCritical, budget.LevelWarning:
		out = append(out, fmt.Sprintf("%s: annotations are %d B, %.1f%% of the 262,144 B cap (%s); %d B of headroom before the API server refuses the next client-side apply.", r, ob.Budget.AnnotationBytes, ob.Budget.PercentOfCap, ob.Level, ob.Budget.Headroom))
	}
	if ob.Budget.HasLastApplied {
		out = append(out, fmt.Sprintf("%s: carries a %d B last-applied-configuration annotation that server-side sync keeps; `adopt finalize` removes it after the first sync.", r, ob.Budget.LastAppliedBytes))
	}
	if ob.Git == nil {
		out = append(out, r+": no source in Git; this pull request adds the live object as exported.")
	}
	return out
}

// RenderPR renders the title (unless given) and the body.
func RenderPR(in PRInput, title string) (string, string, error) {
	if in.Body != "" {
		if title == "" {
			title = in.Title
		}
		return title, in.Body, nil
	}
	set, err := templates.New(in.TemplatesDir)
	if err != nil {
		return "", "", err
	}
	d := newPRData(in)
	if title == "" {
		if title, err = execTemplate(set, PRTitleTemplate, d); err != nil {
			return "", "", err
		}
		title = strings.Join(strings.Fields(title), " ")
	}
	body, err := execTemplate(set, PRBodyTemplate, d)
	return title, body, err
}

func execTemplate(set *templates.Set, name string, d prData) (string, error) {
	t, err := set.Load(name)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("render %s (%s): %w", name, set.Source(name), err)
	}
	return strings.TrimSpace(b.String()) + "\n", nil
}

// previewLines renders one object's first-sync preview for the PR body.
func previewLines(ref string, ob plan.Object) []string {
	r := ob.Preview
	out := []string{fmt.Sprintf("- `%s`: **%s**", ref, r.Column())}
	if r.Verdict != "" {
		out = append(out, "  - the API server says: "+r.Verdict)
	}
	for _, c := range r.Changes {
		out = append(out, "  - "+c.Text)
	}
	if r.Rollout != nil {
		out = append(out, "  - "+r.Rollout.Text)
		if r.Rollout.Capacity != nil {
			out = append(out, "  - "+r.Rollout.Capacity.Summary)
		}
	}
	for _, f := range r.PendingDeletions {
		out = append(out, "  - pending deletion after finalize: `"+f.Path+"`")
	}
	for _, w := range r.Warnings {
		out = append(out, "  - warning: "+w)
	}
	return out
}

// PRInput fills what apply placed (exports, Secrets, runbooks, the
// CSA-migration reasons) into in from the summary.
func (s Summary) PRInput(in PRInput) PRInput {
	in.Exported, in.Secrets, in.CSAMigration = map[string]string{}, map[string]string{}, map[string]string{}
	in.Sealed, in.SealedBy = map[string]string{}, map[string]string{}
	for _, sec := range s.Sealed {
		in.Sealed[sec.Ref] = sec.File
		in.SealedBy[sec.Ref] = "the Sealed Secrets controller at Service " + sec.Controller + ", key " + sec.Fingerprint
	}
	in.Encrypted, in.EncryptedBy = map[string]string{}, map[string]string{}
	for _, sec := range s.Sops {
		in.Encrypted[sec.Ref] = sec.File
		in.EncryptedBy[sec.Ref] = fmt.Sprintf("`%s` creation_rules[%d] to %d age recipient(s) (%s); %s", sec.Config, sec.Rule, len(sec.Age), strings.Join(sec.Age, ", "), sec.Proof())
	}
	in.ESO, in.ESOFrom, in.ESOProof = map[string]string{}, map[string]string{}, map[string][]string{}
	for _, sec := range s.ESO {
		in.ESO[sec.Ref] = sec.File
		in.ESOFrom[sec.Ref] = "key `" + sec.RemoteKey + "` of " + sec.Store
		if sec.Pushed != nil {
			in.ESOProof[sec.Ref] = append([]string{}, sec.Proof()...)
		}
	}
	for ref, f := range s.Exported {
		in.Exported[ref] = f
	}
	for _, sec := range s.Secrets {
		in.Secrets[sec.Ref] = "Secret values are never written to Git (--secrets=" + string(sec.Mode) + "); give it a secret-management source such as SealedSecret, ExternalSecret or SOPS"
	}
	for _, a := range s.Applications {
		if a.CSAMigration != "" {
			in.CSAMigration[a.Name] = a.CSAMigration
		}
	}
	for _, f := range s.Runbooks {
		in.Runbooks = append(in.Runbooks, f.String())
	}
	return in
}

// helmPR is the Helm section of a Helm-sourced Application (nil for
// others).
func helmPR(a plan.Application) *prHelm {
	h := a.Helm
	if a.Source != "helm" || h == nil {
		return nil
	}
	ph := &prHelm{Release: h.ReleaseName, Chart: h.Chart, Version: h.Version, RepoURL: HelmRepoURL(h.RepoURL), SourceFrom: h.SourceFrom,
		Path: h.Path, ValueFiles: h.ValueFiles, Placeholders: h.Placeholders, Retire: helmrelease.RetireCommands(a.Namespace, h.ReleaseName, h.Storage)}
	if pr := h.Proof; pr != nil {
		switch {
		case pr.Error != "":
			ph.Proof = "not proven: " + pr.Error
		case pr.Equal():
			ph.Proof = fmt.Sprintf("the chart rendered with these values equals the release's manifest: %d object(s), %d identical, the rest differing only in Secret data kept from live", pr.Objects, pr.Identical)
		default:
			ph.Proof = fmt.Sprintf("the chart rendered with these values DIFFERS from the release's manifest: %d object(s), %d identical", pr.Objects, pr.Identical)
		}
		for _, d := range pr.Differences {
			ph.Differences = append(ph.Differences, "`"+d.Object+"`: "+d.Text)
		}
	}
	for _, hk := range h.Hooks {
		ph.Hooks = append(ph.Hooks, fmt.Sprintf("`%s %s` (%s): %s", hk.Kind, hk.Name, strings.Join(hk.Events, ","), hk.ArgoCD))
	}
	return ph
}
