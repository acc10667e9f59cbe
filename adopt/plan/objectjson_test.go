package plan

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/preview"
)

// TestObjectJSONIsEncodingJSON checks appendObjectJSON against json.Marshal
// on objects with every field filled by filler (so a field added to Object
// and not to appendObjectJSON fails it; jsonenc's tests cover the strings
// and numbers), and that objects with a drift or a preview, or a float
// JSON cannot hold, are left to json.Marshal.
func TestObjectJSONIsEncodingJSON(t *testing.T) {
	for i := range 3000 {
		var o Object
		(&filler{n: i}).fill(reflect.ValueOf(&o).Elem(), 1)
		o.Drift, o.Preview, o.SecretForm = nil, nil, nil
		want, err := json.Marshal(&o)
		if err != nil {
			t.Fatal(err)
		}
		var wantIndent bytes.Buffer
		if err := json.Indent(&wantIndent, want, "    ", "  "); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			indent bool
			want   string
		}{{false, string(want)}, {true, wantIndent.String()}} {
			got, ok := appendObjectJSON([]byte("x"), &o, w.indent)
			if !ok || string(got) != "x"+w.want {
				t.Fatalf("object %d (indent %v, ok %v):\n got %s\nwant x%s", i, w.indent, ok, got, w.want)
			}
		}
	}
	for name, o := range map[string]Object{
		"drift":      {Drift: &gitindex.Drift{}},
		"preview":    {Preview: &preview.Result{}},
		"secretForm": {SecretForm: &SecretForm{Form: SecretFormSealed}},
		"NaN":        {Budget: budget.Budget{PercentOfCap: math.NaN()}},
		"+Inf":       {Budget: budget.Budget{PercentOfCap: math.Inf(1)}},
	} {
		if b, ok := appendObjectJSON(nil, &o, false); ok || len(b) != 0 {
			t.Errorf("%s: encoded (%q), not left to json.Marshal", name, b)
		}
	}
}
