package plan

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// parseCanonical reads a plan file in the YAML that Encode writes
// (yaml.v3's output with an indent of 2) into the yaml.Node tree yaml.v3's
// parser would build from it, about six times faster (BenchmarkUnmarshal):
// yaml.v3 scans and parses through an event machine, which was most of
// reading a large plan. The tree goes to yaml.v3's decoder as before.
//
// It knows a strict subset of YAML: block mappings and sequences indented
// by 2 (a sequence's dashes two columns right of its key, a mapping in a
// sequence item starting after its "- "), keys and values on one line,
// plain, single- and double-quoted scalars, literal block scalars (strings
// on several lines), and the flow empties [] and {}. Anything else
// (comments, anchors, tags, flow collections, folded or kept block
// scalars, document markers, tabs, other indentations, blank lines or
// trailing spaces outside block scalars, merge keys, a missing final
// newline: a hand-edited file; or what yaml.v3 writes for a string that is
// not UTF-8, holds U+2028 or ends in several line breaks, or a key on
// several lines) makes it report ok false, and Unmarshal reads the file
// with yaml.v3. yaml.v3 stays the reference: FuzzCanonicalIsYAMLv3 checks
// that every text accepted here gives yaml.v3's tree (kinds, styles, tags,
// values, lines and columns) and the same plan or error.
func parseCanonical(data []byte) (doc *yaml.Node, ok bool) {
	if !canonicalText(data) {
		return nil, false
	}
	c := &canonical{s: string(data), tags: map[string]string{}}
	c.load(0)
	doc = c.node(yaml.DocumentNode, "", "", 0, 1, 1)
	root, ok := c.block(0)
	if !ok || root.Kind != yaml.MappingNode || c.start != len(c.s) {
		return nil, false
	}
	doc.Content = []*yaml.Node{root}
	return doc, true
}

// canonicalText reports text that is not empty, ends its last line, and
// has no tab, carriage return, control character, invalid UTF-8, or
// character that yaml.v3 reads as a line break (U+0085, U+2028, U+2029)
// or a byte order mark, or refuses. (Blank lines and trailing spaces are
// refused where they matter.)
func canonicalText(b []byte) bool {
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return false
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || r < 0xa0 || r == 0x2028 || r == 0x2029 || r >= 0xd800 && r < 0xe000 || r == 0xfeff || r > 0xfffd && r < 0x10000 {
			return false
		}
		i += n
	}
	return true
}

// canonical is the state of one parseCanonical: the text and its current
// line, and slabs the tree's nodes and child lists are cut from.
type canonical struct {
	s     string
	line  int               // the current line's number, from 1
	start int               // its first byte; len(s) at the end of the text
	end   int               // its '\n'
	ind   int               // its indentation; -1 at the end of the text
	tags  map[string]string // plain scalars' tags, by value
	nodes []yaml.Node
	ptrs  []*yaml.Node
	kids  []*yaml.Node // children of the blocks being read, innermost last
}

const (
	// maxCanonicalDepth bounds nesting, by indentation: a plan nests
	// about 8 deep, yaml.v3 refuses 10,000.
	maxCanonicalDepth = 100
	// maxCanonicalKey bounds a key's length: yaml.v3 refuses a key of
	// more than 1,024 characters, and writes one longer than 128 as "? ".
	maxCanonicalKey = 128
	// slab is how many nodes or child pointers one allocation holds.
	slab = 1024
)

// load makes the line starting at off the current one.
func (c *canonical) load(off int) {
	c.line++
	c.start = off
	if off == len(c.s) {
		c.end, c.ind = off, -1
		return
	}
	c.end = off + strings.IndexByte(c.s[off:], '\n')
	i := off
	for c.s[i] == ' ' { // a blank line's content is empty: nothing reads it but literal
		i++
	}
	c.ind = i - off
}

func (c *canonical) next() { c.load(c.end + 1) }

func (c *canonical) node(kind yaml.Kind, tag, value string, style yaml.Style, line, col int) *yaml.Node {
	if len(c.nodes) == cap(c.nodes) {
		c.nodes = make([]yaml.Node, 0, slab)
	}
	c.nodes = append(c.nodes, yaml.Node{Kind: kind, Tag: tag, Value: value, Style: style, Line: line, Column: col})
	return &c.nodes[len(c.nodes)-1]
}

// content moves the children read since kids[k] into the node's own list.
func (c *canonical) content(k int) []*yaml.Node {
	kids := c.kids[k:]
	if len(c.ptrs)+len(kids) > cap(c.ptrs) {
		c.ptrs = make([]*yaml.Node, 0, max(slab, len(kids)))
	}
	n := len(c.ptrs)
	c.ptrs = append(c.ptrs, kids...)
	c.kids = c.kids[:k]
	return c.ptrs[n:len(c.ptrs):len(c.ptrs)]
}

// block reads the sequence or mapping whose first dash or key is at byte
// at of the current line and whose others start lines indented by at.
func (c *canonical) block(at int) (*yaml.Node, bool) {
	p := c.start + at
	if strings.HasPrefix(c.s[p:c.end], "- ") {
		return c.sequence(at)
	}
	key, q, ok := c.scalar(p)
	if !ok || !c.colon(q) {
		return nil, false
	}
	return c.mapping(at, key, q)
}

// colon reports a key's ':' at q.
func (c *canonical) colon(q int) bool {
	return q < c.end && c.s[q] == ':' && (q+1 == c.end || c.s[q+1] == ' ')
}

func (c *canonical) sequence(at int) (*yaml.Node, bool) {
	if at > 2*maxCanonicalDepth {
		return nil, false
	}
	n := c.node(yaml.SequenceNode, "!!seq", "", 0, c.line, at+1)
	k := len(c.kids)
	for {
		item, ok := c.item(at + 2)
		if !ok {
			return nil, false
		}
		c.kids = append(c.kids, item)
		if c.ind != at {
			break
		}
		if !strings.HasPrefix(c.s[c.start+at:c.end], "- ") {
			return nil, false
		}
	}
	if c.ind > at {
		return nil, false
	}
	n.Content = c.content(k)
	return n, true
}

// item reads a sequence item starting at byte at of the current line,
// after its "- ".
func (c *canonical) item(at int) (*yaml.Node, bool) {
	p := c.start + at
	if strings.HasPrefix(c.s[p:c.end], "- ") {
		return c.block(at)
	}
	if strings.HasPrefix(c.s[p:c.end], "|") {
		return c.literal(p, at-2)
	}
	v, q, ok := c.scalar(p)
	switch {
	case !ok:
		return nil, false
	case q == c.end:
		c.next()
		return v, true
	case v.Kind == yaml.ScalarNode && c.colon(q):
		return c.mapping(at, v, q)
	}
	return nil, false
}

// mapping reads a block mapping whose keys are at byte at of their lines,
// the first of them (key, its ':' at q) already read.
func (c *canonical) mapping(at int, key *yaml.Node, q int) (*yaml.Node, bool) {
	if at > 2*maxCanonicalDepth {
		return nil, false
	}
	n := c.node(yaml.MappingNode, "!!map", "", 0, c.line, at+1)
	k := len(c.kids)
	for {
		if key.Kind != yaml.ScalarNode || key.Tag == "!!merge" || q-(c.start+at) > maxCanonicalKey {
			return nil, false
		}
		var val *yaml.Node
		ok := true
		if q+1 == c.end {
			// The value is a block on the next lines.
			c.next()
			if c.ind != at+2 {
				return nil, false
			}
			val, ok = c.block(at + 2)
		} else if c.s[q+2] == '|' {
			val, ok = c.literal(q+2, at)
		} else {
			var r int
			val, r, ok = c.scalar(q + 2)
			if ok = ok && r == c.end; ok {
				c.next()
			}
		}
		if !ok {
			return nil, false
		}
		c.kids = append(c.kids, key, val)
		if c.ind != at {
			break
		}
		if key, q, ok = c.scalar(c.start + at); !ok || !c.colon(q) {
			return nil, false
		}
	}
	if c.ind > at {
		return nil, false
	}
	n.Content = c.content(k)
	return n, true
}

// plainStart are the characters a plain scalar may not start with, but
// for "-", "?" and ":" followed by another character than a space.
const plainStart = "-?:,[]{}#&*!|>'\"%@` "

// scalar reads the scalar, [] or {} at byte p of the current line and
// returns where it ends: plain ones end at a ':' followed by a space or
// the end of the line, or there.
func (c *canonical) scalar(p int) (n *yaml.Node, q int, ok bool) {
	s, end := c.s, c.end
	if p >= end {
		return nil, 0, false
	}
	line, col := c.line, c.column(p)
	switch s[p] {
	case '[', '{':
		kind, tag, close := yaml.SequenceNode, "!!seq", byte(']')
		if s[p] == '{' {
			kind, tag, close = yaml.MappingNode, "!!map", '}'
		}
		if p+1 == end || s[p+1] != close {
			return nil, 0, false
		}
		return c.node(kind, tag, "", yaml.FlowStyle, line, col), p + 2, true
	case '\'':
		v, q, ok := c.singleQuoted(p + 1)
		if !ok {
			return nil, 0, false
		}
		return c.node(yaml.ScalarNode, "!!str", v, yaml.SingleQuotedStyle, line, col), q, true
	case '"':
		v, q, ok := c.doubleQuoted(p + 1)
		if !ok {
			return nil, 0, false
		}
		return c.node(yaml.ScalarNode, "!!str", v, yaml.DoubleQuotedStyle, line, col), q, true
	}
	if strings.IndexByte(plainStart, s[p]) >= 0 && (strings.IndexByte("-?:", s[p]) < 0 || p+1 == end || s[p+1] == ' ') {
		return nil, 0, false
	}
	if p == c.start && (strings.HasPrefix(s[p:end], "---") || strings.HasPrefix(s[p:end], "...")) {
		return nil, 0, false // a document marker, or close to one
	}
	for q = p + 1; q < end; q++ {
		if s[q] == ':' && (q+1 == end || s[q+1] == ' ') {
			break
		}
		if s[q] == '#' && s[q-1] == ' ' {
			return nil, 0, false // a comment
		}
	}
	v := s[p:q]
	if v[len(v)-1] == ' ' {
		return nil, 0, false // trimmed by yaml.v3
	}
	tag, ok := c.tags[v]
	if !ok {
		// As yaml.v3's parser tags a plain scalar.
		tag = (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
		if v == "<<" {
			tag = "!!merge"
		}
		c.tags[v] = tag
	}
	return c.node(yaml.ScalarNode, tag, v, 0, line, col), q, true
}

// literal reads the literal block scalar whose header ("|", "|-", "|2"
// or "|2-": clipped or stripped, the indentation given or not) is at byte
// p of the current line, in a block indented by parent: yaml.v3 writes its
// lines indented by parent+2 and its blank lines empty (Encode indents
// them, as it indents an item's lines), and gives the indentation when the
// first line starts with a space or is blank.
func (c *canonical) literal(p, parent int) (*yaml.Node, bool) {
	header := c.s[p:c.end]
	strip := strings.HasSuffix(header, "-")
	given := strings.HasPrefix(header, "|2")
	if len(header) != 1+btoi(strip)+btoi(given) {
		return nil, false
	}
	n := c.node(yaml.ScalarNode, "!!str", "", yaml.LiteralStyle, c.line, c.column(p))
	ind := parent + 2
	c.next()
	if !given && c.ind != ind {
		return nil, false
	}
	var v []byte
	lines, blank := 0, 0
	for ; c.start < len(c.s); c.next() {
		if c.start+c.ind == c.end {
			// A blank line, as yaml.v3 writes it or as Encode indents
			// one; a space past the indentation would be content.
			if c.ind >= ind {
				return nil, false
			}
			blank++
			continue
		}
		if c.ind < ind {
			break
		}
		if lines > 0 {
			v = append(v, '\n')
		}
		for ; blank > 0; blank-- {
			v = append(v, '\n')
		}
		v = append(v, c.s[c.start+ind:c.end]...)
		lines++
	}
	if lines == 0 || blank > 0 {
		return nil, false // blank lines kept at the end: "|+"
	}
	if !strip {
		v = append(v, '\n')
	}
	n.Value = string(v)
	return n, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// column is yaml.v3's column of byte p of the current line: characters,
// from 1.
func (c *canonical) column(p int) int {
	pre := c.s[c.start:p]
	for i := 0; i < len(pre); i++ {
		if pre[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(pre) + 1
		}
	}
	return len(pre) + 1
}

// singleQuoted reads a single-quoted scalar's text from byte p to its
// closing quote on the same line; q is after that quote.
func (c *canonical) singleQuoted(p int) (v string, q int, ok bool) {
	s := c.s[:c.end]
	var b []byte
	for q = p; ; q += 2 {
		i := strings.IndexByte(s[q:], '\'')
		if i < 0 {
			return "", 0, false
		}
		i += q
		if i+1 < len(s) && s[i+1] == '\'' {
			b = append(b, s[q:i+1]...)
			q = i
			continue
		}
		if b == nil {
			return s[p:i], i + 1, true
		}
		return string(append(b, s[q:i]...)), i + 1, true
	}
}

// Double-quoted escapes yaml.v3 reads: one character for one byte
// (oneEscape to oneEscaped), one for a character (runeEscape to
// runeEscaped), or a hex code of 2, 4 or 8 digits.
const (
	oneEscape   = "0abtnvfre \"'\\"
	oneEscaped  = "\x00\a\b\t\n\v\f\r\x1b \"'\\"
	runeEscape  = "N_LP"
	runeEscaped = "\u0085\u00a0\u2028\u2029"
)

// doubleQuoted reads a double-quoted scalar's text from byte p to its
// closing quote on the same line, with yaml.v3's escapes; q is after that
// quote.
func (c *canonical) doubleQuoted(p int) (v string, q int, ok bool) {
	s := c.s[:c.end]
	var b []byte
	seg := p
	for q = p; q < len(s); q++ {
		if s[q] == '"' {
			if b == nil {
				return s[p:q], q + 1, true
			}
			return string(append(b, s[seg:q]...)), q + 1, true
		}
		if s[q] != '\\' {
			continue
		}
		if q+1 == len(s) {
			return "", 0, false // an escaped line break
		}
		b = append(b, s[seg:q]...)
		q++
		e := s[q]
		if i := strings.IndexByte(oneEscape, e); i >= 0 {
			b = append(b, oneEscaped[i])
		} else if i := strings.IndexByte(runeEscape, e); i >= 0 {
			b = utf8.AppendRune(b, []rune(runeEscaped)[i])
		} else {
			i := strings.IndexByte("xuU", e)
			digits := 2 << max(i, 0)
			if i < 0 || q+digits >= len(s) {
				return "", 0, false
			}
			r, err := strconv.ParseUint(s[q+1:q+1+digits], 16, 32)
			if err != nil || r >= 0xd800 && r < 0xe000 || r > 0x10ffff {
				return "", 0, false
			}
			b = utf8.AppendRune(b, rune(r))
			q += digits
		}
		seg = q + 1
	}
	return "", 0, false
}
