package overlay

import (
	"bytes"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/adopt-dev/adopt/adopt/export"
)

// common is what every value of vs shares: the value itself when all are
// equal; of maps, the keys every map holds with what their values share;
// of lists of named items, the items every list holds (in an order every
// list keeps), each as what its copies share. ok is false when nothing is
// shared: the value is left out of the base.
func common(vs []any) (any, bool) {
	if allEqual(vs) {
		return vs[0], true
	}
	if ms, ok := allMaps(vs); ok {
		out := map[string]any{}
		for k := range ms[0] {
			kv := make([]any, 0, len(ms))
			for _, m := range ms {
				v, ok := m[k]
				if !ok {
					break
				}
				kv = append(kv, v)
			}
			if len(kv) < len(ms) {
				continue
			}
			if c, ok := common(kv); ok {
				out[k] = c
			}
		}
		return out, true
	}
	ls, ok := allNamed(vs)
	if !ok {
		return nil, false
	}
	names := commonNames(ls)
	if len(names) == 0 {
		return nil, false
	}
	out := make([]any, 0, len(names))
	for _, n := range names {
		items := make([]any, len(ls))
		for i, l := range ls {
			items[i] = l[indexOf(l, n)]
		}
		c, _ := common(items) // maps with one name: never nothing
		out = append(out, c)
	}
	return out, true
}

func allEqual(vs []any) bool {
	for _, v := range vs[1:] {
		if !reflect.DeepEqual(v, vs[0]) {
			return false
		}
	}
	return true
}

func allMaps(vs []any) ([]map[string]any, bool) {
	out := make([]map[string]any, len(vs))
	for i, v := range vs {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		out[i] = m
	}
	return out, true
}

// named reports whether v is a list of named items: every item a map
// with a string "name", each name once.
func named(v any) ([]any, bool) {
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	seen := map[string]bool{}
	for _, it := range l {
		n, ok := nameOf(it)
		if !ok || seen[n] {
			return nil, false
		}
		seen[n] = true
	}
	return l, true
}

func nameOf(item any) (string, bool) {
	m, ok := item.(map[string]any)
	if !ok {
		return "", false
	}
	n, ok := m["name"].(string)
	return n, ok
}

func allNamed(vs []any) ([][]any, bool) {
	out := make([][]any, len(vs))
	for i, v := range vs {
		l, ok := named(v)
		if !ok {
			return nil, false
		}
		out[i] = l
	}
	return out, true
}

func indexOf(l []any, name string) int {
	for i, it := range l {
		if n, _ := nameOf(it); n == name {
			return i
		}
	}
	return -1
}

// commonNames are the names of the first list that every list holds, in
// its order, when every list holds them in that order; else none.
func commonNames(ls [][]any) []string {
	var names []string
	for _, it := range ls[0] {
		n, _ := nameOf(it)
		in := true
		for _, l := range ls[1:] {
			in = in && indexOf(l, n) >= 0
		}
		if in {
			names = append(names, n)
		}
	}
	for _, l := range ls[1:] {
		if !inOrder(l, names) {
			return nil
		}
	}
	return names
}

// inOrder reports whether l holds every name of names, in that order.
func inOrder(l []any, names []string) bool {
	last := -1
	for _, n := range names {
		i := indexOf(l, n)
		if i <= last {
			return false
		}
		last = i
	}
	return true
}

// itemsOf are the names of a named list's items.
func itemsOf(l []any) []string {
	out := make([]string, len(l))
	for i, it := range l {
		out[i], _ = nameOf(it)
	}
	return out
}

// byName reports whether base and target are named lists and base's
// items are all in target, in base's order: target is base with items
// changed and added, which both patch forms express item by item.
func byName(base, target any) ([]any, []any, bool) {
	b, ok := named(base)
	if !ok {
		return nil, nil, false
	}
	t, ok := named(target)
	if !ok {
		return nil, nil, false
	}
	return b, t, inOrder(t, itemsOf(b))
}

// strategicMerge is the strategic-merge patch from base to target (they
// differ): of maps, the keys target adds or changes (and null for a key
// it drops); of named lists, the items it changes (with their name) or
// adds; anything else, target's value.
func strategicMerge(base, target any) any {
	if bm, ok := base.(map[string]any); ok {
		if tm, ok := target.(map[string]any); ok {
			out := map[string]any{}
			for k, tv := range tm {
				bv, in := bm[k]
				switch {
				case !in:
					out[k] = tv
				case !reflect.DeepEqual(bv, tv):
					out[k] = strategicMerge(bv, tv)
				}
			}
			for k := range bm {
				if _, in := tm[k]; !in {
					out[k] = nil
				}
			}
			return out
		}
	}
	if b, t, ok := byName(base, target); ok {
		var out []any
		for _, it := range t {
			n, _ := nameOf(it)
			i := indexOf(b, n)
			switch {
			case i < 0:
				out = append(out, it)
			case !reflect.DeepEqual(b[i], it):
				m := strategicMerge(b[i], it).(map[string]any)
				m["name"] = n
				out = append(out, m)
			}
		}
		return out
	}
	return target
}

// strategicMergeDoc is the patch file of target: its identity and what
// it changes of base.
func strategicMergeDoc(base, target map[string]any) map[string]any {
	p := strategicMerge(base, target).(map[string]any)
	p["apiVersion"], p["kind"] = target["apiVersion"], target["kind"]
	md, _ := p["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	tmd, _ := target["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace"} {
		if v, ok := tmd[k]; ok {
			md[k] = v
		}
	}
	p["metadata"] = md
	return p
}

// jsonOps are the RFC 6902 operations that turn base into target: of
// maps, add, remove or recurse per key (in key order); of named lists,
// recurse into each item base holds and add each it does not, at its
// index in target; anything else, a replace.
func jsonOps(ptr string, base, target any, ops []map[string]any) []map[string]any {
	if reflect.DeepEqual(base, target) {
		return ops
	}
	if bm, ok := base.(map[string]any); ok {
		if tm, ok := target.(map[string]any); ok {
			keys := make([]string, 0, len(bm)+len(tm))
			for k := range bm {
				keys = append(keys, k)
			}
			for k := range tm {
				if _, in := bm[k]; !in {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := ptr + "/" + escape(k)
				bv, inB := bm[k]
				tv, inT := tm[k]
				switch {
				case !inT:
					ops = append(ops, map[string]any{"op": "remove", "path": p})
				case !inB:
					ops = append(ops, map[string]any{"op": "add", "path": p, "value": tv})
				default:
					ops = jsonOps(p, bv, tv, ops)
				}
			}
			return ops
		}
	}
	if b, t, ok := byName(base, target); ok {
		for i, it := range t {
			n, _ := nameOf(it)
			p := ptr + "/" + strconv.Itoa(i)
			if j := indexOf(b, n); j >= 0 {
				ops = jsonOps(p, b[j], it, ops)
			} else {
				ops = append(ops, map[string]any{"op": "add", "path": p, "value": it})
			}
		}
		return ops
	}
	return append(ops, map[string]any{"op": "replace", "path": ptr, "value": target})
}

// escape is a JSON pointer's reference token (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// pair is one object of a cluster that differs from its base.
type pair struct{ base, o *object }

// patch is the form chosen for one pair, and its file.
type patch struct {
	form Form
	data []byte
}

// chooseAll chooses each pair's patch: the strategic-merge patch when
// kustomize renders it to the cluster's object exactly, else the JSON
// 6902 patch when it does, else a ProofError naming the object and where
// it differs. Each form is tried for all pairs in one build (a patch
// changes only its own object); a build that fails tries them one by
// one.
func chooseAll(ps []pair) ([]patch, error) {
	out := make([]patch, len(ps))
	todo := make([]int, len(ps))
	for k := range ps {
		todo[k] = k
	}
	for _, form := range []Form{StrategicMerge, JSON6902} {
		cands := map[int][]byte{}
		for _, k := range todo {
			if b, err := patchOf(form, ps[k]); err == nil {
				cands[k] = b
			}
		}
		exact, err := trial(ps, cands, form)
		if err != nil { // one patch breaks the build: try each alone
			exact = map[int]bool{}
			for k, b := range cands {
				one, err := trial(ps, map[int][]byte{k: b}, form)
				exact[k] = err == nil && one[k]
			}
		}
		var left []int
		for _, k := range todo {
			if exact[k] {
				out[k] = patch{form, cands[k]}
			} else {
				left = append(left, k)
			}
		}
		todo = left
	}
	if len(todo) > 0 {
		d := ps[todo[0]]
		got, err := tryOne(d, JSON6902)
		if err != nil {
			return nil, &ProofError{Object: d.o.ref, Why: "kustomize cannot build its patch: " + oneLine(err.Error())}
		}
		return nil, &ProofError{Object: d.o.ref, Why: "neither a strategic-merge nor a JSON 6902 patch renders to it", Path: firstDiff("", d.o.m, got)}
	}
	return out, nil
}

// patchOf is the patch file of one pair in form.
func patchOf(form Form, d pair) ([]byte, error) {
	if form == StrategicMerge {
		return export.Marshal(strategicMergeDoc(d.base.m, d.o.m))
	}
	return marshal(jsonOps("", d.base.m, d.o.m, nil)), nil
}

// trial builds the base objects of ps with the candidate patches cands
// (by pair) and reports which render to their cluster's object exactly.
func trial(ps []pair, cands map[int][]byte, form Form) (map[int]bool, error) {
	files := map[string][]byte{}
	var resources []string
	var patches []patchEntry
	for k, b := range cands {
		d := ps[k]
		base, err := export.Marshal(d.base.m)
		if err != nil {
			return nil, err
		}
		files["t/"+d.o.file], files["t/patches/"+d.o.file] = base, b
		resources = append(resources, d.o.file)
		pe := patchEntry{Path: "patches/" + d.o.file}
		if form == JSON6902 {
			pe.Target = target(d.o.ref)
		}
		patches = append(patches, pe)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	sort.Strings(resources)
	sort.Slice(patches, func(i, j int) bool { return patches[i].Path < patches[j].Path })
	files["t/"+Kustomization] = kustomization(resources, patches)
	got, _, err := render(files, "t")
	if err != nil {
		return nil, err
	}
	exact := map[int]bool{}
	for k := range cands {
		d := ps[k]
		g := got[d.o.ref]
		exact[k] = g != nil && bytes.Equal(g.norm, d.o.norm)
	}
	return exact, nil
}

// tryOne renders one pair's patch in form alone: the object it gives.
func tryOne(d pair, form Form) (map[string]any, error) {
	b, err := patchOf(form, d)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	base, err := export.Marshal(d.base.m)
	if err != nil {
		return nil, err
	}
	files["t/obj.yaml"], files["t/patch.yaml"] = base, b
	pe := patchEntry{Path: "patch.yaml"}
	if form == JSON6902 {
		pe.Target = target(d.o.ref)
	}
	files["t/"+Kustomization] = kustomization([]string{"obj.yaml"}, []patchEntry{pe})
	got, _, err := render(files, "t")
	if err != nil {
		return nil, err
	}
	if g := got[d.o.ref]; g != nil {
		return g.m, nil
	}
	return nil, nil
}

// firstDiff is the path of the first field where want and got differ, as
// .spec.containers[0].image ("" when they are equal).
func firstDiff(at string, want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	wm, ok1 := want.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if ok1 && ok2 {
		keys := make([]string, 0, len(wm)+len(gm))
		for k := range wm {
			keys = append(keys, k)
		}
		for k := range gm {
			if _, in := wm[k]; !in {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := at + "." + k
			if strings.ContainsAny(k, ".[]") {
				p = at + "[" + strconv.Quote(k) + "]"
			}
			if d := firstDiff(p, wm[k], gm[k]); d != "" {
				return d
			}
		}
	}
	wl, ok1 := want.([]any)
	gl, ok2 := got.([]any)
	if ok1 && ok2 && len(wl) == len(gl) {
		for i := range wl {
			if d := firstDiff(at+"["+strconv.Itoa(i)+"]", wl[i], gl[i]); d != "" {
				return d
			}
		}
	}
	if at == "" {
		return "."
	}
	return at
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
