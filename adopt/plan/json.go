package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes p as encoding/json would (json.Encoder, one trailing
// newline; indented by two spaces when indent is set), byte for byte, but
// one list item at a time: json.Encoder builds the whole document in
// memory first, which for 100,000 objects is hundreds of megabytes.
func (p *Plan) WriteJSON(w io.Writer, indent bool) error {
	bw := bufio.NewWriter(w)
	head := *p
	head.Objects, head.Skipped, head.NotScanned = nil, nil, nil
	b, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	// Objects is the first of the lists after the head and never omitted;
	// the others are omitted when empty, so the head ends with it.
	const tail = `"objects":null}`
	if !bytes.HasSuffix(b, []byte(tail)) {
		return fmt.Errorf("encode plan: unexpected field order")
	}
	b = b[:len(b)-len(tail)]
	// The head without its closing brace; indented, its last line is the
	// comma after the field before objects.
	if indent {
		h := appendIndent(make([]byte, 0, 2*len(b)), append(b[:len(b):len(b)], "\"objects\":null}"...), "", "  ")
		h = h[:bytes.LastIndex(h, []byte(`"objects": null`))]
		if _, err := bw.Write(h); err != nil {
			return err
		}
	} else if _, err := bw.Write(b); err != nil {
		return err
	}
	first := true
	list := func(key string, n int, item func(b []byte, i int) ([]byte, error), omitEmpty bool) error {
		if n == 0 && omitEmpty {
			return nil
		}
		sep := ","
		if first {
			sep, first = "", false
		}
		if indent {
			if sep != "" {
				bw.WriteString(",\n  ")
			}
			if n == 0 {
				_, err := bw.WriteString(`"` + key + `": []`)
				return err
			}
			bw.WriteString(`"` + key + `": [`)
		} else {
			if n == 0 {
				_, err := bw.WriteString(sep + `"` + key + `":[]`)
				return err
			}
			bw.WriteString(sep + `"` + key + `":[`)
		}
		err := ordered(n, func(b []byte, lo, hi int) ([]byte, error) {
			var err error
			for i := lo; i < hi; i++ {
				if i > 0 {
					b = append(b, ',')
				}
				if indent {
					b = append(b, "\n    "...)
				}
				if b, err = item(b, i); err != nil {
					return nil, err
				}
			}
			return b, nil
		}, func(b []byte) error {
			_, err := bw.Write(b)
			return err
		})
		if err != nil {
			return err
		}
		if indent {
			bw.WriteString("\n  ")
		}
		_, err = bw.WriteString("]")
		return err
	}
	if p.Objects == nil {
		// encoding/json writes a nil slice as null.
		if indent {
			bw.WriteString(`"objects": null`)
		} else {
			bw.WriteString(`"objects":null`)
		}
		first = false
	} else if err := list("objects", len(p.Objects), func(b []byte, i int) ([]byte, error) {
		if b, ok := appendObjectJSON(b, &p.Objects[i], indent); ok {
			return b, nil
		}
		return appendMarshal(b, &p.Objects[i], indent)
	}, false); err != nil {
		return err
	}
	if err := list("skipped", len(p.Skipped), func(b []byte, i int) ([]byte, error) { return appendMarshal(b, &p.Skipped[i], indent) }, true); err != nil {
		return err
	}
	if err := list("notScanned", len(p.NotScanned), func(b []byte, i int) ([]byte, error) { return appendMarshal(b, &p.NotScanned[i], indent) }, true); err != nil {
		return err
	}
	if indent {
		bw.WriteString("\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// appendMarshal appends json.Marshal's encoding of v, with indent laid
// out as an item of one of the plan's lists.
func appendMarshal(b []byte, v any, indent bool) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if indent {
		return appendIndent(b, raw, "    ", "  "), nil
	}
	return append(b, raw...), nil
}

// appendIndent appends src, compact JSON as json.Marshal writes it (no
// space outside strings), indented as json.Indent would: each element on
// a line of its own after prefix and one indent per depth, ": " after a
// key, and empty objects and arrays kept as {} and []. json.Indent runs
// its validating scanner over every byte, which was most of printing a
// 20,000-object plan with -o json; compact output needs only to find
// where strings end.
func appendIndent(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			// Copy the string through its closing quote; a backslash
			// always escapes the byte after it.
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd is the index after the closing quote of the JSON string that
// opens at src[open]: the first quote after it not escaped by an odd
// number of backslashes (len(src) when there is none).
func stringEnd(src []byte, open int) int {
	for j := open + 1; ; j++ {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			return len(src)
		}
		j += k
		slashes := 0
		for p := j - 1; p > open && src[p] == '\\'; p-- {
			slashes++
		}
		if slashes%2 == 0 {
			return j + 1
		}
	}
}
