package argoapp

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Defined is an Application manifest in Git and where it is ("file:line").
type Defined struct {
	Object map[string]any
	Where  string
	// AppSet is the ApplicationSet (namespace/name) that generates it,
	// "" for a manifest in Git.
	AppSet string
	// AppSetInGit is where in Git that ApplicationSet is defined when it
	// is not in the cluster yet ("" when it is, or for no ApplicationSet).
	AppSetInGit string
}

// AddPending adds to Specs the Applications defined in Git that are not
// in the cluster yet and deploy where the listed ones were chosen to (the
// Here of ListApplicationsTo), each with Pending set to where it is
// defined: a root Application or a `kubectl apply` still has to create
// it. One without a namespace is in argoNS, where both would put it. They
// are not Applications for Has (an object tracked by one is still stale).
// It does nothing when the Applications could not be listed. It returns
// how many it added.
func (a *Applications) AddPending(defs []Defined, argoNS string) int {
	if !a.Installed || !a.Verified {
		return 0
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Where < defs[j].Where })
	n, seen := 0, map[string]bool{}
	for _, s := range a.Specs {
		seen[s.Key()] = true
	}
	for _, d := range defs {
		u := &unstructured.Unstructured{Object: d.Object}
		if u.GetNamespace() == "" {
			u = u.DeepCopy()
			u.SetNamespace(argoNS)
		}
		key := u.GetNamespace() + "/" + u.GetName()
		if u.GetName() == "" || a.Has(key) || a.elsewhere[key] != "" || seen[key] {
			continue
		}
		server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "name")
		if a.here != nil && !a.here(server, name) {
			continue
		}
		s := specOf(u)
		s.Sync, s.Pending, s.AppSet, s.AppSetInGit = "", d.Where, d.AppSet, d.AppSetInGit
		a.Specs = append(a.Specs, s)
		seen[key] = true
		n++
	}
	if n > 0 {
		a.Note += fmt.Sprintf("; %d more in Git, not in the cluster yet", n)
	}
	return n
}
