package gitindex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/objdiff"
)

// Drift is how a live object differs from its manifest.
type Drift struct {
	// Fields are the differing field paths (data.hook.py, spec.replicas),
	// sorted. Values are never recorded.
	Fields []string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// BytesBehind is how many bytes of the manifest's values the live object
	// lacks: for each differing value, the length of the differing span
	// between the two (after their common prefix and suffix).
	BytesBehind int `json:"bytesBehind" yaml:"bytesBehind"`
}

// Identical says the live object has every value the manifest sets.
func (d Drift) Identical() bool { return len(d.Fields) == 0 }

// Compare reports the fields the manifest sets that the live object does not
// hold with the same value, by objdiff's one comparison. Fields only live
// holds (server defaults, another writer's) are not drift. A Secret
// manifest's stringData is compared as the data live holds.
func Compare(manifest, live map[string]any) Drift {
	d := Drift{}
	for _, f := range objdiff.Diff(live, manifest) {
		if f.Op == objdiff.Remove {
			continue
		}
		d.Fields = append(d.Fields, f.Path)
		d.BytesBehind += span(repr(f.B), repr(f.A))
	}
	return d
}

// repr is a value's bytes: a string as is, anything else as JSON; a missing
// value is empty.
func repr(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// span is the length of the differing middle of a and b: the longer one's
// length minus their common prefix and suffix.
func span(a, b string) int {
	n := len(a)
	if len(b) > n {
		n = len(b)
	}
	short := len(a)
	if len(b) < short {
		short = len(b)
	}
	p := 0
	for p < short && a[p] == b[p] {
		p++
	}
	s := 0
	for s < short-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return n - p - s
}

// FieldList renders fields for a message, at most n of them.
func FieldList(fields []string, n int) string {
	if len(fields) <= n {
		return strings.Join(fields, ", ")
	}
	return strings.Join(fields[:n], ", ") + fmt.Sprintf(" and %d more", len(fields)-n)
}
