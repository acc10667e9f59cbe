package discover

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/reads"
	"golang.org/x/sync/errgroup"
)

// Get reads one object's full body. The caller must not keep a Secret's
// values beyond what it measures.
func Get(ctx context.Context, c Clients, t Type, namespace, name string) (map[string]any, error) {
	var body map[string]any
	err := retry.OnError(retry.DefaultBackoff, Transient, func() error {
		u, err := c.Dynamic.Resource(t.GVR()).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		body = u.Object
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", t.String(), joinName(namespace, name), err)
	}
	return body, nil
}

// Lister reads many objects at once for Each: List hands every object of
// one resource in one namespace ("" for all namespaces) to fn, page by
// page (export.List), and Page is how many objects one of its pages holds
// at most (export.ListPage).
type Lister struct {
	List func(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fn func(*unstructured.Unstructured) error) error
	Page func(gvr schema.GroupVersionResource) int
}

// Each reads the body of every object in objs for which want is true, and
// hands each body to fn (called under a lock, one at a time). objs are
// every object Collect found in scope (its Options.Namespaces, none for
// the whole cluster), so they count each type's objects. With l's List set,
// each type's wanted objects are read as reads.Choose says from those
// counts: one list of the whole cluster (no scope), lists of the
// namespaces holding many of them, and the others (and any a list did not
// return, or whose list failed) with one GET each, at most workers at
// once. A failed read is handed to fn as an error; it does not stop the
// others.
func Each(ctx context.Context, c Clients, objs []Object, scope []string, l Lister, workers int, want func(*Object) bool, fn func(o *Object, body map[string]any, err error)) {
	if workers <= 0 {
		workers = 4
	}
	var mu sync.Mutex
	done := map[*Object]bool{}
	if l.List != nil {
		total := map[Type]int{}
		wanted := map[Type]map[string]*Object{} // by namespace and name
		for i := range objs {
			o := &objs[i]
			total[o.Type]++
			if want(o) {
				if wanted[o.Type] == nil {
					wanted[o.Type] = map[string]*Object{}
				}
				wanted[o.Type][joinName(o.Namespace, o.Name)] = o
			}
		}
		for t, w := range wanted {
			counts := map[string]int{}
			for _, o := range w {
				counts[o.Namespace]++
			}
			n := -1 // a list of the cluster is not in scope: its size is not known
			if len(scope) == 0 || !t.Namespaced {
				n = total[t]
			}
			for _, ns := range reads.Choose(counts, n, l.Page(t.GVR())).Lists() {
				// A failed list leaves what it did not read to GETs.
				_ = l.List(ctx, t.GVR(), ns, func(u *unstructured.Unstructured) error {
					if o := w[joinName(u.GetNamespace(), u.GetName())]; o != nil && !done[o] {
						done[o] = true
						fn(o, u.Object, nil)
					}
					return nil
				})
			}
		}
	}
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range objs {
		o := &objs[i]
		if done[o] || !want(o) {
			continue
		}
		g.Go(func() error {
			body, err := Get(ctx, c, o.Type, o.Namespace, o.Name)
			mu.Lock()
			defer mu.Unlock()
			fn(o, body, err)
			return nil // fn has the error
		})
	}
	_ = g.Wait()
}

// serverFields are metadata fields the API server owns; a manifest written
// from the live object would not carry them.
var serverFields = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink", "ownerReferences", "finalizers"}

// AppliedBytes estimates, from a live body, the size of the
// last-applied-configuration value that the next client-side `kubectl
// apply` of this object would write: the object without status, server
// metadata and the annotation itself, as JSON with one trailing newline.
func AppliedBytes(body map[string]any) int {
	c := make(map[string]any, len(body))
	for k, v := range body {
		if k != "status" {
			c[k] = v
		}
	}
	if m, ok := body["metadata"].(map[string]any); ok {
		meta := make(map[string]any, len(m))
		for k, v := range m {
			meta[k] = v
		}
		for _, f := range serverFields {
			delete(meta, f)
		}
		c["metadata"] = meta
	}
	b, err := budget.AppliedConfig(c, "")
	if err != nil {
		return 0
	}
	return len(b)
}

func joinName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
