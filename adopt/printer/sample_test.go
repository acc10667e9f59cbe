package printer

import (
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// samplePlan is a plan with every kind of location the CI formats handle:
// an object matched in Git, one defined twice, one only in the cluster, a
// cluster-scoped one, a clean Application and a plan-wide finding.
func samplePlan() *plan.Plan {
	p := &plan.Plan{
		APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-0123456789abcdef",
		Cluster: plan.Cluster{Server: "https://127.0.0.1:6443", Context: "prod"},
		Findings: []plan.Finding{
			{Code: plan.CodeArgoCDUnchecked, Severity: plan.Warning, Message: "Applications could not be listed"},
		},
		Applications: []plan.Application{
			{Name: "adopt-litellm", Namespace: "litellm", Objects: []string{"ConfigMap litellm/hook", "ConfigMap litellm/twice", "Secret litellm/token"}},
			{Name: "adopt-quiet", Namespace: "quiet", Objects: []string{"ConfigMap quiet/small"}},
			{Name: "adopt-cluster", Objects: []string{"rbac.authorization.k8s.io/ClusterRole reader"}},
		},
		Objects: []plan.Object{
			{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "litellm", Name: "hook"}, App: "adopt-litellm", Risk: plan.Critical,
				Git: &plan.GitMatch{Path: "apps/litellm/hook.yaml", Line: 12},
				Findings: []plan.Finding{
					{Code: plan.CodeNextApplyFails, Severity: plan.Critical, Message: "the next client-side apply fails"},
					{Code: plan.CodeBudget, Severity: plan.Warning, Message: "annotations are 200000 B"},
				}},
			{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "litellm", Name: "twice"}, App: "adopt-litellm", Risk: plan.Warning,
				Ambiguous: []plan.GitMatch{{Path: "a/twice.yaml", Line: 1}, {Path: "b/twice.yaml", Line: 7}},
				Findings:  []plan.Finding{{Code: plan.CodeAmbiguous, Severity: plan.Warning, Message: "defined 2 times in Git"}}},
			{Ref: objref.Ref{Version: "v1", Kind: "Secret", Namespace: "litellm", Name: "token"}, App: "adopt-litellm", Risk: plan.Warning,
				Findings: []plan.Finding{
					{Code: plan.CodeSecret, Severity: plan.Warning, Message: "a Secret"},
					{Code: plan.CodeNotInGit, Severity: plan.Info, Message: "no manifest"},
				}},
			{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "quiet", Name: "small"}, App: "adopt-quiet"},
			{Ref: objref.Ref{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader"}, App: "adopt-cluster", Risk: plan.Info,
				Findings: []plan.Finding{{Code: plan.CodeNotInGit, Severity: plan.Info, Message: "no manifest"}}},
		},
	}
	return p
}
