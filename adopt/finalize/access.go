package finalize

import (
	"context"
	"fmt"
	"sort"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Access is one permission finalize needs.
type Access struct {
	Verb, Group, Resource, Namespace string
}

func (a Access) String() string {
	gr := a.Resource
	if a.Group != "" {
		gr += "." + a.Group
	}
	if a.Namespace == "" {
		return a.Verb + " " + gr + " (cluster-wide)"
	}
	return a.Verb + " " + gr + " in " + a.Namespace
}

// Needs lists what finalizing targets requires: get and, unless dryRun,
// patch of each adopted resource in its namespace.
func Needs(targets []Target, dryRun bool) []Access {
	seen := map[Access]bool{}
	var out []Access
	add := func(a Access) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, t := range targets {
		add(Access{Verb: "get", Group: t.Group, Resource: t.Resource, Namespace: t.Namespace})
		if !dryRun {
			add(Access{Verb: "patch", Group: t.Group, Resource: t.Resource, Namespace: t.Namespace})
		}
	}
	return out
}

// Missing asks the API server (SelfSubjectAccessReview) about each need and
// returns those not allowed, sorted. It writes nothing to any object.
func Missing(ctx context.Context, kube kubernetes.Interface, needs []Access) ([]Access, error) {
	var out []Access
	for _, n := range needs {
		r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Verb: n.Verb, Group: n.Group, Resource: n.Resource, Namespace: n.Namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("check permission to %s: %w", n, err)
		}
		if !r.Status.Allowed {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}
