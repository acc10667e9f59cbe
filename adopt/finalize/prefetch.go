package finalize

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/reads"
)

// Lister is a Client that can also list its resource in its namespace, or
// in the whole cluster for the namespace "" (a dynamic.ResourceInterface
// is one). With it, the Runner's tracking check reads adopted objects with
// paginated lists instead of one GET each, as reads.Choose says.
type Lister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

const (
	// listPageSize is the list's page size.
	listPageSize = 500
	// maxPrefetched bounds the listed objects kept for later Applications.
	maxPrefetched = 5000
)

// prefetch holds objects a list read for the tracking check, each handed
// out once: a read it gives may be older than a GET, which costs nothing
// but a conflict, since every patch tests the resourceVersion it was
// computed from, and one that does not carry its tracking yet is read
// again by GET.
type prefetch struct {
	mu     sync.Mutex
	listed map[string]bool                                // by resource and namespace ("" for the whole cluster)
	want   map[string]map[string]bool                     // the selection's names, by resource and namespace
	counts map[schema.GroupVersionResource]map[string]int // the selection's objects, by resource and namespace
	choice map[schema.GroupVersionResource]*reads.Choice
	objs   map[string]*unstructured.Unstructured // by resource, namespace and name
}

func listKey(gvr schema.GroupVersionResource, ns string) string { return gvr.String() + "\x00" + ns }

// fill lists what reads.Choose says for the resources of targets (one
// Application's), deciding once per resource from the whole selection's
// counts: the whole cluster once, or each namespace of targets that the
// selection holds at least reads.ListAtLeast objects of, once. It keeps
// the objects that are targets of the selection (this Application's and
// later ones'). A list that fails is left to the GETs.
func (p *prefetch) fill(ctx context.Context, f *Finalizer, sel Selection, targets []Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listed == nil {
		p.listed, p.want, p.objs = map[string]bool{}, map[string]map[string]bool{}, map[string]*unstructured.Unstructured{}
		p.counts, p.choice = map[schema.GroupVersionResource]map[string]int{}, map[schema.GroupVersionResource]*reads.Choice{}
		for _, t := range sel.All() {
			k := listKey(t.GVR(), t.Namespace)
			if p.want[k] == nil {
				p.want[k] = map[string]bool{}
			}
			p.want[k][t.Name] = true
			if p.counts[t.GVR()] == nil {
				p.counts[t.GVR()] = map[string]int{}
			}
			p.counts[t.GVR()][t.Namespace]++
		}
	}
	namespaces := map[schema.GroupVersionResource]map[string]bool{}
	for _, t := range targets {
		if namespaces[t.GVR()] == nil {
			namespaces[t.GVR()] = map[string]bool{}
		}
		namespaces[t.GVR()][t.Namespace] = true
	}
	for gvr, in := range namespaces {
		for _, ns := range p.choose(ctx, f, gvr).Lists() {
			if ns == "" || in[ns] {
				p.list(ctx, f, gvr, ns)
			}
		}
	}
}

// choose is reads.Choose for gvr over the whole selection, decided once.
func (p *prefetch) choose(ctx context.Context, f *Finalizer, gvr schema.GroupVersionResource) reads.Choice {
	if c := p.choice[gvr]; c != nil {
		return *c
	}
	count := func() (int, error) {
		l, ok := f.Client(clusterTarget(gvr)).(Lister)
		if !ok {
			return -1, nil
		}
		page, err := l.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return -1, err
		}
		return reads.Total(len(page.Items), page), nil
	}
	c := reads.Decide(p.counts[gvr], listPageSize, count)
	p.choice[gvr] = &c
	return c
}

// clusterTarget is a Target whose Client reads gvr in the whole cluster.
func clusterTarget(gvr schema.GroupVersionResource) Target {
	return Target{Ref: objref.Ref{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}}
}

// list reads gvr in ns ("" for the whole cluster) once, keeping the
// selection's objects, at most maxPrefetched in all.
func (p *prefetch) list(ctx context.Context, f *Finalizer, gvr schema.GroupVersionResource, ns string) {
	k := listKey(gvr, ns)
	if p.listed[k] || p.listed[listKey(gvr, "")] {
		return
	}
	p.listed[k] = true
	t := clusterTarget(gvr)
	t.Namespace = ns
	l, ok := f.Client(t).(Lister)
	if !ok {
		return
	}
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		page, err := l.List(ctx, opts)
		if err != nil {
			return
		}
		for _, u := range page.Items {
			// A copy, so that a kept object does not keep its page.
			if k := listKey(gvr, u.GetNamespace()); p.want[k][u.GetName()] && len(p.objs) < maxPrefetched {
				p.objs[k+"\x00"+u.GetName()] = &u
			}
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return
		}
	}
}

// take hands out t's listed read, once; nil when there is none.
func (p *prefetch) take(t Target) *unstructured.Unstructured {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := listKey(t.GVR(), t.Namespace) + "\x00" + t.Name
	u := p.objs[k]
	delete(p.objs, k)
	return u
}
