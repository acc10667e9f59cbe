package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/printer"
)

// TestCIExamples: the CI examples in examples/ci are valid YAML, every
// `adopt plan` they run uses flags and formats adopt has, SARIF is
// written and uploaded (GitHub) or kept with a JUnit report (GitLab), and
// critical findings fail the run.
func TestCIExamples(t *testing.T) {
	root := newRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	planCmd, _, err := root.Find([]string{"plan"})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(c *cobra.Command, flag string) bool {
		name := strings.TrimLeft(strings.SplitN(flag, "=", 2)[0], "-")
		if strings.HasPrefix(flag, "--") {
			return c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil
		}
		return len(name) == 1 && (c.Flags().ShorthandLookup(name) != nil || c.InheritedFlags().ShorthandLookup(name) != nil)
	}
	invocation := regexp.MustCompile(`(?m)^[^#\n]*?\badopt plan ([^|>;&\n]*)`)
	for file, musts := range map[string][]string{
		"github-actions.yaml": {"github/codeql-action/upload-sarif", "sarif_file: adopt.sarif", "security-events: write", "sha256sum --check"},
		"gitlab-ci.yaml":      {"junit: adopt-junit.xml", "- adopt.sarif", "sha256sum --check"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", file))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil || len(doc) == 0 {
			t.Fatalf("%s: not YAML: %v", file, err)
		}
		for _, m := range musts {
			if !strings.Contains(string(b), m) {
				t.Errorf("%s lacks %q", file, m)
			}
		}
		var runs []string
		for _, m := range invocation.FindAllStringSubmatch(string(b), -1) {
			runs = append(runs, m[1])
		}
		formats, failOn := map[string]bool{}, false
		for _, r := range runs {
			args := strings.Fields(r)
			for i, a := range args {
				if !strings.HasPrefix(a, "-") {
					continue
				}
				if !lookup(planCmd, a) {
					t.Errorf("%s: adopt plan has no flag %s (in %q)", file, a, r)
				}
				if (a == "-o" || a == "--output") && i+1 < len(args) {
					if !slices.Contains(printer.Formats, args[i+1]) {
						t.Errorf("%s: unknown format %s", file, args[i+1])
					}
					formats[args[i+1]] = true
				}
				if a == "--fail-on" && i+1 < len(args) && args[i+1] == "critical" {
					failOn = true
				}
			}
		}
		if len(runs) == 0 || !formats["sarif"] || !failOn {
			t.Errorf("%s: runs %q, want -o sarif and --fail-on critical", file, runs)
		}
	}
}
