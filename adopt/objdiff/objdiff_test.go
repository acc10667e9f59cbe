package objdiff

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/argoapp"
)

type m = map[string]any
type l = []any

// spelt is fs as "op path" lines.
func spelt(fs []Field) string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Op)+" "+f.Path)
	}
	return strings.Join(out, ", ")
}

// TestRules: each rule of the package doc, as one pair of objects and the
// fields Diff reports for it.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b m
		want string
	}{
		{
			name: "identity, server state and tool annotations are not compared",
			a: m{"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": m{
				"name": "web", "namespace": "shop", "uid": "u", "resourceVersion": "9", "generation": int64(4), "selfLink": "/x",
				"creationTimestamp": "2024-01-01T00:00:00Z", "managedFields": l{m{"manager": "kubectl"}},
				"annotations": m{budget.LastAppliedKey: "{}", argoapp.AnnotationTrackingID: "a:apps/Deployment:shop/web", argoapp.AnnotationInstallationID: "i"},
			}, "status": m{"replicas": int64(3)}},
			b: m{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m{"name": "web", "creationTimestamp": nil}},
		},
		{
			name: "null, {} and [] are no field",
			a:    m{"metadata": m{"labels": m{}}, "spec": m{"args": l{}, "x": nil}},
			b:    m{"metadata": m{"annotations": m{}}, "data": nil},
		},
		{
			name: "numbers compare by value",
			a:    m{"spec": m{"replicas": int64(2), "ratio": 0.5}},
			b:    m{"spec": m{"replicas": 2, "ratio": float32(0.5)}},
		},
		{
			name: "labels and user annotations are compared, each way",
			a:    m{"metadata": m{"labels": m{"app": "web", "old": "x"}, "annotations": m{"note": "a"}}},
			b:    m{"metadata": m{"labels": m{"app": "api"}, "annotations": m{"note": "a", budget.LastAppliedKey: "{}"}, "finalizers": l{"f"}}},
			want: "add metadata.finalizers, replace metadata.labels.app, remove metadata.labels.old",
		},
		{
			name: "named lists match by name",
			a: m{"spec": m{"containers": l{
				m{"name": "main", "image": "img:1", "env": l{m{"name": "A", "value": "1"}}},
				m{"name": "side", "image": "s:1"},
			}}},
			b: m{"spec": m{"containers": l{
				m{"name": "main", "image": "img:2", "env": l{m{"name": "A", "value": "1"}, m{"name": "B", "value": "2"}}},
			}}},
			want: "replace spec.containers[name=main].image, add spec.containers[name=main].env[name=B], remove spec.containers[name=side]",
		},
		{
			name: "other lists item by item when their lengths agree, else whole",
			a:    m{"spec": m{"args": l{"a", "b"}, "ports": l{m{"port": int64(80)}}, "dup": l{m{"name": "x"}, m{"name": "x"}}}},
			b:    m{"spec": m{"args": l{"a", "c"}, "ports": l{m{"port": 80}, m{"port": 443}}, "dup": l{m{"name": "x", "v": 1}, m{"name": "x"}}}},
			want: "add spec.dup[0].v, replace spec.args[1], replace spec.ports",
		},
		{
			name: "a changed type replaces the field whole",
			a:    m{"spec": m{"x": m{"y": "z"}, "n": "1"}},
			b:    m{"spec": m{"x": "z", "n": 1}},
			want: "replace spec.n, replace spec.x",
		},
		{
			name: "a Secret's stringData is its data, encoded",
			a:    m{"apiVersion": "v1", "kind": "Secret", "data": m{"user": b64("admin"), "password": b64("old-value")}},
			b:    m{"apiVersion": "v1", "kind": "Secret", "data": m{"user": b64("admin")}, "stringData": m{"password": "new-value"}},
			want: "replace data.password",
		},
		{
			name: "stringData equal to data is no difference",
			a:    m{"apiVersion": "v1", "kind": "Secret", "data": m{"password": b64("same")}},
			b:    m{"apiVersion": "v1", "kind": "Secret", "stringData": m{"password": "same"}},
		},
		{
			name: "only a core Secret's stringData moves",
			a:    m{"apiVersion": "v1", "kind": "ConfigMap", "data": m{"password": b64("same")}},
			b:    m{"apiVersion": "v1", "kind": "ConfigMap", "stringData": m{"password": "same"}},
			want: "remove data, add stringData",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := spelt(Diff(c.a, c.b)); got != sortedWant(c.want) {
				t.Errorf("got  %s\nwant %s", got, sortedWant(c.want))
			}
		})
	}
}

// sortedWant orders "op path" items by path, as Diff does.
func sortedWant(s string) string {
	if s == "" {
		return ""
	}
	items := strings.Split(s, ", ")
	for i := 1; i < len(items); i++ {
		for j := i; j > 0 && path(items[j]) < path(items[j-1]); j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	return strings.Join(items, ", ")
}

func path(item string) string { _, p, _ := strings.Cut(item, " "); return p }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestValuesAndInputs: a field carries each side's value (nil where the
// side lacks it), and neither input is changed, not even a Secret's.
func TestValuesAndInputs(t *testing.T) {
	a := m{"apiVersion": "v1", "kind": "Secret", "metadata": m{"name": "s", "annotations": m{budget.LastAppliedKey: "{}"}},
		"data": m{"k": b64("1")}, "spec": m{"gone": "x", "n": int64(1)}}
	b := m{"apiVersion": "v1", "kind": "Secret", "metadata": m{"name": "s"},
		"stringData": m{"k": "2"}, "spec": m{"new": l{"y"}, "n": int64(2)}}
	ac, bc := deepCopy(a), deepCopy(b)
	got := Diff(a, b)
	want := []Field{
		{Path: "data.k", Op: Replace, A: b64("1"), B: b64("2")},
		{Path: "spec.gone", Op: Remove, A: "x"},
		{Path: "spec.n", Op: Replace, A: int64(1), B: int64(2)},
		{Path: "spec.new", Op: Add, B: l{"y"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(a, ac) || !reflect.DeepEqual(b, bc) {
		t.Errorf("inputs changed:\n%#v\n%#v", a, b)
	}
}

func deepCopy(v m) m {
	out := m{}
	for k, x := range v {
		switch y := x.(type) {
		case m:
			out[k] = deepCopy(y)
		case l:
			out[k] = append(l{}, y...)
		default:
			out[k] = x
		}
	}
	return out
}
