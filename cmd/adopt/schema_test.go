package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/schemas"
)

// checkPlans validates every AdoptionPlan a `plan` run of the tests wrote
// against schemas/adoption-plan.json: the --out file, each plan in
// --out-dir, and stdout under -o json or -o yaml. adopt() calls it, so
// every plan the package's tests make through it is checked.
func checkPlans(t *testing.T, args []string, stdout string, code int) {
	t.Helper()
	for _, err := range planSchemaErrors(args, stdout, code) {
		t.Error(err)
	}
}

func planSchemaErrors(args []string, stdout string, code int) []error {
	if (code != ExitOK && code != ExitFindings) || !argsHave(args, "plan") {
		return nil
	}
	var errs []error
	var files []string
	if f := flagValue(args, "--out"); f != "" {
		files = append(files, f)
	}
	if d := flagValue(args, "--out-dir"); d != "" {
		m, _ := filepath.Glob(filepath.Join(d, "*.yaml"))
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("plan file %s: %w", f, err))
			continue
		}
		errs = appendErr(errs, planDocError(f, b))
	}
	switch o := flagValue(args, "-o", "--output"); o {
	case "json", "yaml":
		errs = appendErr(errs, planDocError("stdout (-o "+o+")", []byte(stdout)))
	}
	return errs
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// planDocError validates doc when it is an AdoptionPlan.
func planDocError(name string, doc []byte) error {
	var head struct {
		Kind string `yaml:"kind"`
	}
	if yaml.Unmarshal(doc, &head) != nil || head.Kind != plan.Kind {
		return nil
	}
	if err := schemas.ValidatePlan(doc); err != nil {
		return fmt.Errorf("plan %s does not validate: %w", name, err)
	}
	return nil
}

func argsHave(args []string, verb string) bool {
	for _, a := range args {
		if a == verb {
			return true
		}
	}
	return false
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

func TestCheckPlansFindsBadPlans(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptionPlan\nobjects: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := planSchemaErrors([]string{"plan", "--out=" + bad}, "", ExitOK); len(errs) != 1 {
		t.Fatalf("a plan without cluster, tracking or summary: %v, want one error", errs)
	}
	stdout := "{\"apiVersion\": \"adopt.dev/v1alpha1\", \"kind\": \"AdoptionPlan\"}"
	if errs := planSchemaErrors([]string{"plan", "-o", "json"}, stdout, ExitFindings); len(errs) != 1 {
		t.Fatalf("an empty plan on stdout: %v, want one error", errs)
	}
	if errs := planSchemaErrors([]string{"apply", "--plan", bad}, "", ExitOK); len(errs) != 0 {
		t.Fatalf("apply's --plan is not written by it: %v", errs)
	}
}
