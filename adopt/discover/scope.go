package discover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// ErrNoNamespace is wrapped by CheckNamespaces' error when a namespace of
// the scope does not exist: bad input, not a failed scan.
var ErrNoNamespace = errors.New("namespace not found")

// ParseNamespaces reads -n/--namespace: one namespace or several separated
// by commas, each a valid namespace name; sorted, without repeats. It is
// the one parser of the scope every verb takes.
func ParseNamespaces(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			if n == "" {
				return nil, fmt.Errorf("-n %q names an empty namespace: give one namespace or several separated by commas (-n web,payments)", s)
			}
			return nil, fmt.Errorf("-n: %q is not a namespace name: %s", n, strings.Join(errs, "; "))
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// CheckNamespaces reads each namespace of the scope: one that does not
// exist is an error wrapping ErrNoNamespace and naming them all, since
// listing it would find nothing and say nothing. A namespace the
// credentials may not get (403) cannot be checked: it is returned in
// unchecked, not taken for missing. Any other failure is returned as it
// is.
func CheckNamespaces(ctx context.Context, kube kubernetes.Interface, names []string) (unchecked []string, err error) {
	var missing []string
	for _, n := range names {
		_, err := kube.CoreV1().Namespaces().Get(ctx, n, metav1.GetOptions{})
		switch {
		case err == nil:
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case apierrors.IsForbidden(err):
			unchecked = append(unchecked, n)
		default:
			return nil, err
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: -n names %s, which the cluster does not have: check the names with kubectl get namespaces", ErrNoNamespace, quoteAll(missing))
	}
	return unchecked, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("namespace %q", n)
	}
	return strings.Join(q, " and ")
}
