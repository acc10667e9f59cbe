package status

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestMergedGeneratedApplication (issue 46): a merged Application the
// repo's ApplicationSet generates is waited for from the set, never
// applied by hand.
func TestMergedGeneratedApplication(t *testing.T) {
	o := Place(Facts{Merged: true, ArgoNS: "argocd", GitRead: true,
		App: plan.Application{Name: "coupons-qa", SourcePath: "apps/coupons/envs/qa", Generator: &plan.Generator{ApplicationSet: "argocd/fleet-qa"}}})
	if o.Stage != StageMerged || strings.Contains(o.Next, "kubectl apply") || !strings.Contains(o.Next, "kubectl annotate -n argocd applicationset fleet-qa argocd.argoproj.io/application-set-refresh=true") {
		t.Errorf("stage %s, next %q", o.Stage, o.Next)
	}
}
