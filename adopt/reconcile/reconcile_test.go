package reconcile

import (
	"strings"
	"testing"
)

// TestMarker: a pull request body's record reads back as written, with or
// without the fields added later (plan=, seen=), and a body edited around
// it still holds it.
func TestMarker(t *testing.T) {
	d, p, s := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	for _, m := range []Mark{
		{Digest: d, Head: "0123abcd", Plan: p, Seen: s},
		{Digest: d, Head: "0123abcd"}, // a pull request opened before plan= and seen=
		{Digest: d, Head: "", Plan: p},
	} {
		body := "Adopts 3 objects.\n\n" + Trailer(m) + "\n\n(edited by a reviewer)"
		got, ok := readMarker(body)
		if !ok || got != m {
			t.Errorf("readMarker(%q) = %+v, %v; want %+v", Trailer(m), got, ok, m)
		}
	}
	if _, ok := readMarker("no record <!-- adopt-reconcile digest=sha256:short head=1 -->"); ok {
		t.Errorf("a malformed record was read")
	}
}
