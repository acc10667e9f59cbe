package yamlenc

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// maxScalars bounds the remembered string renderings.
const maxScalars = 1 << 14

// scalar writes a string, number or bool after "key:" (sep " ") or "- "
// (sep ""), a literal block's lines at column indent; ok is false for
// other kinds.
func (w *Writer) scalar(v reflect.Value, sep string, indent int) (ok bool, err error) {
	b := w.Buf
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		r, ok := asciiScalar(s)
		if !ok && literal(s) {
			w.Buf = append(w.Buf, sep...)
			w.literalBlock(s, indent)
			return true, nil
		}
		if !ok {
			if r, err = w.rendered(s); err != nil {
				return true, err
			}
		}
		b = append(append(b, sep...), r...)
	case reflect.Bool:
		b = strconv.AppendBool(append(b, sep...), v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b = strconv.AppendInt(append(b, sep...), v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b = strconv.AppendUint(append(b, sep...), v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		s := strconv.FormatFloat(v.Float(), 'g', -1, bits)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		b = append(append(b, sep...), s...)
	default:
		return false, nil
	}
	w.Buf = append(b, '\n')
	return true, nil
}

// str renders a string yaml.v3 writes on one line: printable ASCII
// starting with a letter as yaml.v3's emitter would choose (plain,
// single- or double-quoted), the others as yaml.v3 renders them,
// remembered. A string yaml.v3 writes as a block scalar literal does not
// take, or on several lines, is ErrShape.
func (w *Writer) str(s string) (string, error) {
	if r, ok := asciiScalar(s); ok {
		return r, nil
	}
	return w.rendered(s)
}

// rendered is s as yaml.v3 renders it, remembered; ErrShape when on
// several lines or a block scalar.
func (w *Writer) rendered(s string) (string, error) {
	if r, ok := w.scalars[s]; ok {
		if r == "" {
			return "", ErrShape
		}
		return r, nil
	}
	b, err := yaml.Marshal([]string{s})
	if err != nil {
		return "", err
	}
	r := strings.TrimSuffix(strings.TrimPrefix(string(b), "- "), "\n")
	if strings.ContainsAny(r, "\n\r\u0085\u2028\u2029") || r[0] == '|' || r[0] == '>' {
		// On several lines, which depend on the indentation, or a block
		// scalar with no line ("|4+" for "\n\n"), whose indicator does.
		r = ""
	}
	if w.scalars == nil {
		w.scalars = map[string]string{}
	}
	if len(w.scalars) < maxScalars {
		w.scalars[s] = r
	}
	if r == "" {
		return "", ErrShape
	}
	return r, nil
}

// asciiScalar renders s as yaml.v3 does when s is "", up to 18 digits
// (an int or a float to yaml.v3, so double-quoted), or printable ASCII
// starting with a letter, "/" or "_": double-quoted when it would read
// back as a bool or null, else plain unless it has ": ", " #", a trailing
// ":" or a trailing space, which take single quotes (the emitter's
// analysis, with no line width).
func asciiScalar(s string) (string, bool) {
	switch asciiStyle(s) {
	case noStyle:
		return "", false
	case plainStyle:
		return s, true
	}
	b, _ := AppendASCII(nil, s)
	return string(b), true
}

// AppendASCII appends s as asciiScalar renders it, for encoders written
// out by hand; ok is false, and b as it was, for a string asciiScalar
// does not render.
func AppendASCII(b []byte, s string) (_ []byte, ok bool) {
	switch asciiStyle(s) {
	case plainStyle:
		return append(b, s...), true
	case doubleStyle:
		return append(append(append(b, '"'), s...), '"'), true
	case singleStyle:
		b = append(b, '\'')
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				b = append(b, '\'')
			}
			b = append(b, s[i])
		}
		return append(b, '\''), true
	}
	return b, false
}

// A style is how asciiScalar writes a string.
type style int

const (
	noStyle style = iota // not one of asciiScalar's strings
	plainStyle
	doubleStyle
	singleStyle
)

// asciiStyle is asciiScalar's analysis of s.
func asciiStyle(s string) style {
	if s == "" || len(s) <= 18 && allDigits(s) {
		return doubleStyle
	}
	if !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z' || s[0] == '/' || s[0] == '_') {
		return noStyle
	}
	plain := s[len(s)-1] != ' '
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e:
			return noStyle
		case c == ':' && (i+1 == len(s) || s[i+1] == ' '), c == '#' && s[i-1] == ' ':
			plain = false
		}
	}
	if len(s) <= 5 { // a string longer is none of these words
		switch s {
		case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL",
			"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
			return doubleStyle
		}
	}
	if plain {
		return plainStyle
	}
	return singleStyle
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// literal reports the strings yaml.v3 writes as a literal block ("|")
// that this package writes too. yaml.v3 writes a string with a line feed
// as a literal block unless it ends with a space, has a space before a
// line break, or has a character it does not print as it is (a control
// character other than tab and line feed, carriage return, NEL, a
// byte-order mark, a character beyond the Basic Multilingual Plane,
// invalid UTF-8); those it double-quotes. Of its literal blocks, the
// Unicode line and paragraph separators (line breaks to yaml.v3) and a
// first line starting with a space, tab or line feed (an indentation
// indicator, and a block yaml.v3 does not read back as it wrote it) stay
// with yaml.v3.
func literal(s string) bool {
	if len(s) < 2 || s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[len(s)-1] == ' ' ||
		!strings.Contains(s, "\n") || strings.Contains(s, " \n") {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !(r >= 0xa0 && r <= 0xd7ff && r != 0x2028 && r != 0x2029 || r >= 0xe000 && r <= 0xfffd && r != 0xfeff) ||
			r == utf8.RuneError && n == 1 {
			return false
		}
		i += n
	}
	return true
}

// literalBlock writes s, which literal accepts, as yaml.v3 writes a
// literal block: the indicator with its chomping ("-" without a final
// line feed, "+" with more than one), then each line at column indent,
// empty lines empty.
func (w *Writer) literalBlock(s string, indent int) {
	w.Buf = append(w.Buf, '|')
	switch {
	case s[len(s)-1] != '\n':
		w.Buf = append(w.Buf, '-')
	case s[len(s)-2] == '\n':
		w.Buf = append(w.Buf, '+')
	}
	w.Buf = append(w.Buf, '\n')
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if line != "" {
			w.pad(indent)
			w.Buf = append(w.Buf, line...)
		}
		w.Buf = append(w.Buf, '\n')
		s = rest
	}
}
