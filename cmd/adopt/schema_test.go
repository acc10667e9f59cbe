package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/schemas"
)

// runAdopt is how the package's tests run the CLI in-process (run invoked
// as argv0), and the only way: TestEveryRunIsChecked fails on any other
// call of run or runAs. After a run that exits 0 or 3 it validates every
// AdoptionPlan and FleetAdoptionPlan the run wrote against schemas/ (the
// --out file, each plan and fleet.yaml in --out-dir, stdout under -o
// json|yaml), so no test writes a plan that is not checked.
func runAdopt(t testing.TB, argv0 string, args []string, in io.Reader, out, errOut io.Writer) int {
	t.Helper()
	return runAdoptEnv(t, nil, argv0, args, in, out, errOut)
}

// runAdoptEnv is runAdopt with adopt's environment variables env over the
// process's: a parallel test cannot t.Setenv, and adopt reads its own
// variables through invocation.getenv.
func runAdoptEnv(t testing.TB, env map[string]string, argv0 string, args []string, in io.Reader, out, errOut io.Writer) int {
	t.Helper()
	completing := strings.HasPrefix(filepath.Base(argv0), "kubectl_complete-") // completes its last argument
	if verbOf(args) == "finalize" && !completing && !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--settle") || strings.HasPrefix(a, "__complete") || a == "help" || a == "--help" || a == "-h" || a == "--"
	}) {
		// A short settle window: the tests of the window give their own.
		args = append(slices.Clip(args), "--settle=100ms")
	}
	var stdout bytes.Buffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code := runIn(invocationOf(argv0, getenv), args, in, io.MultiWriter(out, &stdout), errOut)
	checkWritten(t, args, stdout.Bytes(), code)
	return code
}

// writePlanFile is plan.WriteFile for the tests that build or edit a plan
// by hand, and the only way they write one: it fails the test when the
// plan does not validate against schemas/adoption-plan.json.
func writePlanFile(t testing.TB, path string, p *plan.Plan) {
	t.Helper()
	if err := plan.WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = schemas.ValidatePlan(b)
	}
	if err != nil {
		t.Errorf("the plan the test wrote to %s: %v", path, err)
	}
}

func checkWritten(t testing.TB, args []string, stdout []byte, code int) {
	t.Helper()
	if code != ExitOK && code != ExitFindings {
		return
	}
	for _, err := range schemas.Written(args, stdout) {
		t.Errorf("adopt %s: %v", strings.Join(args, " "), err)
	}
}

// TestEveryRunIsChecked: no test of the package calls run or runAs but
// through runAdopt (a local closure named run is not the package's), nor
// plan.WriteFile but through writePlanFile.
func TestEveryRunIsChecked(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv == nil && (fd.Name.Name == "runAdopt" || fd.Name.Name == "writePlanFile") {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "WriteFile" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "plan" {
						t.Errorf("%s: plan.WriteFile called directly: call writePlanFile, which validates the plan", fset.Position(c.Pos()))
					}
				}
				id, ok := c.Fun.(*ast.Ident)
				// Obj is nil for a package-level function declared in
				// another file (root.go), a Var for a local closure.
				if ok && (id.Name == "run" || id.Name == "runAs") && (id.Obj == nil || id.Obj.Kind == ast.Fun) {
					t.Errorf("%s: %s called directly: call runAdopt, which validates the plans the run writes", fset.Position(c.Pos()), id.Name)
				}
				if ok && id.Name == "runAdopt" {
					calls++
				}
				return true
			})
		}
	}
	if calls < 5 {
		t.Errorf("runAdopt is called %d times: the check above found nothing to check", calls)
	}
}

// errs records a testing.TB's errors.
type errs struct {
	testing.TB
	got []string
}

func (e *errs) Helper()                      {}
func (e *errs) Errorf(f string, args ...any) { e.got = append(e.got, fmt.Sprintf(f, args...)) }

// TestCheckWrittenFailsOnABadPlan: the hook runAdopt runs makes the test
// fail on a plan that does not validate, in --out, in --out-dir or on
// stdout, and is quiet for a failed run, another command, or a good plan.
func TestCheckWrittenFailsOnABadPlan(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptionPlan\nobjects: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := cp.Namespace(t)
	good := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", good); code != ExitOK {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	emptyJSON := []byte(`{"apiVersion": "adopt.dev/v1alpha1", "kind": "AdoptionPlan"}`)
	for _, c := range []struct {
		name   string
		args   []string
		stdout []byte
		code   int
		want   int
	}{
		{"a plan without cluster, tracking or summary", []string{"plan", "--out=" + bad}, nil, ExitOK, 1},
		{"the same with findings", []string{"plan", "--out", bad}, nil, ExitFindings, 1},
		{"an empty plan on stdout", []string{"plan", "-o", "json"}, emptyJSON, ExitOK, 1},
		{"a bad plan in --out-dir", []string{"plan", "--contexts", "a,b", "--out-dir", dir, "-o", "yaml"}, emptyJSON, ExitOK, 2},
		{"a failed run", []string{"plan", "--out", bad}, nil, ExitError, 0},
		{"apply reads --plan, it does not write it", []string{"apply", "--plan", bad}, nil, ExitOK, 0},
		{"the plan a real run wrote", []string{"plan", "--out", good}, nil, ExitOK, 0},
	} {
		e := &errs{TB: t}
		checkWritten(e, c.args, c.stdout, c.code)
		if len(e.got) != c.want {
			t.Errorf("%s: %d errors %q, want %d", c.name, len(e.got), e.got, c.want)
		}
	}
}
