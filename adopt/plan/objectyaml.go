package plan

import (
	"math"
	"strconv"

	"github.com/adopt-dev/adopt/adopt/yamlenc"
)

// appendObjectYAML appends o as one item of the plan file's objects list
// (dashes at column 2), as yaml.v3 writes it, without reflection, when
// every string is one yamlenc.AppendASCII renders and o holds no drift or
// preview and no infinite or NaN float: the common object, whose
// reflective encoding was the plan file's largest cost. Otherwise it
// reports false and writeList encodes o through yamlenc's general path.
// TestEncodeIsYAMLv3 and TestObjectYAMLIsYAMLv3 check both against yaml.v3.
func appendObjectYAML(b []byte, o *Object) ([]byte, bool) {
	if o.Drift != nil || o.Preview != nil || o.SecretForm != nil || math.IsInf(o.Budget.PercentOfCap, 0) || math.IsNaN(o.Budget.PercentOfCap) {
		return b, false
	}
	y := yamlItem{b: b, ok: true}
	const (
		item  = "  - "
		field = "    "
		sub   = "      "
		subIt = "      - "
		subF  = "        "
	)
	y.str(item, "group", o.Group)
	y.str(field, "version", o.Version)
	y.str(field, "kind", o.Kind)
	y.str(field, "resource", o.Resource)
	if o.Namespace != "" {
		y.str(field, "namespace", o.Namespace)
	}
	y.str(field, "name", o.Name)
	y.str(field, "provenance", o.Provenance)
	y.str(field, "evidence", o.Evidence)
	y.str(field, "confidence", string(o.Confidence))
	if len(o.Managers) > 0 {
		y.key(field, "managers")
		for _, m := range o.Managers {
			y.b = append(y.b, subIt...)
			y.scalar(m)
		}
	}
	y.int(field, "dataBytes", o.DataBytes)
	y.key(field, "budget")
	y.int(sub, "annotationBytes", o.Budget.AnnotationBytes)
	y.int(sub, "lastAppliedBytes", o.Budget.LastAppliedBytes)
	y.b = strconv.AppendFloat(append(y.b, sub+"percentOfCap: "...), o.Budget.PercentOfCap, 'g', -1, 64)
	y.b = append(y.b, '\n')
	y.int(sub, "headroom", o.Budget.Headroom)
	y.bool(sub, "hasLastApplied", o.Budget.HasLastApplied)
	y.str(field, "level", string(o.Level))
	y.key(field, "nextApply")
	y.int(sub, "bytes", o.NextApply.Bytes)
	y.bool(sub, "fails", o.NextApply.Fails)
	y.key(field, "csaMigration")
	y.bool(sub, "runs", o.CSAMigration.Runs)
	if o.CSAMigration.Bytes != 0 {
		y.int(sub, "bytes", o.CSAMigration.Bytes)
	}
	y.bool(sub, "fails", o.CSAMigration.Fails)
	if o.HelmRelease != "" {
		y.str(field, "helmRelease", o.HelmRelease)
	}
	if o.StaleTracking != "" {
		y.str(field, "staleTracking", o.StaleTracking)
	}
	y.str(field, "app", o.App)
	if o.Git != nil {
		y.key(field, "git")
		y.gitMatch(sub, sub, o.Git)
	}
	if len(o.Ambiguous) > 0 {
		y.key(field, "ambiguous")
		for i := range o.Ambiguous {
			y.gitMatch(subIt, subF, &o.Ambiguous[i])
		}
	}
	if o.Risk != "" {
		y.str(field, "risk", string(o.Risk))
	}
	if len(o.Findings) > 0 {
		y.key(field, "findings")
		for _, f := range o.Findings {
			y.str(subIt, "code", f.Code)
			y.str(subF, "severity", string(f.Severity))
			y.str(subF, "message", f.Message)
		}
	}
	if !y.ok {
		return b, false
	}
	return y.b, true
}

// yamlItem appends the lines of one hand-written item; ok turns false at
// the first string AppendASCII does not render.
type yamlItem struct {
	b  []byte
	ok bool
}

func (y *yamlItem) key(pad, key string) {
	y.b = append(append(append(y.b, pad...), key...), ":\n"...)
}

func (y *yamlItem) scalar(s string) {
	var ok bool
	if y.b, ok = yamlenc.AppendASCII(y.b, s); !ok {
		y.ok = false
	}
	y.b = append(y.b, '\n')
}

func (y *yamlItem) str(pad, key, s string) {
	y.b = append(append(append(y.b, pad...), key...), ": "...)
	y.scalar(s)
}

func (y *yamlItem) int(pad, key string, v int) {
	y.b = append(strconv.AppendInt(append(append(append(y.b, pad...), key...), ": "...), int64(v), 10), '\n')
}

func (y *yamlItem) bool(pad, key string, v bool) {
	y.b = append(strconv.AppendBool(append(append(append(y.b, pad...), key...), ": "...), v), '\n')
}

// gitMatch writes g's fields, the first after first and the others after
// pad.
func (y *yamlItem) gitMatch(first, pad string, g *GitMatch) {
	y.str(first, "path", g.Path)
	y.int(pad, "line", g.Line)
	if g.Kustomization != "" {
		y.str(pad, "kustomization", g.Kustomization)
	}
	if g.Reason != "" {
		y.str(pad, "reason", g.Reason)
	}
	if g.Revision != "" {
		y.str(pad, "revision", g.Revision)
	}
}
