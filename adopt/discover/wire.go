package discover

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"unique"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/jsonenc"
)

// A list page comes as the API server's protobuf: the bytes "k8s\x00",
// then a runtime.Unknown whose raw field (2) holds the list. Every list
// (PartialObjectMetadataList, ConfigMapList, SecretList) holds its
// ListMeta in field 1 and its items in field 2, and every item its
// ObjectMeta in field 1. The facts below are read from those bytes in
// place: decoding a page into Go objects allocated every string of every
// object (uids, timestamps, managedFields' field sets, ConfigMap data and
// Secret values) only to drop them, and was, with the garbage it left, the
// largest cost of listing 100,000 objects. Field numbers are those of the
// generated.proto files of k8s.io/api and k8s.io/apimachinery; the tests
// read objects marshalled by those packages (TestWireIsDecoded) and a real
// API server's pages (TestProtobufBodiesMeasureAsJSON).
var protobufMagic = []byte("k8s\x00")

// listPage is a page's ListMeta.
type listPage struct {
	next      string // the continue token, "" on the last page
	remaining int64  // remainingItemCount, -1 when the server gave none
}

// readPage hands each item of a protobuf list page to item, in order.
func readPage(body []byte, item func([]byte) error) (listPage, error) {
	page := listPage{remaining: -1}
	if !bytes.HasPrefix(body, protobufMagic) {
		return page, fmt.Errorf("the API server's answer is not protobuf")
	}
	var list []byte
	err := fields(body[len(protobufMagic):], func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 2:
			list = v
		case 3:
			if len(v) > 0 {
				return fmt.Errorf("the API server's answer is encoded as %q", v)
			}
		}
		return nil
	})
	if err != nil {
		return page, err
	}
	err = fields(list, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1:
			return fields(v, func(num protowire.Number, v []byte, n uint64) error {
				switch num {
				case 3:
					page.next = string(v)
				case 4:
					page.remaining = int64(n)
				}
				return nil
			})
		case 2:
			return item(v)
		}
		return nil
	})
	return page, err
}

// fields calls fn for each field of the message b: its number, and its
// bytes (length-delimited fields) or value (varints). Other wire types are
// skipped.
func fields(b []byte, fn func(num protowire.Number, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if typ != protowire.BytesType && typ != protowire.VarintType {
			continue
		}
		if err := fn(num, v, n); err != nil {
			return err
		}
	}
	return nil
}

// entry splits a map entry (key 1, value 2) into key and value.
func entry(b []byte) (k, v []byte, err error) {
	err = fields(b, func(num protowire.Number, f []byte, _ uint64) error {
		switch num {
		case 1:
			k = f
		case 2:
			v = f
		}
		return nil
	})
	return k, v, err
}

// view is b as a string without copying, for measuring and comparing
// only: it must not outlive the page it points into, so whatever is kept
// is copied with string(b).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// wireObject reads the facts of one list item of type t. Its metadata is
// field 1; body, when set, reads the other fields (a ConfigMap's or a
// Secret's data) and returns their DataBytes and the length they add to
// the object's last-applied JSON.
func wireObject(t Type, b []byte, body func(num protowire.Number, v []byte, n uint64, d *bodyLen) error, sets *labelSets) (Object, error) {
	o := Object{Type: t}
	var meta appliedMeta
	var d bodyLen
	err := fields(b, func(num protowire.Number, v []byte, n uint64) error {
		if num == 1 {
			return wireMeta(v, &o, &meta, sets)
		}
		if body != nil {
			return body(num, v, n, &d)
		}
		return nil
	})
	if err != nil {
		return o, fmt.Errorf("read %s from the API server's protobuf: %w", t.String(), err)
	}
	sort.Strings(o.Elided)
	o.Budget = budget.FromBytes(meta.annotationBytes, meta.lastApplied, meta.hasLastApplied)
	o.DataBytes = d.dataBytes
	if body != nil {
		o.AppliedBytes = len(`{"apiVersion":"v1","kind":`) + jsonenc.StringLen(t.Kind) + len(`,"metadata":}`) +
			meta.len() + d.applied() + 1 // and the trailing newline
	}
	return o, nil
}

// appliedMeta adds up the length of the metadata a client-side apply
// writes into last-applied: {"name":…,"generateName":…,"namespace":…,
// "labels":{…},"annotations":{…}}, each left out when empty, without the
// last-applied annotation itself; and the annotations' budget.
type appliedMeta struct {
	fields          int // length of the fields written, with their commas
	count           int
	labels          jsonMap
	annotations     jsonMap
	annotationBytes int
	lastApplied     int
	hasLastApplied  bool
}

func (m *appliedMeta) field(l int) {
	if m.count > 0 {
		m.fields++
	}
	m.fields += l
	m.count++
}

func (m *appliedMeta) len() int {
	n := m.fields
	count := m.count
	for _, f := range [...]struct {
		key string
		m   jsonMap
	}{{`"labels":`, m.labels}, {`"annotations":`, m.annotations}} {
		if f.m.entries > 0 {
			if count > 0 {
				n++
			}
			n += len(f.key) + f.m.len()
			count++
		}
	}
	return n + 2
}

// jsonMap adds up the length of a JSON object of strings.
type jsonMap struct{ bytes, entries int }

func (m *jsonMap) add(k, v string) {
	m.bytes += jsonenc.StringLen(k) + 1 + jsonenc.StringLen(v)
	m.entries++
}

// addBase64 adds a []byte value, which encoding/json writes in base64.
func (m *jsonMap) addBase64(k string, v []byte) {
	m.bytes += jsonenc.StringLen(k) + 1 + 2 + base64.StdEncoding.EncodedLen(len(v))
	m.entries++
}

func (m jsonMap) len() int { return 2 + m.bytes + max(m.entries-1, 0) }

// lenAfter is the length of ,"key":{…}, or 0 when the map is empty
// (omitempty).
func (m jsonMap) lenAfter(key string) int {
	if m.entries == 0 {
		return 0
	}
	return len(`,"":`) + len(key) + m.len()
}

// wireMeta reads an ObjectMeta into o and m, its labels through sets
// (nil: a map of its own).
func wireMeta(b []byte, o *Object, m *appliedMeta, sets *labelSets) error {
	if sets == nil {
		sets = &labelSets{}
	}
	sets.start()
	var name, generateName, namespace string
	err := fields(b, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1:
			name = string(v)
		case 2:
			generateName = string(v)
		case 3:
			namespace = unique.Make(view(v)).Value()
		case 6:
			o.ResourceVersion = string(v)
		case 11:
			k, val, err := entry(v)
			if err != nil {
				return err
			}
			sets.add(k, val)
			m.labels.add(view(k), view(val))
		case 12:
			k, val, err := entry(v)
			if err != nil {
				return err
			}
			annotation(o, m, view(k), view(val))
		case 13:
			var kind, owner []byte
			err := fields(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					kind = v
				case 3:
					owner = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			o.Owners = append(o.Owners, string(kind)+"/"+string(owner))
		case 17:
			var mf Manager
			err := fields(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					mf.Manager = unique.Make(view(v)).Value()
				case 2:
					mf.Operation = managerOperation(v)
				case 8:
					mf.Subresource = string(v)
				}
				return nil
			})
			if err != nil {
				return err
			}
			o.Managers = append(o.Managers, mf)
		}
		return nil
	})
	o.Name, o.Namespace = name, namespace
	o.Labels = sets.done()
	for _, f := range [...]struct{ key, v string }{{`"name":`, name}, {`"generateName":`, generateName}, {`"namespace":`, namespace}} {
		if f.v != "" {
			m.field(len(f.key) + jsonenc.StringLen(f.v))
		}
	}
	return err
}

// labelSets gives the objects one worker reads one map per distinct set
// of labels: objects of one application mostly carry the same labels, and
// a map of their own was a fifth of what 100,000 objects' facts took. So
// an Object's Labels may be shared: nothing writes to them. At most
// maxLabelSets sets are remembered; the objects after that whose labels
// are not among them get maps of their own.
type labelSets struct {
	sets map[string]map[string]string
	key  []byte      // the object's label entries, each k 0 v 0
	kv   [][2][]byte // views into the page of the object's entries
}

const maxLabelSets = 1 << 14

func (s *labelSets) start() { s.key, s.kv = s.key[:0], s.kv[:0] }

func (s *labelSets) add(k, v []byte) {
	s.key = append(append(append(append(s.key, k...), 0), v...), 0)
	s.kv = append(s.kv, [2][]byte{k, v})
}

// done returns the map of the labels added since start (nil for none).
func (s *labelSets) done() map[string]string {
	if len(s.kv) == 0 {
		return nil
	}
	if m, ok := s.sets[string(s.key)]; ok {
		return m
	}
	m := make(map[string]string, len(s.kv))
	for _, e := range s.kv {
		m[string(e[0])] = string(e[1])
	}
	if s.sets == nil {
		s.sets = map[string]map[string]string{}
	}
	if len(s.sets) < maxLabelSets {
		s.sets[string(s.key)] = m
	}
	return m
}

// annotation counts one annotation, k and v views into the page, and
// keeps it on o (copied) unless it is last-applied or larger than
// MaxKeptAnnotationValue: those are named in Elided only. last-applied is
// never kept: it is large, and on a Secret it holds the Secret's values.
func annotation(o *Object, m *appliedMeta, k, v string) {
	m.annotationBytes += len(k) + len(v)
	if k == budget.LastAppliedKey {
		m.hasLastApplied, m.lastApplied = true, len(k)+len(v)
		o.Elided = append(o.Elided, budget.LastAppliedKey)
		return
	}
	m.annotations.add(k, v)
	if len(v) > MaxKeptAnnotationValue {
		o.Elided = append(o.Elided, strings.Clone(k))
		return
	}
	if o.Annotations == nil {
		o.Annotations = map[string]string{}
	}
	o.Annotations[strings.Clone(k)] = strings.Clone(v)
}

// managerOperation is a managedFields operation, without an allocation
// for the two the API server writes.
func managerOperation(v []byte) string {
	switch view(v) {
	case "Apply":
		return "Apply"
	case "Update":
		return "Update"
	}
	return string(v)
}

// bodyLen is what a ConfigMap's or Secret's fields other than metadata
// add: DataBytes, and the length they add to the last-applied JSON.
type bodyLen struct {
	dataBytes int
	extra     int     // immutable, type
	data      jsonMap // ,"data":{…}
	second    jsonMap // ,"binaryData":{…} or ,"stringData":{…}
	secondKey string
}

func (d *bodyLen) applied() int {
	return d.extra + d.data.lenAfter("data") + d.second.lenAfter(d.secondKey)
}

// immutableLen is the length of ,"immutable":true or false.
func immutableLen(set uint64) int {
	if set != 0 {
		return len(`,"immutable":true`)
	}
	return len(`,"immutable":false`)
}

// configMapBody reads a ConfigMap's data (2), binaryData (3) and
// immutable (4). Its last-applied JSON is {"apiVersion":"v1","kind":
// "ConfigMap","metadata":{…},"immutable":…,"data":{…},"binaryData":{…}}.
func configMapBody(num protowire.Number, v []byte, n uint64, d *bodyLen) error {
	switch num {
	case 2, 3:
		k, val, err := entry(v)
		if err != nil {
			return err
		}
		d.dataBytes += len(k) + len(val)
		if num == 2 {
			d.data.add(view(k), view(val))
		} else {
			d.secondKey = "binaryData"
			d.second.addBase64(view(k), val)
		}
	case 4:
		d.extra += immutableLen(n)
	}
	return nil
}

// secretBody reads a Secret's data (2), type (3), stringData (4) and
// immutable (5), never keeping a value. Its last-applied JSON is
// {"apiVersion":"v1","kind":"Secret","metadata":{…},"immutable":…,
// "data":{…},"stringData":{…},"type":…}; DataBytes counts data only.
func secretBody(num protowire.Number, v []byte, n uint64, d *bodyLen) error {
	switch num {
	case 2, 4:
		k, val, err := entry(v)
		if err != nil {
			return err
		}
		if num == 2 {
			d.dataBytes += len(k) + len(val)
			d.data.addBase64(view(k), val)
		} else {
			d.secondKey = "stringData"
			d.second.add(view(k), view(val))
		}
	case 3:
		if len(v) > 0 {
			d.extra += len(`,"type":`) + jsonenc.StringLen(view(v))
		}
	case 5:
		d.extra += immutableLen(n)
	}
	return nil
}
