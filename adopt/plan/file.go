package plan

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/adopt-dev/adopt/adopt/yamlenc"
	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// Marshal encodes p as YAML with a stable field order.
func Marshal(p *Plan) ([]byte, error) {
	var b bytes.Buffer
	if err := Encode(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Encode writes p as YAML, as yaml.v3 would, one list item at a time:
// yaml.v3's emitter keeps every event of a document until it ends, so one
// encoder for a 20,000-object plan would hold gigabytes. Items go through
// yamlenc, which writes yaml.v3's bytes without its event machine, a
// block of them per core at once (ordered); an item yamlenc does not
// know the shape of goes through yaml.v3.
func Encode(w io.Writer, p *Plan) error {
	head, err := encodeHead(p)
	if err != nil {
		return err
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	return encodeLists(w, p)
}

// encodeHead is the document up to its lists.
func encodeHead(p *Plan) ([]byte, error) {
	head := *p
	// The summary's list counts are what Unmarshal checks a file against,
	// so they always match the lists written after them.
	head.Summary.Objects, head.Summary.Skipped, head.Summary.NotScanned = len(p.Objects), len(p.Skipped), len(p.NotScanned)
	head.Objects, head.Skipped, head.NotScanned = nil, nil, nil
	yw := yamlenc.New()
	var b []byte
	if err := yw.Doc(reflect.ValueOf(&head)); err == nil {
		b = yw.Buf
	} else if errors.Is(err, yamlenc.ErrShape) {
		if b, err = encodeYAML(&head); err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return bytes.TrimSuffix(b, []byte("objects: []\n")), nil
}

// encodeLists writes the document's lists.
func encodeLists(w io.Writer, p *Plan) error {
	if err := writeList(w, "objects", p.Objects, false); err != nil {
		return err
	}
	if err := writeList(w, "skipped", p.Skipped, true); err != nil {
		return err
	}
	return writeList(w, "notScanned", p.NotScanned, true)
}

func writeList[T any](w io.Writer, key string, items []T, omitEmpty bool) error {
	if len(items) == 0 {
		if omitEmpty {
			return nil
		}
		_, err := io.WriteString(w, key+": []\n")
		return err
	}
	if _, err := io.WriteString(w, key+":\n"); err != nil {
		return err
	}
	return ordered(len(items), func(b []byte, lo, hi int) ([]byte, error) {
		yw := yamlenc.New()
		yw.Buf = b
		for i := lo; i < hi; i++ {
			if o, ok := any(&items[i]).(*Object); ok {
				if yw.Buf, ok = appendObjectYAML(yw.Buf, o); ok {
					continue
				}
			}
			err := yw.Item(reflect.ValueOf(&items[i]), 2)
			if errors.Is(err, yamlenc.ErrShape) {
				var b []byte
				if b, err = encodeYAML(items[i : i+1]); err != nil {
					return nil, err
				}
				for _, line := range bytes.SplitAfter(b, []byte("\n")) {
					if len(line) > 0 {
						yw.Buf = append(append(yw.Buf, "  "...), line...)
					}
				}
			} else if err != nil {
				return nil, fmt.Errorf("encode plan: %w", err)
			}
		}
		return yw.Buf, nil
	}, func(b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

func encodeYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(v); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Unmarshal decodes a plan (YAML or JSON) and checks its apiVersion and kind.
// The text is parsed once: the top-level keys complete checks come from
// the same parse as the plan. YAML as Encode writes it is parsed by
// parseCanonical, other YAML by yaml.v3, into the same tree.
func Unmarshal(data []byte) (*Plan, error) {
	return unmarshal(data, true)
}

// unmarshal is Unmarshal; without fast, yaml.v3 parses all YAML.
func unmarshal(data []byte, fast bool) (*Plan, error) {
	var p Plan
	top := map[string]bool{}
	var err error
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		var raw map[string]json.RawMessage
		if err = json.Unmarshal(data, &raw); err == nil {
			for k := range raw {
				top[k] = true
			}
			err = json.Unmarshal(data, &p)
		}
	} else {
		var doc *yaml.Node
		ok := false
		if fast {
			doc, ok = parseCanonical(data)
		}
		if !ok {
			doc = &yaml.Node{}
			err = yaml.Unmarshal(data, doc)
		}
		if err == nil && len(doc.Content) > 0 {
			if m := doc.Content[0]; m.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(m.Content); i += 2 {
					top[m.Content[i].Value] = true
				}
			}
			err = doc.Decode(&p)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("not a readable plan (truncated or not YAML/JSON): %s; run adopt plan again", strings.Join(strings.Fields(err.Error()), " "))
	}
	if p.Kind != Kind || p.APIVersion != APIVersion {
		if p.Kind == Kind && strings.HasPrefix(p.APIVersion, "adopt.dev/") {
			return nil, fmt.Errorf("plan is %s, but this adopt reads %s: use the adopt version that wrote it, or run adopt plan again", p.APIVersion, APIVersion)
		}
		return nil, fmt.Errorf("not an %s: apiVersion %q, kind %q (this adopt reads %s)", Kind, p.APIVersion, p.Kind, APIVersion)
	}
	if err := complete(top, &p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// complete refuses a plan file that was cut short. The encoder writes the
// summary before the lists it counts, so a file cut anywhere after the
// summary disagrees with it, and one cut before lacks the keys (top, the
// document's top-level keys).
func complete(top map[string]bool, p *Plan) error {
	for _, k := range []string{"cluster", "tracking", "summary", "applications", "objects"} {
		if !top[k] {
			return fmt.Errorf("plan has no %q: the file is truncated or was edited; run adopt plan again", k)
		}
	}
	s := p.Summary
	if s.Objects != len(p.Objects) || s.Skipped != len(p.Skipped) || s.NotScanned != len(p.NotScanned) {
		return fmt.Errorf("plan summary counts %d objects, %d skipped and %d not scanned, but the file lists %d, %d and %d: it is truncated or was edited; run adopt plan again",
			s.Objects, s.Skipped, s.NotScanned, len(p.Objects), len(p.Skipped), len(p.NotScanned))
	}
	for _, sk := range p.Skipped {
		if sk.Reason == "" {
			return fmt.Errorf("plan entry for skipped %s %s has no reason: the file is truncated or was edited; run adopt plan again", sk.Kind, sk.Name)
		}
	}
	for _, n := range p.NotScanned {
		if n.Reason == "" {
			return fmt.Errorf("plan entry for not-scanned %s has no reason: the file is truncated or was edited; run adopt plan again", n.Type)
		}
	}
	return nil
}

// Validate checks that the plan is consistent: every
// object an Application lists is in the plan, and every object belongs to
// exactly the Application it names.
func (p *Plan) Validate() error {
	objs := map[string]*Object{}
	for i := range p.Objects {
		o := &p.Objects[i]
		if o.Kind == "" || o.Name == "" || o.Version == "" {
			return fmt.Errorf("plan object %d (%s) lacks kind, version or name: the file was edited or truncated; run adopt plan again", i, o.Ref.String())
		}
		if objs[o.Ref.String()] != nil {
			return fmt.Errorf("plan lists %s twice: the file was edited; run adopt plan again", o.Ref.String())
		}
		objs[o.Ref.String()] = o
	}
	apps := map[string]bool{}
	for _, a := range p.Applications {
		if apps[a.Name] {
			return fmt.Errorf("plan proposes Application %q twice: the file was edited; run adopt plan again", a.Name)
		}
		apps[a.Name] = true
		for _, ref := range a.Objects {
			o := objs[ref]
			if o == nil {
				return fmt.Errorf("Application %q lists %s, which is not among the plan's objects: the file was edited; run adopt plan again", a.Name, ref)
			}
			if o.App != a.Name {
				return fmt.Errorf("Application %q lists %s, but the object names Application %q: the file was edited; run adopt plan again", a.Name, ref, o.App)
			}
		}
	}
	for _, o := range p.Objects {
		if o.App != "" && !apps[o.App] {
			return fmt.Errorf("%s names Application %q, which the plan does not propose: the file was edited; run adopt plan again", o.Ref.String(), o.App)
		}
	}
	return nil
}

// ReadFile reads and checks a plan file; its errors name the file.
func ReadFile(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read plan: %w", err)
	}
	p, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// WriteFile writes p to path atomically (temp file, then rename).
func WriteFile(path string, p *Plan) error {
	if err := writeFile(path, p); err != nil {
		return fmt.Errorf("write plan %s: %w", path, err)
	}
	return nil
}

// writeFile writes p to path and seals it in the same pass: the file
// gets the document with a placeholder id of the id's length, the digest
// the same bytes with no id (what Seal digests), and the id is then
// written over the placeholder. Encoding the plan once more only for its
// digest was a fifth of a 100,000-object plan's work after listing.
func writeFile(path string, p *Plan) error {
	p.ID = placeholderID
	head, err := encodeHead(p)
	p.ID = ""
	if err != nil {
		return err
	}
	at := bytes.Index(head, []byte("\nid: "+placeholderID+"\n"))
	if at < 0 {
		return fmt.Errorf("encode plan: no id in its head")
	}
	at += len("\nid: ")
	// The digest's head is the same with the id empty, as Seal encodes it.
	h := sha256.New()
	h.Write(head[:at])
	h.Write([]byte(`""`))
	h.Write(head[at+len(placeholderID):])
	var id string
	// atomicfile writes to the temporary file itself, which is also an
	// io.WriterAt: the id goes into the head once the digest is known.
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		f, ok := w.(io.WriterAt)
		if !ok {
			return fmt.Errorf("write plan %s: the file cannot be written at an offset", path)
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		_, err := bw.Write(head)
		if err == nil {
			hb := hashBehind(h)
			err = encodeLists(io.MultiWriter(bw, hb), p)
			hb.wait()
		}
		if err == nil {
			err = bw.Flush()
		}
		id = sealedID(h)
		if err == nil {
			_, err = f.WriteAt([]byte(id), int64(at))
		}
		return err
	})
	if err != nil {
		return err
	}
	p.ID = id
	return nil
}

// behind hashes what is written to it on a goroutine of its own: the
// digest of a large plan is taken while the next blocks are encoded and
// written, not in turn with them (a tenth of a 20,000-object plan's
// work). Each write is copied, so the writer may reuse its buffer; at
// most a few writes wait.
type behind struct {
	h          hash.Hash
	todo, free chan []byte
	done       chan struct{}
}

func hashBehind(h hash.Hash) *behind {
	b := &behind{h: h, todo: make(chan []byte, 4), free: make(chan []byte, 4), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for p := range b.todo {
			b.h.Write(p)
			select {
			case b.free <- p[:0]:
			default:
			}
		}
	}()
	return b
}

func (b *behind) Write(p []byte) (int, error) {
	var buf []byte
	select {
	case buf = <-b.free:
	default:
	}
	b.todo <- append(buf, p...)
	return len(p), nil
}

// wait returns once everything written is hashed; nothing may be written
// after it.
func (b *behind) wait() {
	close(b.todo)
	<-b.done
}
