package printer

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestSARIF parses the log back, validates it against the SARIF 2.1.0
// JSON schema the go-sarif module ships, and checks what GitHub code
// scanning requires: version, $schema, tool.driver with its rules, and
// results with ruleId, level, message and locations.
func TestSARIF(t *testing.T) {
	var b bytes.Buffer
	if err := Print(&b, samplePlan(), "sarif", Options{Version: "v1.2.3"}); err != nil {
		t.Fatal(err)
	}
	rep, err := sarif.FromBytes(b.Bytes(), sarif.WithStrictValidation())
	if err != nil {
		t.Fatalf("not SARIF: %v\n%s", err, b.String())
	}
	if err := rep.Validate(); err != nil {
		t.Fatalf("against the SARIF 2.1.0 schema: %v", err)
	}
	// The validation can fail: a level the schema does not know.
	bad, err := sarif.FromBytes(bytes.Replace(b.Bytes(), []byte(`"level": "error"`), []byte(`"level": "fatal"`), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil {
		t.Fatal("a SARIF log with level \"fatal\" passed the schema")
	}

	// What code scanning reads, from the raw JSON.
	var raw struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name    string `json:"name"`
					Version string `json:"version"`
					Rules   []struct {
						ID               string `json:"id"`
						ShortDescription struct {
							Text string `json:"text"`
						} `json:"shortDescription"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct {
						FullyQualifiedName string `json:"fullyQualifiedName"`
						Kind               string `json:"kind"`
					} `json:"logicalLocations"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Version != "2.1.0" || !strings.Contains(raw.Schema, "sarif-schema-2.1.0.json") || len(raw.Runs) != 1 {
		t.Fatalf("version %q schema %q runs %d", raw.Version, raw.Schema, len(raw.Runs))
	}
	run := raw.Runs[0]
	if run.Tool.Driver.Name != "adopt" || run.Tool.Driver.Version != "v1.2.3" {
		t.Fatalf("driver %+v", run.Tool.Driver)
	}
	wantRules := []string{plan.CodeAmbiguous, plan.CodeBudget, plan.CodeArgoCDUnchecked, plan.CodeNextApplyFails, plan.CodeNotInGit, plan.CodeSecret}
	if len(run.Tool.Driver.Rules) != len(wantRules) {
		t.Fatalf("rules %+v, want %v", run.Tool.Driver.Rules, wantRules)
	}
	for i, r := range run.Tool.Driver.Rules {
		if r.ID != wantRules[i] || r.ShortDescription.Text == "" || strings.HasPrefix(r.ShortDescription.Text, "adopt finding") {
			t.Errorf("rule %d: %+v, want %s with its own description", i, r, wantRules[i])
		}
	}
	// One result per finding: 1 plan-wide + 2 + 1 + 2 + 0 + 1.
	if len(run.Results) != 7 {
		t.Fatalf("%d results, want 7", len(run.Results))
	}
	type loc struct {
		uri  string
		line int
		fq   string
	}
	got := map[string][]loc{}
	levels := map[string]string{}
	for _, r := range run.Results {
		if r.RuleID == "" || r.Message.Text == "" || len(r.Locations) == 0 || r.PartialFingerprints["adoptFinding/v1"] == "" {
			t.Fatalf("result lacks ruleId, message, locations or fingerprint: %+v", r)
		}
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s has ruleIndex %d (%s)", r.RuleID, r.RuleIndex, run.Tool.Driver.Rules[r.RuleIndex].ID)
		}
		key := r.PartialFingerprints["adoptFinding/v1"]
		levels[key] = r.Level
		for _, l := range r.Locations {
			var x loc
			if l.PhysicalLocation != nil {
				x.uri, x.line = l.PhysicalLocation.ArtifactLocation.URI, l.PhysicalLocation.Region.StartLine
			}
			for _, ll := range l.LogicalLocations {
				x.fq = ll.Kind + ":" + ll.FullyQualifiedName
			}
			got[key] = append(got[key], x)
		}
	}
	want := map[string][]loc{
		"plan/" + plan.CodeArgoCDUnchecked:                                  {{fq: "cluster:prod"}},
		"ConfigMap litellm/hook/" + plan.CodeNextApplyFails:                 {{uri: "apps/litellm/hook.yaml", line: 12}},
		"ConfigMap litellm/hook/" + plan.CodeBudget:                         {{uri: "apps/litellm/hook.yaml", line: 12}},
		"ConfigMap litellm/twice/" + plan.CodeAmbiguous:                     {{uri: "a/twice.yaml", line: 1}, {uri: "b/twice.yaml", line: 7}},
		"Secret litellm/token/" + plan.CodeSecret:                           {{fq: "resource:prod/litellm/Secret/token"}},
		"Secret litellm/token/" + plan.CodeNotInGit:                         {{fq: "resource:prod/litellm/Secret/token"}},
		"rbac.authorization.k8s.io/ClusterRole reader/" + plan.CodeNotInGit: {{fq: "resource:prod/_cluster/ClusterRole.rbac.authorization.k8s.io/reader"}},
	}
	for k, w := range want {
		g := got[k]
		if len(g) != len(w) {
			t.Errorf("%s: locations %+v, want %+v", k, g, w)
			continue
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s: location %d %+v, want %+v", k, i, g[i], w[i])
			}
		}
	}
	wantLevels := map[string]string{
		"ConfigMap litellm/hook/" + plan.CodeNextApplyFails: "error",
		"ConfigMap litellm/hook/" + plan.CodeBudget:         "warning",
		"Secret litellm/token/" + plan.CodeNotInGit:         "note",
	}
	for k, w := range wantLevels {
		if levels[k] != w {
			t.Errorf("%s: level %q, want %q", k, levels[k], w)
		}
	}
}

// TestSARIFEmpty: a plan with no findings is still a valid log with no
// results, so code scanning closes earlier alerts.
func TestSARIFEmpty(t *testing.T) {
	var b bytes.Buffer
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Cluster: plan.Cluster{Server: "https://x"}}
	if err := SARIF(&b, p, Options{}); err != nil {
		t.Fatal(err)
	}
	rep, err := sarif.FromBytes(b.Bytes(), sarif.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Results) != 0 {
		t.Fatalf("runs %+v", rep.Runs)
	}
}
