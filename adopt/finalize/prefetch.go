package finalize

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Lister is a Client that can also list its resource in its namespace (a
// dynamic.ResourceInterface is one). With it, the Runner's tracking check
// reads a namespace's adopted objects with one paginated list instead of
// one GET each.
type Lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

const (
	// listAtLeast is how many of an Application's objects one resource
	// and namespace must hold before the check lists instead of GETting.
	listAtLeast = 16
	// listPageSize is the list's page size.
	listPageSize = 500
	// maxPrefetched bounds the listed objects kept for later Applications.
	maxPrefetched = 5000
)

// prefetch holds objects a list read for the tracking check, each handed
// out once: a read it gives may be older than a GET, which costs nothing
// but a conflict, since every patch tests the resourceVersion it was
// computed from.
type prefetch struct {
	mu     sync.Mutex
	listed map[string]bool                       // by resource and namespace
	want   map[string]map[string]bool            // the selection's names, by resource and namespace
	objs   map[string]*unstructured.Unstructured // by resource, namespace and name
}

func listKey(t Target) string { return t.GVR().String() + "\x00" + t.Namespace }

// fill lists, once per resource and namespace, where targets (one
// Application's) hold at least listAtLeast objects, and keeps the objects
// that are targets of the selection (this Application's and later ones').
// A list that fails is left to the GETs.
func (p *prefetch) fill(ctx context.Context, f *Finalizer, sel Selection, targets []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listed == nil {
		p.listed, p.want, p.objs = map[string]bool{}, map[string]map[string]bool{}, map[string]*unstructured.Unstructured{}
		for _, t := range sel.All() {
			k := listKey(t)
			if p.want[k] == nil {
				p.want[k] = map[string]bool{}
			}
			p.want[k][t.Name] = true
		}
	}
	count := map[string]int{}
	first := map[string]Target{}
	for _, t := range targets {
		k := listKey(t)
		if count[k] == 0 {
			first[k] = t
		}
		count[k]++
	}
	for k, n := range count {
		if n < listAtLeast || p.listed[k] {
			continue
		}
		p.listed[k] = true
		l, ok := f.Client(first[k]).(Lister)
		if !ok {
			continue
		}
		want := p.want[k]
		opts := metav1.ListOptions{Limit: listPageSize}
		for {
			page, err := l.List(ctx, opts)
			if err != nil {
				break
			}
			for i := range page.Items {
				if u := &page.Items[i]; want[u.GetName()] && len(p.objs) < maxPrefetched {
					p.objs[k+"\x00"+u.GetName()] = u
				}
			}
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
}

// take hands out t's listed read, once; nil when there is none.
func (p *prefetch) take(t Target) *unstructured.Unstructured {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := listKey(t) + "\x00" + t.Name
	u := p.objs[k]
	delete(p.objs, k)
	return u
}
