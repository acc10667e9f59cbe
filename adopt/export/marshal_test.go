package export

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/yamlenc"
)

// sameAsYAMLv3 checks that Marshal writes obj as marshalYAMLv3 does, byte
// for byte (or fails where it fails), and reports whether yamlenc wrote
// it rather than handing it to yaml.v3.
func sameAsYAMLv3(t *testing.T, obj map[string]any) bool {
	t.Helper()
	want, werr := marshalYAMLv3(obj)
	got, err := Marshal(obj)
	switch {
	case werr != nil && err == nil:
		t.Fatalf("yaml.v3 fails (%v), Marshal writes:\n%s", werr, got)
	case werr == nil && err != nil:
		t.Fatalf("Marshal: %v; yaml.v3 writes:\n%s", err, want)
	case !bytes.Equal(got, want):
		g, w := strings.SplitAfter(string(got), "\n"), strings.SplitAfter(string(want), "\n")
		for i := 0; i < len(g) && i < len(w); i++ {
			if g[i] != w[i] {
				t.Fatalf("line %d:\n got %q\nwant %q\nwhole output:\n%s\nyaml.v3:\n%s", i+1, g[i], w[i], got, want)
			}
		}
		t.Fatalf("%d lines, yaml.v3 writes %d:\n%s\nyaml.v3:\n%s", len(g), len(w), got, want)
	}
	_, err = marshalFast(obj)
	if err != nil && !errors.Is(err, yamlenc.ErrShape) {
		t.Fatal(err)
	}
	return err == nil
}

// TestMarshalLiteralBlocks checks how multi-line strings are written, in
// a mapping, a list and a list in a list: yaml.v3's literal blocks (each
// chomping, blank lines, tabs, indicators and Unicode in the text) by
// yamlenc, double quotes where a block cannot hold the text, and the
// blocks yamlenc leaves to yaml.v3.
func TestMarshalLiteralBlocks(t *testing.T) {
	for _, c := range []struct {
		s     string
		block string // how data.k is written, "" when yaml.v3 writes the object
	}{
		{"a: 1\nb: 2\n", "|\n    a: 1\n    b: 2\n"},
		{"a\nb", "|-\n    a\n    b\n"},
		{"a\n\n", "|+\n    a\n\n"},
		{"a\n\n\n", "|+\n    a\n\n\n"},
		{"a\n\n\nb\n", "|\n    a\n\n\n    b\n"},
		{"a\tb\n\tc\t\n", "|\n    a\tb\n    \tc\t\n"},
		{"ünï\ncödé 日本\n", "|\n    ünï\n    cödé 日本\n"},
		{"# c\n- x\n---\n...\nk: 'v'\n  deeper\n", "|\n    # c\n    - x\n    ---\n    ...\n    k: 'v'\n      deeper\n"},
		{"true\n", "|\n    true\n"},
		{"a\n\t\nb", "|-\n    a\n    \t\n    b\n"},
		{"a\n\t", "|-\n    a\n    \t\n"},
		{"a\u00a0\nb\u00a0", "|-\n    a\u00a0\n    b\u00a0\n"},
		{"a \nb", `"a \nb"` + "\n"},
		{"a\r\nb", `"a\r\nb"` + "\n"},
		{"a\nb ", `"a\nb "` + "\n"},
		{"a\n\x01b", `"a\n\x01b"` + "\n"},
		{"😀\nx", `"\U0001F600\nx"` + "\n"},
		{"a\n\u0085b", `"a\n\Nb"` + "\n"},
		{" lead\nx", ""},
		{"\tlead\nx", ""},
		{"\nlead", ""},
		{"\n", ""},
		{"\n\n", ""},
		{"a\u2028b\nc", ""},
	} {
		t.Run(fmt.Sprintf("%q", c.s), func(t *testing.T) {
			obj := map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "x", "annotations": map[string]any{"note": c.s}},
				"data":     map[string]any{"k": c.s, "list": []any{c.s, []any{c.s, map[string]any{"m": c.s}}}},
			}
			fast := sameAsYAMLv3(t, obj)
			if fast != (c.block != "") {
				t.Fatalf("yamlenc wrote it: %v, want %v", fast, c.block != "")
			}
			if b, _ := Marshal(obj); fast && !strings.Contains(string(b), "\n  k: "+c.block) {
				t.Fatalf("data.k is not written as\n  k: %s\nin\n%s", c.block, b)
			}
		})
	}
}

// TestMarshalOrder checks the key order: apiVersion, kind, metadata
// (name, namespace, labels, annotations), then yaml.v3's order (which
// counts runs of digits as numbers) at every level.
func TestMarshalOrder(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{"item10": 1, "item2": 2, "a_b": 3, "aZ": 4, "a-b": 5, "B": 6},
		"data": map[string]any{}, "kind": "ConfigMap", "apiVersion": "v1",
		"metadata": map[string]any{"uid": "u", "annotations": map[string]any{"z": "1"}, "labels": map[string]any{"x10": "a", "x9": "b"}, "namespace": "ns", "name": "n"},
	}
	if !sameAsYAMLv3(t, obj) {
		t.Fatal("yamlenc did not write the object")
	}
	b, _ := Marshal(obj)
	want := `apiVersion: v1
kind: ConfigMap
metadata:
  name: "n"
  namespace: ns
  labels:
    x9: b
    x10: a
  annotations:
    z: "1"
  uid: u
data: {}
spec:
  B: 6
  a-b: 5
  a_b: 3
  aZ: 4
  item2: 2
  item10: 1
`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
}

// TestMarshalKeys checks keys yaml.v3 writes quoted, and the ones it
// writes as complex keys ("? k"), over 128 bytes or on several lines,
// which yamlenc leaves to yaml.v3.
func TestMarshalKeys(t *testing.T) {
	for _, c := range []struct {
		key  string
		fast bool
	}{
		{strings.Repeat("k", 128), true}, {strings.Repeat("k", 129), false}, {"a: b", true}, {"", true}, {"yes", true},
		{"ünï", true}, {"\xff", false}, {"two\nlines", false}, {"a\rb", false}, {" lead", true},
	} {
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{c.key: "v", "z": "w"}}
		if fast := sameAsYAMLv3(t, obj); fast != c.fast {
			t.Fatalf("key %q: yamlenc wrote it: %v, want %v", c.key, fast, c.fast)
		}
	}
}

// longDigits is a run of digits an int64 may not hold.
var longDigits = regexp.MustCompile(`\pN{13}`)

// fuzzObject builds an object from fuzz input: the strings a and b, and
// strings made of them, as keys and values everywhere (labels,
// annotations, data, nested maps and lists); shape picks each value's
// kind and each key. It is nil for input yaml.v3 writes at random.
func fuzzObject(a, b string, shape []byte) map[string]any {
	strs := []string{a, b, a + "\n" + b, a + "\n", b + "\n\n", "\n" + a, " " + a, a + " ", a + ": " + b, a + "\n" + b + "\n",
		strings.Repeat(a+"\n", 3), "1" + a, "0" + b, a + b, "", "x", "- " + a, "# " + b, "a\tb\n" + a}
	// Keys are valid UTF-8: yaml.v3 orders keys by their runes, where
	// every invalid byte reads as U+FFFD, so two such keys tie and their
	// order (yaml.v3's whole output) follows Go's random map order.
	ka, kb := strings.ToValidUTF8(a, "?"), strings.ToValidUTF8(b, "?")
	keys := []string{ka, kb, "k-" + kb, "1" + ka, "0" + kb, ka + kb, "", "x", ka + " ", "y" + kb}
	// yaml.v3 reads a run of digits in a key as an int64; a run long
	// enough to overflow makes its order intransitive, and so again its
	// output random.
	for _, k := range keys {
		if longDigits.MatchString(k) {
			return nil
		}
	}
	next := func() int {
		if len(shape) == 0 {
			return 0
		}
		c := int(shape[0])
		shape = shape[1:]
		return c
	}
	var value func(depth int) any
	value = func(depth int) any {
		c := next()
		switch k := c % 12; {
		case k < 5 || depth > 4:
			return strs[c%len(strs)]
		case k == 5:
			return int64(c*37 - 3000)
		case k == 6:
			return []float64{0, 0.5, -1.25, 1e21, 3, math.Inf(1), math.NaN(), 123456789.125}[c%8]
		case k == 7:
			return c%2 == 0
		case k == 8:
			return nil
		case k == 9:
			l := []any{}
			for n := next() % 4; n > 0; n-- {
				l = append(l, value(depth+1))
			}
			return l
		default:
			m := map[string]any{}
			for n := next() % 4; n > 0; n-- {
				m[keys[next()%len(keys)]] = value(depth + 1)
			}
			return m
		}
	}
	labels := map[string]any{"app": a, ka: "v", "k-" + kb: b}
	data := map[string]any{"config.yaml": a + "\n" + b + "\n", "a": a, "b": b}
	for i := 0; i < 4; i++ {
		data[keys[next()%len(keys)]] = value(0)
	}
	obj := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "data": data,
		"metadata": map[string]any{"name": b, "namespace": a, "labels": labels, "annotations": map[string]any{"note": a + "\n" + b, kb: a}},
	}
	if len(shape) > 0 {
		obj[ka] = value(0)
	}
	return obj
}

// FuzzMarshal checks Marshal against yaml.v3 (marshalYAMLv3) on objects
// built from the input: byte for byte, or both failing.
func FuzzMarshal(f *testing.F) {
	for _, s := range [][2]string{
		{"a: 1\nb: 2", "plain"}, {"line\n", "two\nlines\n\n"}, {" lead", "trail "}, {"ünï", "日本\n語"}, {"1.5", "0x1F"},
		{"true", "~"}, {"a\tb", "c\r\nd"}, {"key10", "key9"}, {"#x", "-"}, {"a\u2028b", "\u00a0"}, {"\xff", "😀"},
		{strings.Repeat("long ", 40), "x"},
	} {
		f.Add(s[0], s[1], []byte{0, 9, 3, 1, 2, 10, 2, 4, 5, 6, 7, 8, 11, 0, 9})
	}
	f.Fuzz(func(t *testing.T, a, b string, shape []byte) {
		obj := fuzzObject(a, b, shape)
		if obj == nil {
			t.Skip("keys yaml.v3 orders at random")
		}
		sameAsYAMLv3(t, obj)
	})
}

// TestMarshalFuzzSeeds runs the fuzz builder over many shapes so that a
// plain test run covers nested maps and lists, and checks that yamlenc
// writes most of them.
func TestMarshalFuzzSeeds(t *testing.T) {
	fast, n := 0, 0
	for _, s := range [][2]string{{"a: 1", "plain"}, {"line", "two"}, {"ünï", "key9"}, {"1.5", "x y"}} {
		for i := 0; i < 200; i++ {
			shape := []byte{byte(i), byte(i * 7), byte(i * 13), byte(i / 3), byte(i * 5), 10, byte(i), 9, byte(i * 3), byte(i * 11), 1}
			if sameAsYAMLv3(t, fuzzObject(s[0], s[1], shape)) {
				fast++
			}
			n++
		}
	}
	t.Logf("yamlenc wrote %d of %d objects", fast, n)
	if fast < n/2 {
		t.Fatalf("yamlenc wrote only %d of %d objects", fast, n)
	}
}

// configMaps are n ConfigMap-like objects, each with labels, annotations
// and a 20-line data value of its own.
func configMaps(n int) []map[string]any {
	objs := make([]map[string]any, n)
	for i := range objs {
		var cfg strings.Builder
		for l := 0; l < 20; l++ {
			fmt.Fprintf(&cfg, "setting_%d: value-%d-%d # comment\n", l, i, l)
		}
		objs[i] = map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{
				"name": fmt.Sprintf("cm-%d", i), "namespace": fmt.Sprintf("team-%d", i%50),
				"labels":      map[string]any{"app.kubernetes.io/name": "svc", "app.kubernetes.io/part-of": fmt.Sprintf("app-%d", i%500), "tier": "backend"},
				"annotations": map[string]any{"owner": "platform@example.com", "description": "settings for the service, rendered by hand"},
			},
			"data": map[string]any{"config.yaml": cfg.String(), "mode": "fast", "replicas": "3"},
		}
	}
	return objs
}

// BenchmarkMarshal compares yaml.v3 (marshalYAMLv3) and Marshal on 2,000
// ConfigMap-like objects per iteration.
func BenchmarkMarshal(b *testing.B) {
	objs := configMaps(2000)
	for _, c := range []struct {
		name string
		fn   func(map[string]any) ([]byte, error)
	}{{"yaml.v3", marshalYAMLv3}, {"yamlenc", Marshal}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, o := range objs {
					if _, err := c.fn(o); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
