package printer

import (
	"bytes"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/adopt-dev/adopt/adopt/plan"
)

func TestJUnit(t *testing.T) {
	cases := []struct {
		failOn plan.Severity
		failed map[string]bool
	}{
		{"", map[string]bool{"adopt-litellm": true}},
		{plan.Critical, map[string]bool{"adopt-litellm": true}},
		{plan.Warning, map[string]bool{"adopt-litellm": true, "plan": true}},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := Print(&b, samplePlan(), "junit", Options{FailOn: c.failOn, Version: "v1.2.3"}); err != nil {
			t.Fatal(err)
		}
		suites, err := junit.Ingest(b.Bytes())
		if err != nil {
			t.Fatalf("fail-on %q: not JUnit: %v\n%s", c.failOn, err, b.String())
		}
		if len(suites) != 1 {
			t.Fatalf("fail-on %q: %d suites", c.failOn, len(suites))
		}
		s := suites[0]
		var names []string
		for _, tc := range s.Tests {
			names = append(names, tc.Name)
			if tc.Status == junit.StatusFailed != c.failed[tc.Name] {
				t.Errorf("fail-on %q: %s is %s, want failed=%v (%s)", c.failOn, tc.Name, tc.Status, c.failed[tc.Name], tc.Message)
			}
		}
		// One case per proposed Application, then the plan-wide case.
		if got := strings.Join(names, ","); got != "adopt-litellm,adopt-quiet,adopt-cluster,plan" {
			t.Fatalf("fail-on %q: cases %s", c.failOn, got)
		}
		if s.Totals.Failed != len(c.failed) || s.Properties["adopt.version"] != "v1.2.3" {
			t.Errorf("fail-on %q: totals %+v properties %v", c.failOn, s.Totals, s.Properties)
		}
		lit := s.Tests[0]
		if lit.Error == nil || !strings.Contains(lit.Error.Error(), "ConfigMap litellm/hook") {
			t.Errorf("fail-on %q: the failure does not name the object: %+v", c.failOn, lit.Error)
		}
		if c.failOn == plan.Warning && !strings.Contains(lit.Error.Error(), "Secret litellm/token [warning] secret") {
			t.Errorf("fail-on warning: the warning is not in the failure: %v", lit.Error)
		}
		if c.failOn != plan.Warning && !strings.Contains(lit.SystemOut, "Secret litellm/token [warning] secret") {
			t.Errorf("fail-on %q: the warning is not in system-out: %q", c.failOn, lit.SystemOut)
		}
	}
}

// TestJUnitNoPlanCase: without plan-wide findings or unadopted objects
// there is exactly one case per Application.
func TestJUnitNoPlanCase(t *testing.T) {
	p := samplePlan()
	p.Findings = nil
	var b bytes.Buffer
	if err := JUnit(&b, p, Options{}); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != 1 || len(suites[0].Tests) != len(p.Applications) {
		t.Fatalf("suites %+v", suites)
	}
}
