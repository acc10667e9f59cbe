package plan

import (
	"fmt"
	"sort"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/judge"
)

// Severity ranks a finding.
type Severity string

// Severities, from worst.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// AtLeast reports whether s is as bad as t or worse.
func (s Severity) AtLeast(t Severity) bool { return s.rank() >= t.rank() && s.rank() > 0 }

// Finding is one thing the plan says about an object or the whole scan.
type Finding struct {
	Code     string   `json:"code" yaml:"code"`
	Severity Severity `json:"severity" yaml:"severity"`
	Message  string   `json:"message" yaml:"message"`
}

// Finding codes.
const (
	CodeBudget          = "annotation-budget"
	CodeNextApplyFails  = "next-client-side-apply-fails"
	CodeStaleVsGit      = "live-behind-git"
	CodeNotInGit        = "not-in-git"
	CodeAmbiguous       = "ambiguous-in-git"
	CodeRenderFailed    = "render-failed"
	CodeSecret          = "secret"
	CodeHelm            = "helm-owned"
	CodeStaleTracking   = "stale-tracking"
	CodeUnread          = "body-not-read"
	CodeArgoCDMissing   = "argocd-not-installed"
	CodeArgoCDUnchecked = "applications-not-checked"
	CodeNotRegistered   = "cluster-not-registered"
	// CodeNamespaceUnchecked: a namespace of -n the credentials may not
	// get, so its existence was not checked.
	CodeNamespaceUnchecked = "namespace-unchecked"
)

// findings derives an object's findings from what the plan knows of it.
func findings(o *Object, haveRepo bool) []Finding {
	var fs []Finding
	b := o.Budget
	switch o.Level {
	case budget.LevelCritical:
		fs = append(fs, Finding{CodeBudget, Critical, fmt.Sprintf("annotations are %d B, %.1f%% of the %d B cap (critical from 90%%); %d B headroom", b.AnnotationBytes, b.PercentOfCap, budget.AnnotationCap, b.Headroom)})
	case budget.LevelWarning:
		fs = append(fs, Finding{CodeBudget, Warning, fmt.Sprintf("annotations are %d B, %.1f%% of the %d B cap (warning from 75%%); %d B headroom", b.AnnotationBytes, b.PercentOfCap, budget.AnnotationCap, b.Headroom)})
	}
	if o.NextApply.Fails {
		src := "the live object"
		if o.Git != nil {
			src = "the Git manifest"
		}
		fs = append(fs, Finding{CodeNextApplyFails, Critical, fmt.Sprintf("the next client-side `kubectl apply` (of %s) would write %d B of annotations, over the %d B cap: it will fail with \"Too long\". Apply with --server-side, then remove %s", src, o.NextApply.Bytes, budget.AnnotationCap, budget.LastAppliedKey)})
	}
	switch {
	case len(o.Ambiguous) > 0:
		fs = append(fs, Finding{CodeAmbiguous, Warning, ambiguousAdvice(o)})
	case o.Git != nil && o.Drift != nil && !o.Drift.Identical():
		fs = append(fs, Finding{CodeStaleVsGit, Warning, fmt.Sprintf("live is %d B behind Git at %s:%d (%s); the first sync will change it", o.Drift.BytesBehind, o.Git.Path, o.Git.Line, gitindex.FieldList(o.Drift.Fields, 5))})
	case o.Git == nil && haveRepo && o.HelmRelease == "":
		fs = append(fs, Finding{CodeNotInGit, Info, "no manifest in the GitOps repo: the live object would be exported to Git"})
	case o.Git == nil && !haveRepo && o.HelmRelease == "":
		fs = append(fs, Finding{CodeNotInGit, Info, "no source in Git checked (no --repo): the live object would be exported to Git"})
	}
	if o.IsSecret() {
		fs = append(fs, Finding{CodeSecret, Warning, "a Secret: its values must not be committed in plain text; use a sealed or external secret"})
	}
	if o.Provenance == string(judge.ProvenanceHelm) {
		fs = append(fs, Finding{CodeHelm, Info, fmt.Sprintf("installed by Helm release %q: proposed as a Helm-sourced Application, never exported raw", o.HelmRelease)})
	}
	if o.StaleTracking != "" {
		fs = append(fs, Finding{CodeStaleTracking, Warning, "stale tracking: " + o.StaleTracking})
	}
	return fs
}

// ambiguousAdvice says why an object defined several times in Git gets no
// Application, and what would decide: the candidates may be different
// apps' configurations that are equal today, so none is to be deleted.
func ambiguousAdvice(o *Object) string {
	first := o.Ambiguous[0]
	p := first.Path
	if first.Line == 0 && first.Kustomization != "" {
		p = first.Kustomization
	}
	ns := o.Namespace
	if ns == "" {
		ns = "<namespace>"
	}
	return fmt.Sprintf("defined %d times in Git (%s) and none can be chosen by content: no Application is proposed and nothing is exported. "+
		"They may be different apps' configurations that are equal today: keep them. What decides: an Application or ApplicationSet in Git that deploys one of them to namespace %s (the plan leaves the object to it), "+
		"or a line in adopt.yaml naming the one applied by hand here, for example sources: [{path: %s, namespaces: [%s]}]; then plan again",
		len(o.Ambiguous), matchList(o.Ambiguous), ns, p, ns)
}

func matchList(ms []GitMatch) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += "; "
		}
		if m.Line == 0 && m.Kustomization != "" {
			s += "the render of " + m.Kustomization
		} else {
			s += fmt.Sprintf("%s:%d", m.Path, m.Line)
		}
		if m.Reason != "" {
			s += ", which " + m.Reason
		}
	}
	return s
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Severity.rank() != fs[j].Severity.rank() {
			return fs[i].Severity.rank() > fs[j].Severity.rank()
		}
		return fs[i].Code < fs[j].Code
	})
}

func maxSeverity(fs []Finding) Severity {
	var worst Severity
	for _, f := range fs {
		if f.Severity.rank() > worst.rank() {
			worst = f.Severity
		}
	}
	return worst
}

// Worst is the highest severity of any finding in the plan.
func (p *Plan) Worst() Severity {
	worst := maxSeverity(p.Findings)
	for _, o := range p.Objects {
		if o.Risk.rank() > worst.rank() {
			worst = o.Risk
		}
	}
	return worst
}
