package plan

import (
	"strconv"

	"github.com/adopt-dev/adopt/adopt/jsonenc"
)

// appendObjectJSON appends o as json.Marshal writes it, byte for byte, or
// with indent as json.Indent lays that out for an item of the plan's
// objects list (prefix "    ", indent "  "), without reflection: a plan's
// objects are encoded twice per run (the id's digest and -o json), and
// encoding/json's reflection, then json.Indent's scanner, were most of
// both. An object holding a drift, a preview or a secret form (their shapes are not
// written out here), or a float json.Marshal refuses, reports false and
// is left to json.Marshal. TestObjectJSONIsEncodingJSON fills every
// field, so a field added to Object and not here fails it.
func appendObjectJSON(b []byte, o *Object, indent bool) ([]byte, bool) {
	if o.Drift != nil || o.Preview != nil || o.SecretForm != nil || !jsonenc.Finite(o.Budget.PercentOfCap) {
		return b, false
	}
	j := jsonItem{b: b, indent: indent}
	j.open('{')
	j.str("group", o.Group)
	j.str("version", o.Version)
	j.str("kind", o.Kind)
	j.str("resource", o.Resource)
	if o.Namespace != "" {
		j.str("namespace", o.Namespace)
	}
	j.str("name", o.Name)
	j.str("provenance", o.Provenance)
	j.str("evidence", o.Evidence)
	j.str("confidence", string(o.Confidence))
	if len(o.Managers) > 0 {
		j.array("managers", len(o.Managers), func(i int) { j.b = jsonenc.AppendString(j.b, o.Managers[i]) })
	}
	j.int("dataBytes", o.DataBytes)
	j.key("budget")
	j.open('{')
	j.int("annotationBytes", o.Budget.AnnotationBytes)
	j.int("lastAppliedBytes", o.Budget.LastAppliedBytes)
	j.key("percentOfCap")
	j.b = jsonenc.AppendFloat(j.b, o.Budget.PercentOfCap)
	j.int("headroom", o.Budget.Headroom)
	j.bool("hasLastApplied", o.Budget.HasLastApplied)
	j.close('}')
	j.str("level", string(o.Level))
	j.key("nextApply")
	j.open('{')
	j.int("bytes", o.NextApply.Bytes)
	j.bool("fails", o.NextApply.Fails)
	j.close('}')
	j.key("csaMigration")
	j.open('{')
	j.bool("runs", o.CSAMigration.Runs)
	if o.CSAMigration.Bytes != 0 {
		j.int("bytes", o.CSAMigration.Bytes)
	}
	j.bool("fails", o.CSAMigration.Fails)
	j.close('}')
	if o.HelmRelease != "" {
		j.str("helmRelease", o.HelmRelease)
	}
	if o.StaleTracking != "" {
		j.str("staleTracking", o.StaleTracking)
	}
	j.str("app", o.App)
	if o.Git != nil {
		j.key("git")
		j.gitMatch(o.Git)
	}
	if len(o.Ambiguous) > 0 {
		j.array("ambiguous", len(o.Ambiguous), func(i int) { j.gitMatch(&o.Ambiguous[i]) })
	}
	if o.Risk != "" {
		j.str("risk", string(o.Risk))
	}
	if len(o.Findings) > 0 {
		j.array("findings", len(o.Findings), func(i int) {
			f := &o.Findings[i]
			j.open('{')
			j.str("code", f.Code)
			j.str("severity", string(f.Severity))
			j.str("message", f.Message)
			j.close('}')
		})
	}
	j.close('}')
	return j.b, true
}

// jsonItem appends one hand-written item, compact or indented; first is
// set while the innermost object or array has no element yet.
type jsonItem struct {
	b      []byte
	indent bool
	depth  int
	first  bool
}

func (j *jsonItem) open(c byte) {
	j.b = append(j.b, c)
	j.depth++
	j.first = true
}

func (j *jsonItem) close(c byte) {
	j.depth--
	if j.indent && !j.first {
		j.newline()
	}
	j.b = append(j.b, c)
	j.first = false
}

func (j *jsonItem) newline() {
	j.b = append(j.b, "\n    "...)
	for range j.depth {
		j.b = append(j.b, "  "...)
	}
}

// elem starts an element: the comma after the one before, and its line.
func (j *jsonItem) elem() {
	if !j.first {
		j.b = append(j.b, ',')
	}
	j.first = false
	if j.indent {
		j.newline()
	}
}

// array writes k and an array of n elements, element i written by elem.
func (j *jsonItem) array(k string, n int, elem func(i int)) {
	j.key(k)
	j.open('[')
	for i := range n {
		j.elem()
		elem(i)
	}
	j.close(']')
}

func (j *jsonItem) key(k string) {
	j.elem()
	j.b = append(append(append(j.b, '"'), k...), '"', ':')
	if j.indent {
		j.b = append(j.b, ' ')
	}
}

func (j *jsonItem) str(k, v string) {
	j.key(k)
	j.b = jsonenc.AppendString(j.b, v)
}

func (j *jsonItem) int(k string, v int) {
	j.key(k)
	j.b = strconv.AppendInt(j.b, int64(v), 10)
}

func (j *jsonItem) bool(k string, v bool) {
	j.key(k)
	j.b = strconv.AppendBool(j.b, v)
}

func (j *jsonItem) gitMatch(g *GitMatch) {
	j.open('{')
	j.str("path", g.Path)
	j.int("line", g.Line)
	if g.Kustomization != "" {
		j.str("kustomization", g.Kustomization)
	}
	if g.Reason != "" {
		j.str("reason", g.Reason)
	}
	if g.Revision != "" {
		j.str("revision", g.Revision)
	}
	j.close('}')
}
