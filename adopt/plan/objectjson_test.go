package plan

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/preview"
)

// jsonStrings are strings encoding/json escapes in each of its ways, or not.
var jsonStrings = []string{"", "", "plain", `"`, `\`, "<a href=\"x\">&amp;</a>", "tab\tnl\nbs\bff\fcr\r", "\x00\x01\x1f\x7f",
	"ü€😀", "\u2028\u2029", "bad \xff\xfe utf-8 \xe2\x82", "\xed\xa0\x80", "kubectl-client-side-apply (Update)"}

// jsonFloats are floats on both sides of encoding/json's exponent cutoffs.
var jsonFloats = []float64{0, math.Copysign(0, -1), 99.9, 100, 0.1, -12.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, 5e-324, 123456789.125}

// fill sets every exported field of v, recursively, from r: strings from
// jsonStrings (empty ones among them, for omitempty), ints, floats from
// jsonFloats, bools, slices of 0 to 3 items (nil among them) and pointers
// nil or set. Object's Drift and Preview are left nil.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(jsonStrings[r.IntN(len(jsonStrings))])
	case reflect.Int:
		v.SetInt([]int64{0, 1, -1, 262144, math.MaxInt64, math.MinInt64, r.Int64N(1 << 20)}[r.IntN(7)])
	case reflect.Float64:
		v.SetFloat(jsonFloats[r.IntN(len(jsonFloats))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Slice:
		if n := r.IntN(5) - 1; n >= 0 {
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(r, v.Index(i))
			}
		}
	case reflect.Pointer:
		if r.IntN(2) == 1 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(r, v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !(v.Type() == reflect.TypeFor[Object]() && (f.Name == "Drift" || f.Name == "Preview")) {
				fill(r, v.Field(i))
			}
		}
	default:
		panic("fill: no values for " + v.Type().String())
	}
}

// TestObjectJSONIsEncodingJSON checks appendObjectJSON against json.Marshal
// on objects with every field filled (so a field added to Object and not
// to appendObjectJSON fails it), and that objects with a drift or a
// preview, or a float JSON cannot hold, are left to json.Marshal.
func TestObjectJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		var o Object
		fill(r, reflect.ValueOf(&o).Elem())
		want, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendObjectJSON([]byte("x"), &o)
		if !ok || string(got) != "x"+string(want) {
			t.Fatalf("object %d (ok %v):\n got %s\nwant x%s", i, ok, got, want)
		}
	}
	for name, o := range map[string]Object{
		"drift":   {Drift: &gitindex.Drift{}},
		"preview": {Preview: &preview.Result{}},
		"NaN":     {Budget: budget.Budget{PercentOfCap: math.NaN()}},
		"+Inf":    {Budget: budget.Budget{PercentOfCap: math.Inf(1)}},
	} {
		if b, ok := appendObjectJSON(nil, &o); ok || len(b) != 0 {
			t.Errorf("%s: encoded (%q), not left to json.Marshal", name, b)
		}
	}
}
