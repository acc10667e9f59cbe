package plan

import (
	"encoding"
	"errors"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlWriter writes plan values exactly as yaml.v3's encoder does with an
// indent of 2, byte for byte, but straight into a buffer: yaml.v3 builds an
// event per scalar and analyses every string, which made it most of a
// 20,000-object plan's time. It knows the shapes a plan has (structs with
// yaml tags, strings, numbers, bools, pointers, slices of those); a value
// of any other shape, or a string yaml.v3 writes on several lines, makes
// it report errShape, and the caller encodes that value with yaml.v3.
// Strings it cannot see are plain on their own are rendered once by
// yaml.v3 and remembered.
type yamlWriter struct {
	buf     []byte
	types   map[reflect.Type][]yamlField
	methods map[reflect.Type]bool
	scalars map[string]string
}

// yamlField is one struct field as yaml.v3 encodes it.
type yamlField struct {
	key       string
	index     int
	omitEmpty bool
}

// errShape says yaml.v3 itself must encode the value.
var errShape = errors.New("a shape only yaml.v3 encodes")

// maxScalars bounds the remembered string renderings.
const maxScalars = 1 << 14

func newYAMLWriter() *yamlWriter {
	return &yamlWriter{types: map[reflect.Type][]yamlField{}, methods: map[reflect.Type]bool{}, scalars: map[string]string{}}
}

// item appends v as one item of a block sequence whose dashes are at
// column indent. On errShape the buffer is left as it was.
func (w *yamlWriter) item(v reflect.Value, indent int) error {
	n := len(w.buf)
	if err := w.seqItem(v, indent); err != nil {
		w.buf = w.buf[:n]
		return err
	}
	return nil
}

// doc appends v as a document's root mapping.
func (w *yamlWriter) doc(v reflect.Value) error {
	n := len(w.buf)
	v, ok, err := w.deref(v)
	if err == nil && (!ok || v.Kind() != reflect.Struct) {
		err = errShape
	}
	if err == nil {
		err = w.mapping(v, 0, false, true)
	}
	if err != nil {
		w.buf = w.buf[:n]
	}
	return err
}

var (
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	yamlMarshaler = reflect.TypeOf((*yaml.Marshaler)(nil)).Elem()
	isZeroer      = reflect.TypeOf((*yaml.IsZeroer)(nil)).Elem()
)

// special reports types yaml.v3 treats by their methods.
func (w *yamlWriter) special(t reflect.Type) bool {
	m, ok := w.methods[t]
	if !ok {
		for _, i := range []reflect.Type{textMarshaler, yamlMarshaler, isZeroer} {
			m = m || t.Implements(i) || reflect.PointerTo(t).Implements(i)
		}
		w.methods[t] = m
	}
	return m
}

// deref follows pointers; ok is false for a nil one.
func (w *yamlWriter) deref(v reflect.Value) (reflect.Value, bool, error) {
	for v.Kind() == reflect.Pointer {
		if w.special(v.Type()) {
			return v, false, errShape
		}
		if v.IsNil() {
			return v, false, nil
		}
		v = v.Elem()
	}
	if w.special(v.Type()) {
		return v, false, errShape
	}
	return v, true, nil
}

// fields returns how yaml.v3 encodes a struct type's fields.
func (w *yamlWriter) fields(t reflect.Type) ([]yamlField, error) {
	if fs, ok := w.types[t]; ok {
		if fs == nil {
			return nil, errShape
		}
		return fs, nil
	}
	fs := []yamlField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			fs = nil
			break
		}
		if f.PkgPath != "" {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		yf := yamlField{key: name, index: i}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				yf.omitEmpty = true
			default: // flow, inline
				fs = nil
			}
		}
		if fs == nil {
			break
		}
		if yf.key == "" {
			yf.key = strings.ToLower(f.Name)
		}
		if !plain(yf.key) {
			fs = nil
			break
		}
		fs = append(fs, yf)
	}
	w.types[t] = fs
	if fs == nil {
		return nil, errShape
	}
	return fs, nil
}

// scalar renders a string, number or bool as yaml.v3 does; ok is false
// for other kinds.
func (w *yamlWriter) scalar(v reflect.Value) (s string, ok bool, err error) {
	switch v.Kind() {
	case reflect.String:
		s, err = w.str(v.String())
		return s, true, err
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10), true, nil
	case reflect.Float32, reflect.Float64:
		bits := 64
		if v.Kind() == reflect.Float32 {
			bits = 32
		}
		s = strconv.FormatFloat(v.Float(), 'g', -1, bits)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, true, nil
	}
	return "", false, nil
}

// str renders a string scalar: printable ASCII starting with a letter as
// yaml.v3's emitter would choose (plain, single- or double-quoted), the
// others as yaml.v3 renders them, remembered.
func (w *yamlWriter) str(s string) (string, error) {
	if r, ok := asciiScalar(s); ok {
		return r, nil
	}
	if r, ok := w.scalars[s]; ok {
		if r == "" {
			return "", errShape
		}
		return r, nil
	}
	b, err := yaml.Marshal([]string{s})
	if err != nil {
		return "", err
	}
	r := strings.TrimSuffix(strings.TrimPrefix(string(b), "- "), "\n")
	if strings.ContainsAny(r, "\n\r\u0085\u2028\u2029") {
		r = "" // on several lines, which depend on the indentation
	}
	if len(w.scalars) < maxScalars {
		w.scalars[s] = r
	}
	if r == "" {
		return "", errShape
	}
	return r, nil
}

// asciiScalar renders s as yaml.v3 does when s is "" or printable ASCII
// starting with a letter: double-quoted when it would read back as a bool
// or null, else plain unless it has ": ", " #", a trailing ":" or a
// trailing space, which take single quotes (the emitter's analysis, with
// no line width).
func asciiScalar(s string) (string, bool) {
	if s == "" {
		return `""`, true
	}
	if !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return "", false
	}
	plain := s[len(s)-1] != ' '
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e:
			return "", false
		case c == ':' && (i+1 == len(s) || s[i+1] == ' '), c == '#' && s[i-1] == ' ':
			plain = false
		}
	}
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL",
		"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return `"` + s + `"`, true
	}
	if plain {
		return s, true
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", true
}

// plain reports keys yaml.v3 surely writes as they are.
func plain(s string) bool {
	r, ok := asciiScalar(s)
	return ok && r == s
}

func (w *yamlWriter) pad(n int) {
	for ; n > 0; n-- {
		w.buf = append(w.buf, ' ')
	}
}

// seqItem writes "- " at column indent and the value after it.
func (w *yamlWriter) seqItem(v reflect.Value, indent int) error {
	v, ok, err := w.deref(v)
	if err != nil {
		return err
	}
	w.pad(indent)
	w.buf = append(w.buf, "- "...)
	if !ok {
		w.buf = append(w.buf, "null\n"...)
		return nil
	}
	if s, ok, err := w.scalar(v); ok || err != nil {
		w.buf = append(append(w.buf, s...), '\n')
		return err
	}
	if v.Kind() != reflect.Struct {
		return errShape // sequences of sequences, maps, interfaces
	}
	return w.mapping(v, indent+2, true, false)
}

// mapping writes a struct's fields as a block mapping with keys at column
// indent; inline means the first key follows a "- " already written, root
// that the mapping is a document's root.
func (w *yamlWriter) mapping(v reflect.Value, indent int, inline, root bool) error {
	fs, err := w.fields(v.Type())
	if err != nil {
		return err
	}
	first := true
	for _, f := range fs {
		fv := v.Field(f.index)
		if f.omitEmpty {
			zero, err := w.isZero(fv)
			if err != nil {
				return err
			}
			if zero {
				continue
			}
		}
		if !first || !inline {
			w.pad(indent)
		}
		first = false
		w.buf = append(append(w.buf, f.key...), ':')
		if err := w.value(fv, indent); err != nil {
			return err
		}
	}
	if first {
		// No field written: an empty flow mapping.
		if !inline && !root {
			return errShape // handled by value
		}
		w.buf = append(w.buf, "{}\n"...)
	}
	return nil
}

// value writes a mapping value after its "key:".
func (w *yamlWriter) value(v reflect.Value, indent int) error {
	v, ok, err := w.deref(v)
	if err != nil {
		return err
	}
	if !ok {
		w.buf = append(w.buf, " null\n"...)
		return nil
	}
	if s, ok, err := w.scalar(v); ok || err != nil {
		w.buf = append(append(append(w.buf, ' '), s...), '\n')
		return err
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			w.buf = append(w.buf, " []\n"...)
			return nil
		}
		w.buf = append(w.buf, '\n')
		for i := 0; i < v.Len(); i++ {
			if err := w.seqItem(v.Index(i), indent+2); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
		empty, err := w.emptyMapping(v)
		if err != nil {
			return err
		}
		if empty {
			w.buf = append(w.buf, " {}\n"...)
			return nil
		}
		w.buf = append(w.buf, '\n')
		return w.mapping(v, indent+2, false, false)
	}
	return errShape
}

// emptyMapping reports a struct that writes no field.
func (w *yamlWriter) emptyMapping(v reflect.Value) (bool, error) {
	fs, err := w.fields(v.Type())
	if err != nil {
		return false, err
	}
	for _, f := range fs {
		if !f.omitEmpty {
			return false, nil
		}
		zero, err := w.isZero(v.Field(f.index))
		if err != nil || !zero {
			return false, err
		}
	}
	return true, nil
}

// isZero is yaml.v3's omitempty test.
func (w *yamlWriter) isZero(v reflect.Value) (bool, error) {
	if w.special(v.Type()) {
		return false, errShape
	}
	switch v.Kind() {
	case reflect.String:
		return v.Len() == 0, nil
	case reflect.Pointer, reflect.Interface:
		return v.IsNil(), nil
	case reflect.Slice, reflect.Map:
		return v.Len() == 0, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0, nil
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0, nil
	case reflect.Bool:
		return !v.Bool(), nil
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).PkgPath != "" {
				continue
			}
			if zero, err := w.isZero(v.Field(i)); err != nil || !zero {
				return false, err
			}
		}
		return true, nil
	}
	return false, nil
}
