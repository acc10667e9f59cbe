package plan

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzASCIIScalar checks asciiScalar against yaml.v3 on any string it
// claims: long ones (yaml.v3's line width), every indicator, quotes.
func FuzzASCIIScalar(f *testing.F) {
	for _, s := range append([]string{strings.Repeat("word ", 40) + "end", "a: b", "a #b", "yes", "x'y", "ab "}, awkward...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := asciiScalar(s)
		if !ok {
			return
		}
		b, err := yaml.Marshal([]string{s})
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(strings.TrimPrefix(string(b), "- "), "\n"); got != want {
			t.Fatalf("asciiScalar(%q) = %s, yaml.v3 writes %s", s, got, want)
		}
	})
}
