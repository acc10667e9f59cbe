package plan

import (
	"strconv"

	"github.com/adopt-dev/adopt/adopt/jsonenc"
)

// appendObjectJSON appends o as json.Marshal writes it, byte for byte,
// without reflection: a plan's objects are encoded twice per run (the id's
// digest and -o json), and encoding/json's reflection was most of both.
// An object holding a drift or a preview (their shapes are not written
// out here), or a float json.Marshal refuses, reports false and is left
// to json.Marshal. TestObjectJSONIsEncodingJSON fills every field, so a
// field added to Object and not here fails it.
func appendObjectJSON(b []byte, o *Object) ([]byte, bool) {
	if o.Drift != nil || o.Preview != nil || !jsonenc.Finite(o.Budget.PercentOfCap) {
		return b, false
	}
	b = appendKey(b, `{"group":`, o.Group)
	b = appendKey(b, `,"version":`, o.Version)
	b = appendKey(b, `,"kind":`, o.Kind)
	b = appendKey(b, `,"resource":`, o.Resource)
	if o.Namespace != "" {
		b = appendKey(b, `,"namespace":`, o.Namespace)
	}
	b = appendKey(b, `,"name":`, o.Name)
	b = appendKey(b, `,"provenance":`, o.Provenance)
	b = appendKey(b, `,"evidence":`, o.Evidence)
	b = appendKey(b, `,"confidence":`, string(o.Confidence))
	if len(o.Managers) > 0 {
		b = append(b, `,"managers":[`...)
		for i, m := range o.Managers {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, m)
		}
		b = append(b, ']')
	}
	b = strconv.AppendInt(append(b, `,"dataBytes":`...), int64(o.DataBytes), 10)
	bu := &o.Budget
	b = strconv.AppendInt(append(b, `,"budget":{"annotationBytes":`...), int64(bu.AnnotationBytes), 10)
	b = strconv.AppendInt(append(b, `,"lastAppliedBytes":`...), int64(bu.LastAppliedBytes), 10)
	b = jsonenc.AppendFloat(append(b, `,"percentOfCap":`...), bu.PercentOfCap)
	b = strconv.AppendInt(append(b, `,"headroom":`...), int64(bu.Headroom), 10)
	b = strconv.AppendBool(append(b, `,"hasLastApplied":`...), bu.HasLastApplied)
	b = appendKey(append(b, '}'), `,"level":`, string(o.Level))
	b = strconv.AppendInt(append(b, `,"nextApply":{"bytes":`...), int64(o.NextApply.Bytes), 10)
	b = strconv.AppendBool(append(b, `,"fails":`...), o.NextApply.Fails)
	b = strconv.AppendBool(append(b, `},"csaMigration":{"runs":`...), o.CSAMigration.Runs)
	if o.CSAMigration.Bytes != 0 {
		b = strconv.AppendInt(append(b, `,"bytes":`...), int64(o.CSAMigration.Bytes), 10)
	}
	b = strconv.AppendBool(append(b, `,"fails":`...), o.CSAMigration.Fails)
	b = append(b, '}')
	if o.HelmRelease != "" {
		b = appendKey(b, `,"helmRelease":`, o.HelmRelease)
	}
	if o.StaleTracking != "" {
		b = appendKey(b, `,"staleTracking":`, o.StaleTracking)
	}
	b = appendKey(b, `,"app":`, o.App)
	if o.Git != nil {
		b = appendGitMatch(append(b, `,"git":`...), o.Git)
	}
	if len(o.Ambiguous) > 0 {
		b = append(b, `,"ambiguous":[`...)
		for i := range o.Ambiguous {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendGitMatch(b, &o.Ambiguous[i])
		}
		b = append(b, ']')
	}
	if o.Risk != "" {
		b = appendKey(b, `,"risk":`, string(o.Risk))
	}
	if len(o.Findings) > 0 {
		b = append(b, `,"findings":[`...)
		for i, f := range o.Findings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(b, `{"code":`, f.Code)
			b = appendKey(b, `,"severity":`, string(f.Severity))
			b = appendKey(b, `,"message":`, f.Message)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

func appendGitMatch(b []byte, g *GitMatch) []byte {
	b = appendKey(b, `{"path":`, g.Path)
	b = strconv.AppendInt(append(b, `,"line":`...), int64(g.Line), 10)
	if g.Kustomization != "" {
		b = appendKey(b, `,"kustomization":`, g.Kustomization)
	}
	return append(b, '}')
}

// appendKey appends key, the JSON text before a value, and the string v.
func appendKey(b []byte, key, v string) []byte {
	return jsonenc.AppendString(append(b, key...), v)
}
