package preview

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/adopt-dev/adopt/adopt/objdiff"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// shortLimit is the longest value shown whole; longer values, and values
// with line breaks, are shortened and counted in bytes.
const shortLimit = 64

// shown says which values a diff may show.
type shown struct {
	// secret: the object is a Secret, none of its values is shown.
	secret bool
	// hide holds the secret values (and placeholders) that are never shown;
	// allEnv hides every env value as well.
	hide   *redact.Set
	allEnv bool
}

// hides reports whether a change at path with these values hides them:
// every value of a Secret, every env value when allEnv, and any value
// hide holds (what the one secret rule found in the live object, the
// manifest and the server's answer; see Previewer.hidden).
func (v shown) hides(path string, vals ...string) bool {
	if v.secret || v.allEnv && isEnvPath(path) {
		return true
	}
	for _, s := range vals {
		if v.hide.Hides(s) {
			return true
		}
	}
	return false
}

// diff lists the fields that differ between before and after, by
// objdiff's one comparison (its paths, its ignore rules, its order). A
// Secret's values, and any value v hides, are not shown: the change keeps
// their byte counts.
func diff(before, after map[string]any, v shown) []Change {
	var out []Change
	for _, f := range objdiff.Diff(before, after) {
		out = append(out, change(f.Path, f.A, f.B, f.Op != objdiff.Add, f.Op != objdiff.Remove, v))
	}
	return out
}

// change describes one differing field. A hidden value shows as
// redact.Shown (a Secret's as nothing), with its byte count.
func change(path string, a, b any, hasA, hasB bool, v shown) Change {
	c := Change{Path: path, Op: "replace"}
	var ra, rb string
	if hasA {
		ra = render(a)
		c.BeforeBytes = size(path, ra, v.secret)
	}
	if hasB {
		rb = render(b)
		c.AfterBytes = size(path, rb, v.secret)
	}
	switch {
	case !hasA:
		c.Op = "add"
	case !hasB:
		c.Op = "remove"
	}
	hidden := v.hides(path, ra, rb)
	long := hidden || isLong(ra) || isLong(rb)
	switch {
	case v.secret:
	case hidden:
		if hasA {
			c.Before = redact.Shown
		}
		if hasB {
			c.After = redact.Shown
		}
		path += " " + redact.Shown
	default:
		c.Before, c.After = shorten(ra), shorten(rb)
	}
	switch {
	case c.Op == "add" && long:
		c.Text = fmt.Sprintf("%s added (%s B)", path, Bytes(c.AfterBytes))
	case c.Op == "remove" && long:
		c.Text = fmt.Sprintf("%s removed (%s B)", path, Bytes(c.BeforeBytes))
	case long:
		c.Text = fmt.Sprintf("%s %s B (%s B → %s B)", path, signed(c.AfterBytes-c.BeforeBytes), Bytes(c.BeforeBytes), Bytes(c.AfterBytes))
	case c.Op == "add":
		c.Text = fmt.Sprintf("%s: (none) → %s", path, c.After)
	case c.Op == "remove":
		c.Text = fmt.Sprintf("%s: %s → (none)", path, c.Before)
	default:
		c.Text = fmt.Sprintf("%s: %s → %s", path, c.Before, c.After)
	}
	return c
}

// render is a value as text: strings as they are, anything else as JSON.
func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// size counts a value's bytes; a Secret's data values are counted decoded.
func size(path, v string, secret bool) int {
	if secret && strings.HasPrefix(path, "data.") {
		if d, err := base64.StdEncoding.DecodeString(v); err == nil {
			return len(d)
		}
	}
	return len(v)
}

func isLong(s string) bool {
	return len(s) > shortLimit || strings.ContainsAny(s, "\n\r")
}

// shorten keeps the first line's first 40 bytes (on a rune boundary) of a
// long value and marks the cut with "…".
func shorten(s string) string {
	if !isLong(s) {
		return s
	}
	if i := strings.IndexAny(s, "\n\r"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s + "…"
}

// Bytes formats n with thousands separators: 262,144.
func Bytes(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// signed is Bytes with a sign: +8,126, -12, ±0.
func signed(n int) string {
	switch {
	case n > 0:
		return "+" + Bytes(n)
	case n == 0:
		return "±0"
	}
	return Bytes(n)
}
