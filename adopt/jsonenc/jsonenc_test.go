package jsonenc

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestStringsAreEncodingJSON checks AppendString and StringLen against
// json.Marshal on every single byte, on runes at the edges encoding/json
// treats apart, and on random byte strings (mostly not UTF-8).
func TestStringsAreEncodingJSON(t *testing.T) {
	var cases []string
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	cases = append(cases, "", "\u2028", "\u2029", "\u2027\u202a", "ü€😀", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "<a href=\"x\">&amp;</a>")
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
		if n := StringLen(s); n != len(want) {
			t.Fatalf("StringLen(%q) = %d, want %d", s, n, len(want))
		}
	}
}

// TestFloatsAreEncodingJSON checks AppendFloat against json.Marshal around
// encoding/json's exponent cutoffs and on random bit patterns.
func TestFloatsAreEncodingJSON(t *testing.T) {
	cases := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 99.9, 100, 1e-6, 9.99e-7, 1e-7, 1e-10, 1e20, 1e21, 1.5e300, 5e-324, math.MaxFloat64, 123456789.125}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		if f := math.Float64frombits(r.Uint64()); Finite(f) {
			cases = append(cases, f)
		}
	}
	for _, f := range cases {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Fatalf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if Finite(f) {
			t.Errorf("Finite(%v)", f)
		}
	}
}
