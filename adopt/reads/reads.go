// Package reads is the one rule for how adopt reads many live objects of
// one resource: one paginated list over the whole cluster, one list per
// namespace that holds many of them, or one GET per object, whichever
// takes the fewest requests, judged from counts alone. apply's export,
// finalize's tracking check and plan's reads of bodies for drift follow
// it, and so do status's reads of metadata. It makes no request itself.
package reads

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListAtLeast is how many of the objects to read one namespace must hold
// before it is listed rather than read object by object: fewer GETs than
// that cost fewer requests than a list of a namespace that may hold
// thousands of other objects of the resource.
const ListAtLeast = 16

// Choice is how to read the objects of one resource.
type Choice struct {
	// Cluster is one paginated list over the whole cluster.
	Cluster bool
	// Namespaces, when Cluster is false, are the namespaces to list; the
	// objects of the others are read one GET each.
	Namespaces []string
}

// Choose decides from want, how many objects to read in each namespace
// ("" for a cluster-scoped resource), and total, how many objects of the
// resource the whole cluster holds (negative when unknown), with page
// objects a list page: one list of the cluster when its pages are fewer
// requests than lists per namespace and GETs, else the latter. A
// namespace is listed when it holds at least ListAtLeast objects to read
// (its list is costed as its wanted objects' pages); the others are read
// by GET. Namespaces come back in no particular order (Lists sorts them).
func Choose(want map[string]int, total, page int) Choice {
	var c Choice
	if total >= 0 && pages(total, page) < perNamespace(want, page) {
		return Choice{Cluster: true}
	}
	for ns, n := range want {
		if n >= ListAtLeast {
			c.Namespaces = append(c.Namespaces, ns)
		}
	}
	return c
}

// Decide is Choose with the total learned from count (a list of one item
// of the whole cluster: export.Count), which it calls only when the total
// could change the answer (NeedTotal); a nil count, or one that fails,
// leaves the total unknown.
func Decide(want map[string]int, page int, count func() (int, error)) Choice {
	total := -1
	if count != nil && NeedTotal(want, page) {
		if n, err := count(); err == nil {
			total = n
		}
	}
	return Choose(want, total, page)
}

// Lists are the namespaces to list, sorted: "" alone for the whole
// cluster.
func (c Choice) Lists() []string {
	if c.Cluster {
		return []string{""}
	}
	ns := append([]string(nil), c.Namespaces...)
	sort.Strings(ns)
	return ns
}

// perNamespace is how many requests reading want takes without a list of
// the whole cluster: the pages of each namespace listed, one GET for every
// other object.
func perNamespace(want map[string]int, page int) int {
	r := 0
	for _, n := range want {
		if n >= ListAtLeast {
			r += pages(n, page)
		} else {
			r += n
		}
	}
	return r
}

// NeedTotal reports whether the cluster's total could change Choose's
// answer: it costs a request to learn (a list of one item), and a list of
// the whole cluster at least one more, so it is worth it only when reading
// want per namespace takes more than two.
func NeedTotal(want map[string]int, page int) bool { return perNamespace(want, page) > 2 }

// pages is how many list requests of page objects n objects take (one for
// none).
func pages(n, page int) int { return max(1, (n+page-1)/page) }

// Total is how many objects a list holds in all, from its first page (a
// list with a limit) of items objects: those and the API server's
// remainingItemCount, or -1 when there are more and the server does not
// tell how many.
func Total(items int, page metav1.ListInterface) int {
	switch {
	case page.GetContinue() == "":
		return items
	case page.GetRemainingItemCount() != nil:
		return items + int(*page.GetRemainingItemCount())
	}
	return -1
}
