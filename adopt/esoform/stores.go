package esoform

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// ReadWrite is the capability a store needs: the push writes, the
// ExternalSecret reads back. The operator sets it in the store's status
// from its provider.
const ReadWrite = "ReadWrite"

// Candidate is a store seen for a namespace: whether it fits, and why
// (or why not), one clause.
type Candidate struct {
	Store
	Fits bool
	Why  string
}

// FindStores lists the stores that could take the Secrets of namespace:
// the SecretStores of namespace, then the ClusterSecretStores, each in
// name order. A store fits when its Ready condition is True and its
// status says ReadWrite, and, for a ClusterSecretStore, when its
// conditions admit namespace by name or regex (a namespaceSelector is
// not judged: such a store does not fit, saying so). No operator (its
// CRDs not served) or no permission to list is no store at all.
func FindStores(ctx context.Context, dyn dynamic.Interface, namespace string) ([]Candidate, error) {
	var out []Candidate
	ns, err := list(ctx, dyn.Resource(SecretStoreGVR).Namespace(namespace))
	if err != nil {
		return nil, err
	}
	for _, u := range ns {
		out = append(out, judge(u, KindSecretStore, namespace))
	}
	cl, err := list(ctx, dyn.Resource(ClusterSecretStoreGVR))
	if err != nil {
		return nil, err
	}
	for _, u := range cl {
		out = append(out, judge(u, KindClusterSecretStore, namespace))
	}
	return out, nil
}

func list(ctx context.Context, r dynamic.ResourceInterface) ([]unstructured.Unstructured, error) {
	l, err := r.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	items := l.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return items, nil
}

func judge(u unstructured.Unstructured, kind, namespace string) Candidate {
	c := Candidate{Store: Store{Kind: kind, Name: u.GetName()}}
	if kind == KindSecretStore {
		c.Namespace = u.GetNamespace()
	}
	ready, msg := condition(u.Object, "Ready")
	if ready != "True" {
		c.Why = fmt.Sprintf("%s is not Ready (%s)", c.Store, oneLine(msg))
		return c
	}
	if caps, _, _ := unstructured.NestedString(u.Object, "status", "capabilities"); caps != ReadWrite {
		c.Why = fmt.Sprintf("%s cannot take a push and read it back (capabilities %q, not %s)", c.Store, caps, ReadWrite)
		return c
	}
	if kind == KindClusterSecretStore {
		if why := admits(u, namespace); why != "" {
			c.Why = fmt.Sprintf("%s %s", c.Store, why)
			return c
		}
	}
	c.Fits = true
	c.Why = fmt.Sprintf("%s is Ready and %s", c.Store, ReadWrite)
	return c
}

// admits says why a ClusterSecretStore's conditions do not admit
// namespace ("" when they do, or when it has none).
func admits(u unstructured.Unstructured, namespace string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "spec", "conditions")
	if len(conds) == 0 {
		return ""
	}
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if _, ok := m["namespaceSelector"]; ok {
			return "admits namespaces by a namespaceSelector, which adopt does not judge; name the store in adopt.yaml (secrets.forms[].store) if it admits " + namespace
		}
		names, _, _ := unstructured.NestedStringSlice(m, "namespaces")
		if slices.Contains(names, namespace) {
			return ""
		}
		regexes, _, _ := unstructured.NestedStringSlice(m, "namespaceRegexes")
		for _, r := range regexes {
			if re, err := regexp.Compile(r); err == nil && re.MatchString(namespace) {
				return ""
			}
		}
	}
	return "does not admit namespace " + namespace
}

// condition is the status and message of the condition of type typ.
func condition(obj map[string]any, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			if r, _ := m["reason"].(string); r != "" {
				msg = r + ": " + msg
			}
			return s, msg
		}
	}
	return "", "no " + typ + " condition yet"
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Choose picks the store for namespace's Secrets from cs: the one named
// (a Store's String, from adopt.yaml), which must fit; else the one
// SecretStore of namespace that fits; else the one ClusterSecretStore
// that fits. It returns the store and why; none fitting is a zero Store
// and why not ("" when there is no store at all); several is an error
// asking to name one.
func Choose(cs []Candidate, named string) (Store, string, error) {
	if named != "" {
		for _, c := range cs {
			if c.String() == named || (c.Kind == KindSecretStore && named == KindSecretStore+" "+c.Name) {
				if !c.Fits {
					return Store{}, "", fmt.Errorf("adopt.yaml names %s, but %s", named, c.Why)
				}
				return c.Store, "the store adopt.yaml names: " + c.Why, nil
			}
		}
		return Store{}, "", fmt.Errorf("adopt.yaml names store %q, which is not among the stores that could serve this namespace", named)
	}
	for _, kind := range []string{KindSecretStore, KindClusterSecretStore} {
		var fit []Candidate
		for _, c := range cs {
			if c.Kind == kind && c.Fits {
				fit = append(fit, c)
			}
		}
		switch {
		case len(fit) == 1:
			return fit[0].Store, "the one " + kind + " that fits: " + fit[0].Why, nil
		case len(fit) > 1:
			var names []string
			for _, c := range fit {
				names = append(names, c.String())
			}
			return Store{}, "", fmt.Errorf("%d %ss fit (%s): name one in adopt.yaml (secrets.forms[].store, with form eso)", len(fit), kind, strings.Join(names, ", "))
		}
	}
	var why []string
	for _, c := range cs {
		why = append(why, c.Why)
	}
	return Store{}, strings.Join(why, "; "), nil
}
