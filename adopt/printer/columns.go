package printer

import (
	"io"
	"text/tabwriter"
	"unicode/utf8"
)

// columns lays out rows of cells the way text/tabwriter does for
// newTabwriter (padding 2, spaces, no flags) when every line has the same
// number of cells: each cell but a row's last is padded with spaces to
// its column's widest cell, counted in runes, plus two. It keeps every
// cell in one buffer, so a table of 100,000 rows costs no allocation per
// cell, and formats once instead of tabwriter's cell-by-cell scanning.
//
// A cell holding one of tabwriter's own bytes (tab, newline, vertical
// tab, form feed, 0xff) would be split or escaped by tabwriter: the
// table is then written through tabwriter itself, so the bytes are always
// tabwriter's (TestColumnsAreTabwriter).
type columns struct {
	n       int    // cells a row
	text    []byte // every cell, one after another
	ends    []int  // where each cell ends in text
	special bool   // a cell holds one of tabwriter's bytes
}

// newTabwriter is the tabwriter columns stands for.
func newTabwriter(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// reset empties c for rows of n cells, keeping its buffers.
func (c *columns) reset(n int) {
	c.n, c.text, c.ends, c.special = n, c.text[:0], c.ends[:0], false
}

// cell appends the row's next cell, parts one after another.
func (c *columns) cell(parts ...string) {
	start := len(c.text)
	for _, p := range parts {
		c.text = append(c.text, p...)
	}
	c.close(start)
}

// open starts a cell the caller appends to c.text; close(start) ends it.
func (c *columns) open() int { return len(c.text) }

// close ends the cell begun at start.
func (c *columns) close(start int) {
	for _, b := range c.text[start:] {
		if b == '\t' || b == '\n' || b == '\v' || b == '\f' || b == 0xff {
			c.special = true
		}
	}
	c.ends = append(c.ends, len(c.text))
}

// cellAt is cell i.
func (c *columns) cellAt(i int) []byte {
	start := 0
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.text[start:c.ends[i]]
}

// write writes the rows to w, each ending in a newline.
func (c *columns) write(w io.Writer) error {
	if c.n == 0 {
		return nil
	}
	if c.special {
		tw := newTabwriter(w)
		for i := range c.ends {
			tw.Write(c.cellAt(i))
			if i%c.n == c.n-1 {
				tw.Write([]byte{'\n'})
			} else {
				tw.Write([]byte{'\t'})
			}
		}
		return tw.Flush()
	}
	widths := make([]int, c.n)
	for i := range c.ends {
		widths[i%c.n] = max(widths[i%c.n], utf8.RuneCount(c.cellAt(i)))
	}
	var line []byte
	for i := range c.ends {
		col, cell := i%c.n, c.cellAt(i)
		line = append(line, cell...)
		if col < c.n-1 {
			for range widths[col] + 2 - utf8.RuneCount(cell) {
				line = append(line, ' ')
			}
			continue
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
		line = line[:0]
	}
	return nil
}
