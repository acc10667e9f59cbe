// Package docs holds the project's documentation; its tests check that
// docs/architecture.md still names every package, that the engine entries
// it names exist, and that its diagram follows adopt/planner's order.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func architecture(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// TestArchitectureNamesEveryPackage (issue 44): every package directory of
// the module (adopt/…, argoapp, gitops, internal/…, and the rest, at any
// depth) is named in architecture.md, so the page cannot fall behind the
// tree unnoticed.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc := architecture(t)
	var pkgs []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == ".." {
			return err
		}
		if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
			return filepath.SkipDir // a module of its own
		}
		if gos, _ := filepath.Glob(filepath.Join(p, "*.go")); len(gos) > 0 {
			rel, _ := filepath.Rel("..", p)
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"adopt/plan", "argoapp", "gitops", "internal/testenv", "internal/demo/estate"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("the walk of the module found %q, not %s: the test is broken", pkgs, want)
		}
	}
	for _, p := range pkgs {
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/architecture.md does not name package %s: add a row saying what it owns and must not do", p)
		}
	}
}

// TestArchitectureEngineEntriesExist (issue 44): every pkg.Name the verb
// table names (engine entries and printers) is declared in that package.
func TestArchitectureEngineEntriesExist(t *testing.T) {
	doc := architecture(t)
	start := strings.Index(doc, "| verb |")
	end := strings.Index(doc[start:], "\n\n")
	if start < 0 || end < 0 {
		t.Fatal("docs/architecture.md has no verb table")
	}
	table := doc[start : start+end]
	entries := regexp.MustCompile("`([a-z]+)\\.([A-Z][A-Za-z]*)`").FindAllStringSubmatch(table, -1)
	if len(entries) < 10 {
		t.Fatalf("the verb table names %d engine entries: the test is broken", len(entries))
	}
	declared := map[string]map[string]bool{}
	for _, e := range entries {
		pkg, name := e[1], e[2]
		if declared[pkg] == nil {
			declared[pkg] = decls(t, pkg)
		}
		if !declared[pkg][name] {
			t.Errorf("docs/architecture.md's verb table names %s.%s, which adopt/%s does not declare", pkg, name, pkg)
		}
	}
}

// decls are the top-level names package adopt/<pkg> declares.
func decls(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join("..", "adopt", pkg), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					out[d.Name.Name] = true
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							out[s.Name.Name] = true
						case *ast.ValueSpec:
							for _, n := range s.Names {
								out[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return out
}

// TestDiagramFollowsPlanner (issue 44): the diagram's pipeline line names
// the stages in the order adopt/planner's Plan runs them, each known by
// the call in Plan that runs it.
func TestDiagramFollowsPlanner(t *testing.T) {
	runs := map[string][]string{
		"gitindex.Load":    {"adopt/gitindex"},
		"discover.Collect": {"adopt/discover"},
		"helmReleases":     {"adopt/helmrelease"},
		"plan.Build":       {"adopt/judge", "adopt/plan"}, // Build judges, then plans
		"firstSync":        {"adopt/preview"},
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "adopt", "planner", "planner.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Plan" || fn.Recv != nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch f := call.Fun.(type) {
			case *ast.Ident:
				name = f.Name
			case *ast.SelectorExpr:
				if x, ok := f.X.(*ast.Ident); ok {
					name = x.Name + "." + f.Sel.Name
				}
			}
			for _, stage := range runs[name] {
				if !slices.Contains(order, stage) {
					order = append(order, stage)
				}
			}
			return true
		})
	}
	if len(order) != 6 {
		t.Fatalf("planner.Plan calls %q of the stages' calls %v: update this test's calls to the stages Plan runs", order, runs)
	}
	var line string
	for _, l := range strings.Split(architecture(t), "\n") {
		if strings.Contains(l, "──►") && strings.Contains(l, "adopt/discover") {
			line = l
			break
		}
	}
	var drawn []string
	for _, s := range regexp.MustCompile(`adopt/[a-z]+`).FindAllString(line, -1) {
		if slices.Contains(order, s) {
			drawn = append(drawn, s)
		}
	}
	if strings.Join(drawn, " → ") != strings.Join(order, " → ") {
		t.Errorf("docs/architecture.md's diagram draws the pipeline as\n  %s\nbut planner.Plan runs\n  %s", strings.Join(drawn, " → "), strings.Join(order, " → "))
	}
}
