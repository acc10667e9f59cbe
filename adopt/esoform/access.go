package esoform

import (
	"context"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Need is one permission Push needs in the Secret's namespace.
type Need struct{ Verb, Group, Resource string }

func (n Need) String() string {
	if n.Group == "" {
		return n.Verb + " " + n.Resource
	}
	return n.Verb + " " + n.Resource + "." + n.Group
}

// PushNeeds is what Push needs in the Secret's namespace: reading it, and
// creating, updating and deleting Secrets (the copy, the probe's); and
// getting, watching, creating and deleting PushSecrets and
// ExternalSecrets (the push, the probe).
func PushNeeds() []Need {
	out := []Need{{"get", "", "secrets"}, {"create", "", "secrets"}, {"update", "", "secrets"}, {"delete", "", "secrets"}}
	for _, r := range []string{PushSecretGVR.Resource, ExternalSecretGVR.Resource} {
		for _, v := range []string{"get", "watch", "create", "delete"} {
			out = append(out, Need{v, Group, r})
		}
	}
	return out
}

// MissingForPush asks the API server (SelfSubjectAccessReview) about each
// of PushNeeds in namespace and returns those not allowed. It writes
// nothing.
func MissingForPush(ctx context.Context, kube kubernetes.Interface, namespace string) ([]Need, error) {
	var out []Need
	for _, n := range PushNeeds() {
		r, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Verb: n.Verb, Group: n.Group, Resource: n.Resource, Namespace: namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("check permission to %s in %s: %w", n, namespace, err)
		}
		if !r.Status.Allowed {
			out = append(out, n)
		}
	}
	return out, nil
}
