package yamlenc

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// claimed are strings asciiScalar renders itself, one of each kind: plain,
// quoted as a bool, null or number, single-quoted for an indicator or a
// trailing space, and long (yaml.v3 has no line width here).
var claimed = []string{"", "plain", "ok-name_1.x/y", "True", "yes", "N", "off", "null", "0777", "089", "42", "/etc/x: y", "_v", "/",
	"a: b", "key:", "a #b", "a#b", "it's", "x'y: z", "trail ", "Yes please", strings.Repeat("word ", 40) + "end"}

// yamlv3Scalar is how yaml.v3 writes s as a list item, without "- ".
func yamlv3Scalar(t *testing.T, s string) string {
	t.Helper()
	b, err := yaml.Marshal([]string{s})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(b), "- "), "\n")
}

// TestASCIIScalarIsYAMLv3 checks asciiScalar against yaml.v3 on the
// claimed strings, on 20,000 strings drawn from YAML's indicators and on
// 2,000 runs of digits up to 20 long.
func TestASCIIScalarIsYAMLv3(t *testing.T) {
	const alphabet = "aZy0 :#'\"-,[]{}?!&*|>%@`~.\\/_"
	const first = "aZynNtTfFoO/_"
	r := rand.New(rand.NewPCG(1, 2))
	strs := append([]string{}, claimed...)
	for i := 0; i < 20000; i++ {
		b := []byte{first[r.IntN(len(first))]}
		for n := r.IntN(8); n > 0; n-- {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		strs = append(strs, string(b))
	}
	for i := 0; i < 2000; i++ {
		var b []byte
		for n := 1 + r.IntN(20); n > 0; n-- {
			b = append(b, "0123456789"[r.IntN(10)])
		}
		strs = append(strs, string(b))
	}
	checked := 0
	for _, s := range append(strs, "ü", " x", "x\ny", "-x", "it's: 'q'") {
		got, ok := asciiScalar(s)
		if b, bok := AppendASCII([]byte("k: "), s); bok != ok || string(b) != "k: "+got {
			t.Fatalf("AppendASCII(%q) = %q, %v; asciiScalar gives %q, %v", s, b, bok, got, ok)
		}
		if ok {
			if want := yamlv3Scalar(t, s); got != want {
				t.Fatalf("%q: got %s, yaml.v3 writes %s", s, got, want)
			}
			checked++
		}
	}
	if checked < 21000 {
		t.Fatalf("only %d strings checked", checked)
	}
}

// FuzzASCIIScalar checks asciiScalar against yaml.v3 on any string it
// claims: long ones (yaml.v3's line width), every indicator, quotes.
func FuzzASCIIScalar(f *testing.F) {
	for _, s := range append(claimed, "two\nlines", " lead", "ünï", "\xff", "[x]", "*star", "tab\there") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, ok := asciiScalar(s); ok {
			if want := yamlv3Scalar(t, s); got != want {
				t.Fatalf("asciiScalar(%q) = %s, yaml.v3 writes %s", s, got, want)
			}
		}
	})
}

// TestKeyOrderIsYAMLv3 checks keyLess against the order yaml.v3 gives
// the keys of maps of 30 keys drawn from letters of both cases, digits
// (with zeros, and Arabic-Indic ones), punctuation and accented letters,
// and that a Writer writes such maps, nested, as yaml.v3 does.
func TestKeyOrderIsYAMLv3(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "_", "-", ".", "/", "0", "0", "1", "9", "é", "٣", " "}
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 500; round++ {
		m := map[string]any{}
		for len(m) < 30 {
			var k strings.Builder
			for n := 1 + r.IntN(6); n > 0; n-- {
				k.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			m[k.String()] = map[string]any{k.String(): round}
		}
		var n yaml.Node
		if err := n.Encode(m); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := 0; i < len(n.Content); i += 2 {
			want = append(want, n.Content[i].Value)
		}
		got := make([]string, 0, len(m))
		for k := range m {
			got = append(got, k)
		}
		slices.SortFunc(got, keyCompare)
		if !slices.Equal(got, want) {
			t.Fatalf("keys in order\n%q\nyaml.v3's order\n%q", got, want)
		}
		var b bytes.Buffer
		e := yaml.NewEncoder(&b)
		e.SetIndent(2)
		if err := e.Encode(m); err != nil {
			t.Fatal(err)
		}
		w := New()
		if err := w.Doc(reflect.ValueOf(m)); err != nil {
			t.Fatal(err)
		}
		if string(w.Buf) != b.String() {
			t.Fatalf("Writer wrote\n%s\nyaml.v3 writes\n%s", w.Buf, b.String())
		}
	}
}

// TestInlineIsYAMLv3 checks an embedded struct tagged ",inline" against
// yaml.v3, and that one without the tag or with a key twice is left to
// yaml.v3.
func TestInlineIsYAMLv3(t *testing.T) {
	type inner struct {
		A string `yaml:"a"`
		B string `yaml:"b,omitempty"`
	}
	type outer struct {
		inner `yaml:",inline"`
		C     int `yaml:"c"`
	}
	for _, v := range []outer{{inner{"x", "y"}, 1}, {inner{A: "x"}, 0}, {}} {
		want, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		w := New()
		if err := w.Doc(reflect.ValueOf(v)); err != nil {
			t.Fatal(err)
		}
		if string(w.Buf) != string(want) {
			t.Fatalf("Writer wrote\n%s\nyaml.v3 writes\n%s", w.Buf, want)
		}
	}
	type plain struct {
		inner
		C int `yaml:"c"`
	}
	type twice struct {
		inner `yaml:",inline"`
		A     string `yaml:"a"`
	}
	for _, v := range []any{plain{}, twice{}} {
		if err := New().Doc(reflect.ValueOf(v)); err != ErrShape {
			t.Errorf("%T: %v, want ErrShape", v, err)
		}
	}
}
