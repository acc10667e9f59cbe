package redact

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Hit is one secret-looking value in an object: where and by which rule,
// never the value.
type Hit struct {
	Path string
	Rule string
}

// found is what a walk does with a secret at path: the value to put in
// its place and true, or false to leave it.
type found func(path, rule, text string) (any, bool)

// walk is the one walk over decoded YAML or JSON (maps, lists, scalars):
// it judges every scalar with Rule, by the name it stands under (its map
// key; a list's items stand under the list's), and calls fn with each
// secret. An env-style entry ({name: X, value: Y} or {key: X, value: Y})
// judges Y under the name X. known, when set, holds values that are
// secrets wherever they stand (RuleKnown). It returns v, or, when fn
// replaced a value, a copy of the maps and lists on the way to it; v is
// never modified.
func (j *Judge) walk(v any, path, name string, known *Set, fn found) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		entry := envName(x)
		var out map[string]any
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n := k
			if entry != "" && k == "value" {
				n = entry // an env-style entry: its name says what its value is
			}
			if nv, ok := j.walk(x[k], join(path, k), n, known, fn); ok {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			if nv, ok := j.walk(e, fmt.Sprintf("%s[%d]", path, i), name, known, fn); ok {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = nv
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	s, ok := Scalar(v)
	if !ok {
		return v, false
	}
	r := j.Rule(name, s)
	if r == "" && known.Holds(s) {
		r = RuleKnown
	}
	if r == "" {
		return v, false
	}
	return fn(path, r, s)
}

// envName is the name of an env-style entry ({name: X, value: Y} or
// {key: X, value: Y}), "" for any other map.
func envName(m map[string]any) string {
	if _, ok := m["value"]; !ok {
		return ""
	}
	for _, k := range []string{"name", "key"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Values returns values with every secret value (Rule, or a value known
// holds: one the release puts into a Secret) replaced by its Placeholder,
// the key paths it replaced (sorted, as a.b[0].c), and the values it
// replaced with known's added (for a preview to hide). values is not
// modified; what holds no secret is shared with it.
func Values(values map[string]any, known *Set, j *Judge) (map[string]any, []string, *Set) {
	var paths []string
	hide := &Set{}
	if known != nil {
		hide.values = append(hide.values, known.values...)
	}
	out, _ := j.walk(values, "", "", known, func(path, _, text string) (any, bool) {
		paths = append(paths, path)
		hide.Add(text)
		return Placeholder(path), true
	})
	m, _ := out.(map[string]any)
	sort.Strings(paths)
	return m, paths, hide
}

// Scan returns every secret value (Rule) of a decoded object, as its key
// path and rule, in walk order (keys sorted). Of metadata only labels and
// annotations are judged.
func (j *Judge) Scan(obj map[string]any) []Hit {
	var hits []Hit
	j.walk(judged(obj), "", "", nil, func(path, rule, _ string) (any, bool) {
		hits = append(hits, Hit{Path: path, Rule: rule})
		return nil, false
	})
	return hits
}

// Hide adds to s every value of obj that Scan finds, for a preview to
// hide wherever it appears.
func (j *Judge) Hide(s *Set, obj map[string]any) {
	j.walk(judged(obj), "", "", nil, func(_, _, text string) (any, bool) {
		s.Add(text)
		return nil, false
	})
}

// judged is obj as Scan reads it: of its metadata, labels and annotations.
func judged(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	kept := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := md[k]; ok {
			kept[k] = v
		}
	}
	out := maps.Clone(obj)
	out["metadata"] = kept
	return out
}
