package printer

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// JUnit writes p as a JUnit XML report for CI test tabs: one test suite,
// one test case per proposed Application, failing when any of its objects
// has a finding at or above o.FailOn (critical when empty). Findings below
// it are listed in the case's system-out. Plan-wide findings and objects
// that no Application adopts (a blocked Helm release) make one more case,
// "plan", present only when there are any.
func JUnit(w io.Writer, p *plan.Plan, o Options) error {
	failOn := o.FailOn
	if failOn == "" {
		failOn = plan.Critical
	}
	byApp := map[string][]*plan.Object{}
	var loose []*plan.Object
	for i := range p.Objects {
		obj := &p.Objects[i]
		if obj.App == "" {
			loose = append(loose, obj)
			continue
		}
		byApp[obj.App] = append(byApp[obj.App], obj)
	}
	suite := junitSuite{Name: "adopt plan " + p.ID, Time: "0", Hostname: p.Cluster.Server}
	if o.Version != "" {
		suite.Properties = []junitProperty{{Name: "adopt.version", Value: o.Version}}
	}
	suite.Properties = append(suite.Properties, junitProperty{Name: "fail-on", Value: string(failOn)})
	for _, a := range p.Applications {
		class := "adopt." + a.Namespace
		if a.Namespace == "" {
			class = "adopt.cluster-scoped"
		}
		suite.add(junitCase(a.Name, class, nil, byApp[a.Name], failOn))
	}
	if len(p.Findings) > 0 || len(loose) > 0 {
		suite.add(junitCase("plan", "adopt.plan", p.Findings, loose, failOn))
	}
	doc := junitSuites{Name: "adopt plan", Tests: suite.Tests, Failures: suite.Failures, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	if err := e.Encode(doc); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitCase is one case: it fails on the findings at or above failOn.
func junitCase(name, class string, planWide []plan.Finding, objs []*plan.Object, failOn plan.Severity) junitTestCase {
	var bad, rest []string
	note := func(prefix string, f plan.Finding) {
		line := fmt.Sprintf("%s [%s] %s: %s", prefix, f.Severity, f.Code, f.Message)
		if f.Severity.AtLeast(failOn) {
			bad = append(bad, line)
		} else {
			rest = append(rest, line)
		}
	}
	for _, f := range planWide {
		note("plan", f)
	}
	for _, o := range objs {
		for _, f := range o.Findings {
			note(o.Ref.String(), f)
		}
	}
	tc := junitTestCase{Name: name, Classname: class, Time: "0"}
	if len(bad) > 0 {
		tc.Failure = &junitFailure{
			Message: fmt.Sprintf("%d finding(s) at or above %s", len(bad), failOn),
			Type:    string(failOn),
			Text:    strings.Join(bad, "\n"),
		}
	}
	if len(rest) > 0 {
		tc.SystemOut = strings.Join(rest, "\n")
	}
	return tc
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitTestCase `xml:"testcase"`
}

func (s *junitSuite) add(tc junitTestCase) {
	s.Cases = append(s.Cases, tc)
	s.Tests++
	if tc.Failure != nil {
		s.Failures++
	}
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}
