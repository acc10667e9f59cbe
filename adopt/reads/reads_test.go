package reads

import (
	"errors"
	"reflect"
	"sort"
	"testing"
)

func TestChoose(t *testing.T) {
	spread := map[string]int{}
	for i := 0; i < 200; i++ {
		spread[string(rune('a'+i%26))+string(rune('a'+i/26))] = 4
	}
	for _, tc := range []struct {
		name  string
		want  map[string]int
		total int
		page  int
		need  bool
		out   Choice
	}{
		{"spread over many namespaces: the cluster in 2 pages, not 800 GETs", spread, 1000, 500, true, Choice{Cluster: true}},
		{"spread, total unknown: GETs", spread, -1, 500, true, Choice{}},
		{"spread in a huge cluster: 2,000 pages cost more than 800 GETs", spread, 1_000_000, 500, true, Choice{}},
		{"few namespaces hold many: one list each", map[string]int{"a": 400, "b": 40, "c": 3}, 100_000, 500, true, Choice{Namespaces: []string{"a", "b"}}},
		{"the same in a small cluster: one list of all", map[string]int{"a": 400, "b": 40, "c": 3}, 900, 500, true, Choice{Cluster: true}},
		{"two objects: GETs, no count", map[string]int{"a": 2}, -1, 500, false, Choice{}},
		{"one namespace listed: no count", map[string]int{"a": 20}, -1, 500, false, Choice{Namespaces: []string{"a"}}},
		{"a tie keeps the per-namespace reads", map[string]int{"a": 3}, 1500, 500, true, Choice{}},
		{"smaller pages", map[string]int{"a": 3, "b": 3}, 250, 100, true, Choice{Cluster: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedTotal(tc.want, tc.page); got != tc.need {
				t.Errorf("NeedTotal = %v, want %v", got, tc.need)
			}
			got := Choose(tc.want, tc.total, tc.page)
			sort.Strings(got.Namespaces)
			if !reflect.DeepEqual(got, tc.out) {
				t.Errorf("Choose = %+v, want %+v", got, tc.out)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	counted := 0
	count := func() (int, error) { counted++; return 900, nil }
	if c := Decide(map[string]int{"a": 2}, 500, count); c.Cluster || counted != 0 {
		t.Fatalf("two objects: %+v after %d counts, want GETs and no count", c, counted)
	}
	if c := Decide(map[string]int{"b": 3, "a": 3}, 500, count); !c.Cluster || counted != 1 || !reflect.DeepEqual(c.Lists(), []string{""}) {
		t.Fatalf("six objects in a cluster of 900: %+v after %d counts, want one list of the cluster", c, counted)
	}
	failed := func() (int, error) { return 0, errors.New("forbidden") }
	if c := Decide(map[string]int{"b": 30, "a": 30, "c": 1}, 500, failed); c.Cluster || !reflect.DeepEqual(c.Lists(), []string{"a", "b"}) {
		t.Fatalf("a failed count: %+v, want lists of a and b", c)
	}
}
