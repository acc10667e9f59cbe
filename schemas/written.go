package schemas

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// Validate checks an adopt document (YAML or JSON) against the schema its
// kind names: AdoptionPlan, FleetAdoptionPlan or AdoptConfig. Any other
// kind is an error.
func Validate(doc []byte) error {
	var head struct {
		Kind string `yaml:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	switch head.Kind {
	case plan.Kind:
		return ValidatePlan(doc)
	case fleet.Kind:
		return ValidateFleet(doc)
	case config.Kind:
		return ValidateConfig(doc)
	}
	return fmt.Errorf("kind %q is none of %s, %s, %s", head.Kind, plan.Kind, fleet.Kind, config.Kind)
}

// Written validates what one `adopt plan` run wrote, for the tests that run
// adopt: the --out file, every *.yaml in --out-dir (each cluster's plan and
// fleet.yaml) and stdout under -o json|yaml. args are adopt's arguments
// (without the program name); call it for a run that exited 0 or 3
// (findings), the runs that write a plan. Runs of other commands give nil.
func Written(args []string, stdout []byte) []error {
	if !slices.Contains(args, "plan") {
		return nil
	}
	var files []string
	if f := flagValue(args, "--out"); f != "" {
		files = append(files, f)
	}
	if d := flagValue(args, "--out-dir"); d != "" {
		m, _ := filepath.Glob(filepath.Join(d, "*.yaml"))
		if len(m) == 0 {
			return []error{fmt.Errorf("--out-dir %s holds no plan", d)}
		}
		files = append(files, m...)
	}
	var errs []error
	check := func(name string, doc []byte) {
		if err := Validate(doc); err != nil {
			errs = append(errs, fmt.Errorf("%s does not validate: %w", name, err))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("plan file %s: %w", f, err))
			continue
		}
		check(f, b)
	}
	switch o := flagValue(args, "-o", "--output"); o {
	case "json", "yaml":
		check("stdout (-o "+o+")", stdout)
	}
	return errs
}

// flagValue is the last value of any of the flags names in args, as
// "--f v" or "--f=v".
func flagValue(args []string, names ...string) string {
	v := ""
	for i, a := range args {
		for _, n := range names {
			switch {
			case a == n && i+1 < len(args):
				v = args[i+1]
			case strings.HasPrefix(a, n+"="):
				v = strings.TrimPrefix(a, n+"=")
			}
		}
	}
	return v
}
