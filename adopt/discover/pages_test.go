package discover

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestBodyPagesFollowTheBytes: the first page asks for bodyPageFirst
// objects; small bodies then come a full page at a time, bodies near the
// annotation cap bodyPageMin at a time, and a full list (limit 0, the
// pager's fallback) stays a full list.
func TestBodyPagesFollowTheBytes(t *testing.T) {
	size := 100
	var asked []int64
	list := func(_ context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		asked = append(asked, o.Limit)
		n := o.Limit
		if n == 0 {
			n = 3
		}
		l := &unstructured.UnstructuredList{}
		for range n {
			l.Items = append(l.Items, unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{"a": strings.Repeat("x", size)}},
				"data":     map[string]any{"k": strings.Repeat("y", size)},
			}})
		}
		return l, nil
	}
	fn := BodyPages(list, 500)
	page := func(limit int64) {
		t.Helper()
		if _, err := fn(context.Background(), metav1.ListOptions{Limit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	page(500)
	page(500)
	size = 256 << 10
	page(500)
	page(500)
	page(0)
	want := []int64{bodyPageFirst, 500, 500, bodyPageMin, 0}
	if len(asked) != len(want) {
		t.Fatalf("asked %v, want %v", asked, want)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("asked %v, want %v", asked, want)
		}
	}
	asked = nil
	small := BodyPages(list, 20)
	if _, err := small(context.Background(), metav1.ListOptions{Limit: 20}); err != nil || asked[0] != 20 {
		t.Fatalf("page size 20: asked %v, %v", asked, err)
	}
}
