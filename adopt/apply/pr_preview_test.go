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
	for _, want := range []string{
		"<details><summary>First sync preview (server-side dry run as argocd-controller): 0 no-op, 1 changing, 1 failing</summary>",
		"- `ConfigMap litellm-test/litellm-test-usage-hook`: **changes 1**\n  - data.usage_hook.py +8,126 B (248,706 B → 256,832 B)\n  - pending deletion after finalize: `data.old_key`",
		"- `Service litellm-test/litellm`: **fails**\n  - the API server says: Service \"litellm\" is invalid",
		"</details>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q\n%s", want, body)
		}
	}
}
