package plan

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestBuildReadsNoRevision (issue 44): an existing Application pins
// another revision of the repo. Render reads it through the planner's
// Revisions; Build takes what Render read and calls none of them. Without
// Renders, Build reads nothing either and says the revision was not read.
func TestBuildReadsNoRevision(t *testing.T) {
	const url = "https://git.example/gitops.git"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: shop\ndata:\n  v: %s\n"
	ix := loadRepo(t, "", map[string]string{"apps/web/cm.yaml": strings.Replace(cm, "%s", "head", 1)})
	v1 := loadRepo(t, "", map[string]string{"apps/web/cm.yaml": strings.Replace(cm, "%s", "one", 1)})
	v1.Revision = "1111111111111111111111111111111111111111"
	cfg := config.Default()
	cfg.RepoURL = url
	inputs := func() Inputs {
		obj := discover.Object{Type: discover.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}, Namespace: "shop", Name: "web",
			Managers: []discover.Manager{{Manager: "kubectl-client-side-apply", Operation: "Update"}}}
		apps := argoapp.Applications{Installed: true, Verified: true, Specs: []argoapp.Spec{{Namespace: "argocd", Name: "web", Destination: "shop",
			Sources: []v1alpha1.ApplicationSource{{RepoURL: url, Path: "apps/web", TargetRevision: "v1"}}}}}
		return Inputs{Result: &discover.Result{Objects: []discover.Object{obj}}, Tracking: argoapp.TrackingFromConfig(nil, "argocd", ""),
			Cluster: Cluster{Server: "https://127.0.0.1:6443"}, Apps: apps, Config: cfg, Index: ix}
	}

	var reads []string
	revs := Revisions{
		At:   func(rev string) (*gitindex.Index, error) { reads = append(reads, "at "+rev); return v1, nil },
		Same: func(rev string) bool { reads = append(reads, "same "+rev); return false },
	}
	in := inputs()
	in.Renders = Render(in, revs)
	if got := strings.Join(reads, ", "); got != "at v1, same v1" {
		t.Errorf("Render read %q, want the Application's revision v1 read and compared", got)
	}
	reads = nil
	p := Build(in)
	if len(reads) > 0 {
		t.Errorf("Build read the repo (%q): revisions are Render's", reads)
	}
	o := p.Objects[0]
	if o.App != "web" || o.Git == nil || o.Git.Revision != v1.Revision {
		t.Errorf("the object is not matched at v1 under Application web: app %q, git %+v", o.App, o.Git)
	}

	p = Build(inputs())
	var found bool
	for _, f := range p.Findings {
		found = found || f.Code == CodeSourceNotRendered && strings.Contains(f.Message, "targetRevision v1 was not read")
	}
	if !found || p.Objects[0].App == "web" {
		t.Errorf("without Renders, Build did not say v1 was not read (findings %+v, app %q)", p.Findings, p.Objects[0].App)
	}
}
