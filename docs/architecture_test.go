// Package docs holds the project's documentation; its test checks that
// docs/architecture.md still names every package.
package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchitectureNamesEveryPackage (issue 44): every package directory
// under adopt/ and internal/ is named in architecture.md, so the page
// cannot fall behind the tree unnoticed.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"adopt", "internal"} {
		entries, err := os.ReadDir(filepath.Join("..", root))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if gos, _ := filepath.Glob(filepath.Join("..", root, e.Name(), "*.go")); len(gos) == 0 {
				continue // not a package
			}
			if name := root + "/" + e.Name(); !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/architecture.md does not name package %s: add a row saying what it owns and must not do", name)
			}
		}
	}
}
