package finalize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// Op is one JSON-patch (RFC 6902) operation.
type Op struct {
	Op    string `json:"op" yaml:"op"`
	Path  string `json:"path" yaml:"path"`
	Value any    `json:"value,omitempty" yaml:"value,omitempty"`
}

// annotationPath is the JSON pointer of the last-applied annotation.
var annotationPath = "/metadata/annotations/" + pointerEscape(budget.LastAppliedKey)

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// ops is the guarded patch: test the resourceVersion and the annotation's
// value, remove the annotation, replace the managed fields.
func (s step) ops(annotation any) []Op {
	ops := []Op{{Op: "test", Path: "/metadata/resourceVersion", Value: s.rv}}
	if s.hasAnnotation {
		ops = append(ops, Op{Op: "test", Path: annotationPath, Value: annotation}, Op{Op: "remove", Path: annotationPath})
	}
	if s.managed != nil {
		ops = append(ops, Op{Op: "replace", Path: "/metadata/managedFields", Value: s.managed})
	}
	return ops
}

func (s step) body() ([]byte, error) {
	b, err := json.Marshal(s.ops(s.annotation))
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return b, nil
}

// redacted is the patch with the annotation's value replaced by its size and
// digest, or, for a Secret (whose last-applied copy holds its data), by
// redact.Shown alone: an unsalted digest or a length lets weak values be
// guessed offline.
func (s step) redacted(secret bool) []Op {
	if secret {
		return s.ops(redact.Shown)
	}
	return s.ops(Digest(s.annotation))
}

// Digest describes a value without revealing it: "<N bytes, sha256:…>".
func Digest(v string) string {
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("<%d bytes, sha256:%s>", len(v), hex.EncodeToString(sum[:8]))
}
