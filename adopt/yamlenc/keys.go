package yamlenc

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// Ordered returns m's pairs in the order yaml.v3 writes a map's keys,
// except that the keys in first that m has come first, in first's order.
func Ordered(m map[string]any, first []string) Mapping {
	out := make(Mapping, 0, len(m))
	for _, k := range first {
		if v, ok := m[k]; ok {
			out = append(out, Pair{k, v})
		}
	}
	head := len(out)
	for k, v := range m {
		if !slices.Contains(first, k) {
			out = append(out, Pair{k, v})
		}
	}
	slices.SortFunc(out[head:], func(a, b Pair) int { return keyCompare(a.Key, b.Key) })
	return out
}

func sortPairs(ps []pair) {
	slices.SortFunc(ps, func(a, b pair) int { return keyCompare(a.key, b.key) })
}

func keyCompare(a, b string) int {
	switch {
	case a == b:
		return 0
	case keyLess(a, b):
		return -1
	}
	return 1
}

// keyLess is the order yaml.v3 gives string map keys, compared rune by
// rune from the first that differs: two letters by code point; a letter
// and another rune, the letter first when the runes before were a digit,
// last otherwise; two other runes by the numbers their runs of digits
// spell (a run starting with 0 after other digits counts from 1, as
// yaml.v3 counts), then by the length of those runs, then by code point;
// a key that is the start of the other first.
func keyLess(a, b string) bool {
	digit := false // the rune before, the same in both, is a digit
	for i := 0; i < len(a) && i < len(b); {
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, nb := utf8.DecodeRuneInString(b[i:])
		if a[i:i+na] == b[i:i+nb] {
			digit = unicode.IsDigit(ra)
			i += na
			continue
		}
		la, lb := unicode.IsLetter(ra), unicode.IsLetter(rb)
		switch {
		case la && lb:
			return ra < rb
		case la || lb:
			if digit {
				return la
			}
			return lb
		}
		var va, vb int64
		if ra == '0' || rb == '0' {
			prefix := a[:i]
			for prefix != "" {
				r, n := utf8.DecodeLastRuneInString(prefix)
				if !unicode.IsDigit(r) {
					break
				}
				if r != '0' {
					va, vb = 1, 1
					break
				}
				prefix = prefix[:len(prefix)-n]
			}
		}
		va, ca := digits(a[i:], va)
		vb, cb := digits(b[i:], vb)
		if va != vb {
			return va < vb
		}
		if ca != cb {
			return ca < cb
		}
		return ra < rb
	}
	return len(a) < len(b)
}

// digits continues v with the run of digits s starts with, as yaml.v3
// does (each digit's code point less '0', overflow wrapping), and counts
// the run's runes.
func digits(s string, v int64) (int64, int) {
	n := 0
	for _, r := range s {
		if !unicode.IsDigit(r) {
			break
		}
		v = v*10 + int64(r-'0')
		n++
	}
	return v, n
}
