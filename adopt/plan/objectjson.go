package plan

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendObjectJSON appends o as json.Marshal writes it, byte for byte,
// without reflection: a plan's objects are encoded twice per run (the id's
// digest and -o json), and encoding/json's reflection was most of both.
// An object holding a drift or a preview (their shapes are not written
// out here), or a float json.Marshal refuses, reports false and is left
// to json.Marshal. TestObjectJSONIsEncodingJSON fills every field, so a
// field added to Object and not here fails it.
func appendObjectJSON(b []byte, o *Object) ([]byte, bool) {
	if o.Drift != nil || o.Preview != nil || !finite(o.Budget.PercentOfCap) {
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
			b = appendJSONString(b, m)
		}
		b = append(b, ']')
	}
	b = strconv.AppendInt(append(b, `,"dataBytes":`...), int64(o.DataBytes), 10)
	bu := &o.Budget
	b = strconv.AppendInt(append(b, `,"budget":{"annotationBytes":`...), int64(bu.AnnotationBytes), 10)
	b = strconv.AppendInt(append(b, `,"lastAppliedBytes":`...), int64(bu.LastAppliedBytes), 10)
	b = appendJSONFloat(append(b, `,"percentOfCap":`...), bu.PercentOfCap)
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
	return appendJSONString(append(b, key...), v)
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in exponent form below 1e-6 and
// from 1e21, with the exponent unpadded.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// appendJSONString appends s quoted as encoding/json writes a string (its
// HTML-safe escaping): ", \ and control bytes escaped, <, > and & as
// \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and each byte of
// invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
