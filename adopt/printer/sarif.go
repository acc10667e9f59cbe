package printer

import (
	"io"
	"sort"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// SARIFInformationURI is the tool's home, written into tool.driver.
const SARIFInformationURI = "https://github.com/adopt-dev/adopt"

// SARIF writes p as a SARIF 2.1.0 log for code scanning: one run, one rule
// per finding code, one result per finding. A finding on an object that is
// matched in the GitOps repo is located at its manifest's path and line
// (every manifest when the object is defined more than once); any other
// finding has a logical location, cluster/namespace/kind/name for an object
// or the cluster for a plan-wide finding. Levels: critical is error,
// warning is warning, info is note.
func SARIF(w io.Writer, p *plan.Plan, o Options) error {
	run := sarif.NewRunWithInformationURI("adopt", SARIFInformationURI)
	if o.Version != "" {
		run.Tool.Driver.WithVersion(o.Version)
	}
	cluster := p.Cluster.Context
	if cluster == "" {
		cluster = p.Cluster.Server
	}
	for _, code := range sarifCodes(p) {
		run.AddRule(code).
			WithName(code).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(ruleText(code))).
			WithHelpURI(SARIFInformationURI + "/blob/main/docs/plan.md")
	}
	for _, f := range p.Findings {
		loc := sarif.NewLocation().AddLogicalLocation(sarif.NewLogicalLocation().
			WithName(cluster).WithFullyQualifiedName(cluster).WithKind("cluster"))
		addResult(run, f, f.Message, []*sarif.Location{loc}, "plan/"+f.Code)
	}
	for i := range p.Objects {
		obj := &p.Objects[i]
		locs := objectLocations(cluster, obj)
		for _, f := range obj.Findings {
			addResult(run, f, obj.Ref.String()+": "+f.Message, locs, obj.Ref.String()+"/"+f.Code)
		}
	}
	r := sarif.NewReport()
	r.AddRun(run)
	if err := r.PrettyWrite(w); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func addResult(run *sarif.Run, f plan.Finding, text string, locs []*sarif.Location, fingerprint string) {
	run.CreateResultForRule(f.Code).
		WithLevel(sarifLevel(f.Severity)).
		WithMessage(sarif.NewTextMessage(text)).
		WithLocations(locs).
		WithPartialFingerprints(map[string]string{"adoptFinding/v1": fingerprint})
}

// objectLocations is where an object's findings point: its manifests in
// Git, else the object in the cluster.
func objectLocations(cluster string, obj *plan.Object) []*sarif.Location {
	var matches []plan.GitMatch
	switch {
	case obj.Git != nil:
		matches = []plan.GitMatch{*obj.Git}
	case len(obj.Ambiguous) > 0:
		matches = obj.Ambiguous
	}
	var locs []*sarif.Location
	for _, m := range matches {
		region := sarif.NewRegion()
		if m.Line > 0 {
			region.WithStartLine(m.Line)
		}
		locs = append(locs, sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().
			WithArtifactLocation(sarif.NewArtifactLocation().WithURI(m.Path)).
			WithRegion(region)))
		if len(locs) == 10 { // GitHub keeps at most ten locations a result
			break
		}
	}
	if len(locs) > 0 {
		return locs
	}
	ns := obj.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	kind := obj.Kind
	if obj.Group != "" {
		kind += "." + obj.Group
	}
	fq := strings.Join([]string{cluster, ns, kind, obj.Name}, "/")
	return []*sarif.Location{sarif.NewLocation().AddLogicalLocation(sarif.NewLogicalLocation().
		WithName(obj.Name).WithFullyQualifiedName(fq).WithKind("resource"))}
}

func sarifLevel(s plan.Severity) string {
	switch s {
	case plan.Critical:
		return sarif.LevelError
	case plan.Warning:
		return sarif.LevelWarning
	}
	return sarif.LevelNote
}

// sarifCodes are the finding codes of p, sorted.
func sarifCodes(p *plan.Plan) []string {
	seen := map[string]bool{}
	for _, f := range p.Findings {
		seen[f.Code] = true
	}
	for _, o := range p.Objects {
		for _, f := range o.Findings {
			seen[f.Code] = true
		}
	}
	codes := make([]string, 0, len(seen))
	for c := range seen {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// ruleText describes a finding code in one line.
func ruleText(code string) string {
	switch code {
	case plan.CodeBudget:
		return "Annotations are near the API server's 262,144-byte cap"
	case plan.CodeNextApplyFails:
		return "The next client-side kubectl apply would exceed the annotation cap"
	case plan.CodeStaleVsGit:
		return "The live object is behind its manifest in Git"
	case plan.CodeNotInGit:
		return "The object has no manifest in the GitOps repo"
	case plan.CodeAmbiguous:
		return "The object is defined more than once in Git"
	case plan.CodeRenderFailed:
		return "A source in Git could not be rendered"
	case plan.CodeRepoURL:
		return "The GitOps repo's URL"
	case plan.CodeOtherRepo:
		return "Existing Applications read a Git repo adopt cannot tie to --repo"
	case plan.CodeNotGitSource:
		return "Existing Applications read a Helm chart repository or OCI, which adopt does not render"
	case plan.CodeAppSetNotEvaluated:
		return "An ApplicationSet generator adopt does not evaluate"
	case plan.CodeSecret:
		return "A Secret: its values must not be committed in plain text"
	case plan.CodeHelm:
		return "Installed by a Helm release"
	case plan.CodeStaleTracking:
		return "A tracking mark that does not count"
	case plan.CodeUnread:
		return "The object's body could not be read"
	case plan.CodeArgoCDMissing:
		return "Argo CD is not installed in the cluster"
	case plan.CodeArgoCDUnchecked:
		return "Tracking ids could not be checked against the Applications"
	case plan.CodeNotRegistered:
		return "The destination cluster is not registered in Argo CD"
	case plan.CodeEntrypointWarning:
		return "A container entrypoint is repeated"
	case plan.CodeCSAMigrationFails:
		return "Argo CD's client-side-apply migration would fail at the first sync"
	case plan.CodeSyncWouldFail:
		return "The first sync would fail"
	case plan.CodeSyncWouldNotFit:
		return "The rollout the first sync starts would not fit on the nodes"
	case plan.CodeSyncChanges:
		return "The first sync would change the live object"
	case plan.CodePendingDeletion:
		return "Finalize would leave the object pending deletion"
	case plan.CodeHelmBlocked:
		return "A Helm release cannot be adopted"
	case plan.CodeHelmSecretValue:
		return "A Helm value is secret-like and written as a placeholder"
	case plan.CodeHelmHook:
		return "A Helm hook becomes an Argo CD hook"
	case plan.CodeHelmProof:
		return "The chart renders differently from the release"
	case plan.CodeHelmProofFailed:
		return "The chart could not be rendered"
	case plan.CodeHelmNewer:
		return "The Helm release has a newer revision"
	case plan.CodeHelmRecordsSkip:
		return "Helm release records could not be read"
	}
	return "adopt finding " + code
}
