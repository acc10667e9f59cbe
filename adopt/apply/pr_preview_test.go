package apply

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/preview"
)

// TestPRBodyCarriesThePreview checks that a plan made with --preview puts a
// collapsed first-sync section per Application into the PR body, and that a
// plan without it leaves the section out.
func TestPRBodyCarriesThePreview(t *testing.T) {
	in := prInput()
	_, plain, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "<details>") {
		t.Fatal("a plan without --preview produced a preview section")
	}
	for i := range in.Plan.Objects {
		ob := &in.Plan.Objects[i]
		switch ob.Kind {
		case "ConfigMap":
			ob.Preview = &preview.Result{Outcome: preview.Changes, Changes: []preview.Change{{Path: "data.usage_hook.py", Text: "data.usage_hook.py +8,126 B (248,706 B → 256,832 B)"}},
				PendingDeletions: []preview.Field{{Path: "data.old_key", Managers: []string{"kubectl-client-side-apply"}}}}
		case "Service":
			ob.Preview = &preview.Result{Outcome: preview.WouldFail, Verdict: `Service "litellm" is invalid: spec.clusterIPs[0]: Invalid value: ["10.0.0.9"]: may not change once set`}
		}
	}
	_, body, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	bodyHas(t, body,
		"<details><summary>First sync preview (server-side dry run as argocd-controller): 0 no-op, 1 changing, 1 failing</summary>",
		"- `ConfigMap litellm-test/litellm-test-usage-hook`: **changes 1**\n  - data.usage_hook.py +8,126 B (248,706 B → 256,832 B)\n  - pending deletion after finalize: `data.old_key`",
		"- `Service litellm-test/litellm`: **fails**\n  - the API server says: Service \"litellm\" is invalid",
		"</details>",
	)
}

// TestPRBodyListsIgnoreDifferences: the PR body says, under each
// Application, what apply writes of the plan's ignoreDifferences (or that
// they are turned off, and by what), with each entry's reason and source.
func TestPRBodyListsIgnoreDifferences(t *testing.T) {
	in := prInput()
	entry := preview.IgnoreDifference{Group: "apps", Kind: "Deployment", Namespace: "litellm-test", Name: "litellm", ManagedFieldsManagers: []string{"replica-manager"},
		Fields: []string{"spec.replicas"}, Reason: "replica-manager (Apply) owns spec.replicas", Source: preview.SourceManagedFields}
	in.Plan.Applications[0].IgnoreDifferences = []preview.IgnoreDifference{entry}
	_, body, err := RenderPR(in, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "1 ignoreDifferences entry written, with RespectIgnoreDifferences=true (fields another writer owns; turn off with --no-ignore-differences):\n\n" +
		"- `apps/Deployment litellm-test/litellm: managedFieldsManagers [replica-manager] (spec.replicas)`: replica-manager (Apply) owns spec.replicas (source: managedFields)"
	if !strings.Contains(body, want) {
		t.Errorf("body lacks %q\n%s", want, body)
	}
	in.Plan.Applications[0].IgnoreDifferencesOff = "turned off by --no-ignore-differences"
	if _, body, err = RenderPR(in, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "1 ignoreDifferences entry NOT written (turned off by --no-ignore-differences)") {
		t.Errorf("body does not say the entry is turned off:\n%s", body)
	}
}
