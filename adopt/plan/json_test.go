package plan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// TestWriteJSONIsEncodingJSON checks that the streaming encoder writes the
// same bytes as json.Encoder, compact and indented, for empty, nil and
// filled lists, and lists of several blocks encoded at once.
func TestWriteJSONIsEncodingJSON(t *testing.T) {
	full := &Plan{APIVersion: APIVersion, Kind: Kind, ID: "plan-x", Cluster: Cluster{Server: "https://127.0.0.1:6443"},
		Applications: []Application{{Name: "a", Objects: []string{"/ConfigMap ns/a"}}},
		Objects: []Object{{Version: "v1", Kind: "ConfigMap", Name: "a<b>&", Namespace: "ns", Budget: budget.Budget{}, Managers: []string{"kubectl (Apply)"}},
			{Version: "v1", Kind: "Secret", Name: "s", Namespace: "ns"}},
		Skipped:    []Skipped{{Kind: "Pod", Name: "p", Reason: "owned"}},
		NotScanned: []NotScanned{{Type: "widgets.example.com", Reason: "forbidden"}},
		Findings:   []Finding{{Code: "x", Message: "m"}}}
	many := &Plan{APIVersion: APIVersion, Kind: Kind, Objects: make([]Object, 3*orderBlock+5)}
	for i := range many.Objects {
		many.Objects[i] = Object{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmtName(i)}
	}
	for name, p := range map[string]*Plan{
		"full":        full,
		"many blocks": many,
		"nil objects": {APIVersion: APIVersion, Kind: Kind},
		"no objects":  {APIVersion: APIVersion, Kind: Kind, Objects: []Object{}, Skipped: []Skipped{{Kind: "Pod", Name: "p", Reason: "r"}}},
		"only notScanned": {APIVersion: APIVersion, Kind: Kind, Objects: []Object{{Name: "o", Kind: "K", Version: "v1"}},
			NotScanned: []NotScanned{{Type: "t", Reason: "r"}}},
	} {
		for _, indent := range []bool{false, true} {
			var want, got bytes.Buffer
			e := json.NewEncoder(&want)
			if indent {
				e.SetIndent("", "  ")
			}
			if err := e.Encode(p); err != nil {
				t.Fatal(err)
			}
			if err := p.WriteJSON(&got, indent); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("%s (indent %v):\n got %s\nwant %s", name, indent, got.String(), want.String())
			}
		}
	}
}

func fmtName(i int) string { return "cm-" + strconv.Itoa(i) }
