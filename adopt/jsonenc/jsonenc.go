// Package jsonenc writes strings and numbers exactly as encoding/json
// does, without reflection, and measures them without writing: for the
// encoders that write or size many small objects (a plan's objects, a
// live object's last-applied copy) where encoding/json's reflection was
// most of the time.
package jsonenc

import (
	"math"
	"strconv"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// AppendString appends s quoted as encoding/json writes a string (its
// HTML-safe escaping): ", \ and control bytes escaped, <, > and & as
// \u003c, \u003e and \u0026, U+2028 and U+2029 escaped, and each byte of
// invalid UTF-8 as \ufffd.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiLen(c) == 1 {
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

// StringLen is len(AppendString(nil, s)).
func StringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			n += asciiLen(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// asciiLens holds, for each ASCII byte, how many bytes AppendString
// writes for it: 2 for ", \ and the control bytes with a short escape
// (\b \t \n \f \r), 6 for the other control bytes and <, > and &, else 1.
const asciiLens = "66666666222622666666666666666666" + // 0x00-0x1f
	"11211161111111111111111111116161" + // 0x20-0x3f: " & < >
	"11111111111111111111111111112111" + // 0x40-0x5f: \
	"11111111111111111111111111111111" //   0x60-0x7f

// asciiLen is how many bytes AppendString writes for the ASCII byte c.
func asciiLen(c byte) int { return int(asciiLens[c&0x7f] - '0') }

// AppendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from
// 1e21, with the exponent unpadded. f must be finite (Finite).
func AppendFloat(b []byte, f float64) []byte {
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

// Finite reports a float encoding/json can write (not NaN or infinite).
func Finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
