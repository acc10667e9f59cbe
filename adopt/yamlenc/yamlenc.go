// Package yamlenc writes YAML exactly as yaml.v3's encoder does with an
// indent of 2, byte for byte, but straight into a buffer: yaml.v3 builds
// an event per scalar and analyses every string, which made it most of a
// large plan's encoding and of apply's exports. It owns the rules for
// those bytes: the style yaml.v3 gives a scalar (plain, quoted, literal
// block), the order it gives a map's keys, the layout of blocks. It knows
// the shapes adopt writes (structs with yaml tags, maps with string keys,
// Mappings in a given order, slices, strings, numbers, bools, pointers,
// interfaces); for a value it cannot prove it writes as yaml.v3 would, it
// reports ErrShape and the caller encodes that value with yaml.v3. It
// must never write what yaml.v3 would write differently.
package yamlenc

import (
	"encoding"
	"errors"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Writer appends YAML to Buf. It remembers struct layouts and strings
// yaml.v3 rendered, so one Writer serves many values.
type Writer struct {
	Buf     []byte
	types   map[reflect.Type][]field
	methods map[reflect.Type]bool
	scalars map[string]string
	// pairs holds the pairs of the mappings being written, innermost
	// last.
	pairs []pair
}

// Pair is one key and value of a Mapping.
type Pair struct {
	Key   string
	Value any
}

// Mapping is a mapping written in the order of its pairs.
type Mapping []Pair

// ErrShape says yaml.v3 itself must encode the value.
var ErrShape = errors.New("a shape only yaml.v3 encodes")

// field is one struct field as yaml.v3 encodes it; index is its path
// through inlined structs (reflect.Value.FieldByIndex).
type field struct {
	key       string
	index     []int
	omitEmpty bool
}

// pair is one key and value of a mapping being written.
type pair struct {
	key string
	v   reflect.Value
}

// New returns an empty Writer.
func New() *Writer {
	return &Writer{}
}

// Item appends v as one item of a block sequence whose dashes are at
// column indent. On an error the buffer is left as it was.
func (w *Writer) Item(v reflect.Value, indent int) error {
	n := len(w.Buf)
	if err := w.seqItem(v, indent, false); err != nil {
		w.Buf = w.Buf[:n]
		return err
	}
	return nil
}

// Doc appends v, a struct, a map or a Mapping, as a document's root
// mapping. On an error the buffer is left as it was.
func (w *Writer) Doc(v reflect.Value) error {
	n := len(w.Buf)
	v, ok, err := w.deref(v)
	if err == nil && ok {
		ok, err = w.mapping(v, "", 0)
	}
	if err == nil && !ok {
		err = ErrShape
	}
	if err != nil {
		w.Buf = w.Buf[:n]
	}
	return err
}

var (
	mapType     = reflect.TypeOf(map[string]any(nil))
	mappingType = reflect.TypeOf(Mapping(nil))
	// basic holds the predeclared type of each kind that has one.
	basic = func() (b [reflect.UnsafePointer + 1]reflect.Type) {
		for _, v := range []any{false, 0, int8(0), int16(0), int32(0), int64(0), uint(0), uint8(0), uint16(0), uint32(0),
			uint64(0), uintptr(0), float32(0), float64(0), ""} {
			t := reflect.TypeOf(v)
			b[t.Kind()] = t
		}
		return b
	}()
)

// mapping writes v, a struct, a map or a Mapping, as a block mapping with
// keys at column indent after "key:" (sep " ") or "- " (sep "", also a
// document's start), in yaml.v3's order; with no pairs, "{}". ok is false
// for other kinds.
func (w *Writer) mapping(v reflect.Value, sep string, indent int) (ok bool, err error) {
	n := 0
	switch {
	case v.Kind() == reflect.Struct:
		fs, err := w.fields(v.Type())
		if err != nil {
			return false, err
		}
		for _, f := range fs {
			fv := v.FieldByIndex(f.index)
			if f.omitEmpty {
				zero, err := w.isZero(fv)
				if err != nil {
					return false, err
				}
				if zero {
					continue
				}
			}
			if err := w.pair(f.key, fv, n == 0, sep, indent); err != nil {
				return false, err
			}
			n++
		}
	case v.Kind() == reflect.Map || v.Type() == mappingType:
		start := len(w.pairs)
		defer func() { w.pairs = w.pairs[:start] }()
		if err := w.push(v); err != nil {
			return false, err
		}
		for i := start; i < len(w.pairs); i++ {
			p := w.pairs[i]
			k, err := w.key(p.key)
			if err != nil {
				return false, err
			}
			if err := w.pair(k, p.v, n == 0, sep, indent); err != nil {
				return false, err
			}
			n++
		}
	default:
		return false, nil
	}
	if n == 0 {
		w.Buf = append(append(w.Buf, sep...), "{}\n"...)
	}
	return true, nil
}

// push appends to w.pairs the pairs of v, a map or a Mapping, in yaml.v3's
// order.
func (w *Writer) push(v reflect.Value) error {
	start := len(w.pairs)
	switch {
	case v.Type() == mapType:
		for k, x := range v.Interface().(map[string]any) {
			w.pairs = append(w.pairs, pair{k, reflect.ValueOf(x)})
		}
		sortPairs(w.pairs[start:])
	case v.Type() == mappingType:
		for _, p := range v.Interface().(Mapping) {
			w.pairs = append(w.pairs, pair{p.Key, reflect.ValueOf(p.Value)})
		}
	default:
		if v.Type().Key().Kind() != reflect.String || w.special(v.Type().Key()) {
			return ErrShape
		}
		for it := v.MapRange(); it.Next(); {
			w.pairs = append(w.pairs, pair{it.Key().String(), it.Value()})
		}
		sortPairs(w.pairs[start:])
	}
	return nil
}

// pair writes one "key: value" of a mapping with keys at column indent,
// the key as key renders it; the first follows "key:" on the line before
// (sep " ") or "- " (sep "").
func (w *Writer) pair(key string, v reflect.Value, first bool, sep string, indent int) error {
	if first && sep != "" {
		w.Buf = append(w.Buf, '\n')
	}
	if !first || sep != "" {
		w.pad(indent)
	}
	w.Buf = append(append(w.Buf, key...), ':')
	return w.value(v, indent)
}

// key renders a mapping key as yaml.v3 writes it as a simple key ("k:",
// not "? k"): valid UTF-8 on one line, at most 128 bytes.
func (w *Writer) key(k string) (string, error) {
	if len(k) > 128 || !utf8.ValidString(k) || strings.ContainsAny(k, "\n\r\u0085\u2028\u2029") {
		return "", ErrShape
	}
	return w.str(k)
}

var (
	textMarshaler = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	yamlMarshaler = reflect.TypeOf((*yaml.Marshaler)(nil)).Elem()
	isZeroer      = reflect.TypeOf((*yaml.IsZeroer)(nil)).Elem()
	durationType  = reflect.TypeOf(time.Duration(0)) // written as its String()
)

// special reports types yaml.v3 treats by their methods or by name.
func (w *Writer) special(t reflect.Type) bool {
	if k := t.Kind(); t == basic[k] || (k == reflect.Map || k == reflect.Slice) && t.Name() == "" || t == mappingType {
		return false // predeclared, unnamed or Mapping: no methods
	}
	m, ok := w.methods[t]
	if !ok {
		m = t == durationType
		for _, i := range []reflect.Type{textMarshaler, yamlMarshaler, isZeroer} {
			m = m || t.Implements(i) || reflect.PointerTo(t).Implements(i)
		}
		if w.methods == nil {
			w.methods = map[reflect.Type]bool{}
		}
		w.methods[t] = m
	}
	return m
}

// deref follows pointers and interfaces; ok is false for a nil one.
func (w *Writer) deref(v reflect.Value) (reflect.Value, bool, error) {
	for {
		if !v.IsValid() {
			return v, false, nil
		}
		if v.Kind() == reflect.Interface {
			v = v.Elem()
			continue
		}
		if w.special(v.Type()) {
			return v, false, ErrShape
		}
		if v.Kind() != reflect.Pointer {
			return v, true, nil
		}
		if v.IsNil() {
			return v, false, nil
		}
		v = v.Elem()
	}
}

// fields returns how yaml.v3 encodes a struct type's fields.
func (w *Writer) fields(t reflect.Type) ([]field, error) {
	if fs, ok := w.types[t]; ok {
		if fs == nil {
			return nil, ErrShape
		}
		return fs, nil
	}
	fs := []field{}
	keys := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if f.Anonymous {
			// Only an embedded struct tagged ",inline": its fields are
			// the outer struct's, in their place.
			if tag != ",inline" || f.Type.Kind() != reflect.Struct {
				fs = nil
				break
			}
			inner, err := w.fields(f.Type)
			if err != nil {
				fs = nil
				break
			}
			for _, in := range inner {
				fs = append(fs, field{key: in.key, index: append([]int{i}, in.index...), omitEmpty: in.omitEmpty})
			}
			continue
		}
		if f.PkgPath != "" {
			continue
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		yf := field{key: name, index: []int{i}}
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
		if k, err := w.key(yf.key); err != nil || k != yf.key {
			fs = nil // written quoted: rare enough for yaml.v3
			break
		}
		fs = append(fs, yf)
	}
	for _, f := range fs {
		if keys[f.key] {
			fs = nil // yaml.v3 refuses a key twice
			break
		}
		keys[f.key] = true
	}
	if w.types == nil {
		w.types = map[reflect.Type][]field{}
	}
	w.types[t] = fs
	if fs == nil {
		return nil, ErrShape
	}
	return fs, nil
}

const spaces = "                                "

func (w *Writer) pad(n int) {
	for ; n > len(spaces); n -= len(spaces) {
		w.Buf = append(w.Buf, spaces...)
	}
	w.Buf = append(w.Buf, spaces[:n]...)
}

// seqItem writes "- " at column indent (inline: already at it, after
// another "- ") and the value after it.
func (w *Writer) seqItem(v reflect.Value, indent int, inline bool) error {
	v, ok, err := w.deref(v)
	if err != nil {
		return err
	}
	if !inline {
		w.pad(indent)
	}
	w.Buf = append(w.Buf, "- "...)
	if !ok {
		w.Buf = append(w.Buf, "null\n"...)
		return nil
	}
	return w.node(v, "", indent+2)
}

// value writes a mapping value after its "key:"; the key is at column
// indent.
func (w *Writer) value(v reflect.Value, indent int) error {
	v, ok, err := w.deref(v)
	if err != nil {
		return err
	}
	if !ok {
		w.Buf = append(w.Buf, " null\n"...)
		return nil
	}
	return w.node(v, " ", indent+2)
}

// node writes a non-nil value after "key:" (sep " ") or "- " (sep ""):
// a scalar on the same line, a block scalar's lines or a collection's
// entries at column indent, an empty collection as "{}" or "[]".
func (w *Writer) node(v reflect.Value, sep string, indent int) error {
	if ok, err := w.scalar(v, sep, indent); ok || err != nil {
		return err
	}
	if v.Kind() == reflect.Slice && v.Type() != mappingType {
		if v.Len() == 0 {
			w.Buf = append(append(w.Buf, sep...), "[]\n"...)
			return nil
		}
		if sep != "" {
			w.Buf = append(w.Buf, '\n')
		}
		for i := 0; i < v.Len(); i++ {
			if err := w.seqItem(v.Index(i), indent, i == 0 && sep == ""); err != nil {
				return err
			}
		}
		return nil
	}
	ok, err := w.mapping(v, sep, indent)
	if err == nil && !ok {
		err = ErrShape // arrays, channels, funcs
	}
	return err
}

// isZero is yaml.v3's omitempty test.
func (w *Writer) isZero(v reflect.Value) (bool, error) {
	if w.special(v.Type()) {
		return false, ErrShape
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
