package finalize

import (
	"context"
	"fmt"
	"sort"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/argoapp"
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

// RunNeeds lists what a finalize run needs: the objects' get and patch
// (Needs), and in Kubernetes mode get of the Applications in argoNS, and
// patch too when it starts syncs. Undo needs no Application.
func RunNeeds(targets []Target, argoNS string, dryRun, undo, apiMode, sync bool) []Access {
	needs := Needs(targets, dryRun)
	if undo || apiMode {
		return needs
	}
	g, r := argoapp.ApplicationGVR.Group, argoapp.ApplicationGVR.Resource
	needs = append(needs, Access{Verb: "get", Group: g, Resource: r, Namespace: argoNS})
	if sync && !dryRun {
		needs = append(needs, Access{Verb: "patch", Group: g, Resource: r, Namespace: argoNS})
	}
	return needs
}

// OnlyApplications reports whether every missing permission is on
// Argo CD's Application resources (which API mode does without).
func OnlyApplications(missing []Access) bool {
	for _, a := range missing {
		if a.Group != argoapp.ApplicationGVR.Group || a.Resource != argoapp.ApplicationGVR.Resource {
			return false
		}
	}
	return len(missing) > 0
}

// SealedNeeds lists what the Sealed Secrets takeover of ts needs beyond
// the Secrets' get and patch (which Needs lists, the managed mark being a
// patch): get, list and watch of the SealedSecrets of each namespace, by
// which Sealer.Prove waits for the controller's unseal (sealed.WaitTakeover
// lists and watches; a refusal is read with get). A dry run and an undo
// read no SealedSecret.
func SealedNeeds(ts []SealedTarget, dryRun, undo bool) []Access {
	if dryRun || undo {
		return nil
	}
	seen := map[string]bool{}
	var out []Access
	for _, t := range ts {
		if seen[t.Namespace] {
			continue
		}
		seen[t.Namespace] = true
		for _, verb := range []string{"get", "list", "watch"} {
			out = append(out, Access{Verb: verb, Group: sealed.Group, Resource: sealed.Resource, Namespace: t.Namespace})
		}
	}
	return out
}

// accessQuery is what a run will do, and where: the objects are read and
// patched on Workload; the Applications are read (and synced) on Hub, or
// on Workload when Hub is nil, or through argocd-server when API is set.
// ExplainWorkload and ExplainHub word an error of that cluster.
type accessQuery struct {
	Workload, Hub               kubernetes.Interface
	ExplainWorkload, ExplainHub func(error) error
	Targets                     []Target
	// Records are what retiring Helm release records needs on Workload
	// (RetireNeeds), when asked for; Sealed what the Sealed Secrets
	// takeover needs there (SealedNeeds).
	Records, Sealed         []Access
	Namespace               string
	DryRun, Undo, API, Sync bool
}

// missingAccess asks each cluster's SelfSubjectAccessReview about what q
// will do there and returns what is denied: the hub's first, then the
// workload's, each sorted.
func missingAccess(ctx context.Context, q accessQuery) ([]Access, error) {
	needs := RunNeeds(q.Targets, q.Namespace, q.DryRun, q.Undo, q.API, q.Sync)
	var missing []Access
	if q.Hub != nil {
		onHub, err := Missing(ctx, q.Hub, RunNeeds(nil, q.Namespace, q.DryRun, q.Undo, q.API, q.Sync))
		if err != nil {
			return nil, q.ExplainHub(err)
		}
		missing, needs = onHub, Needs(q.Targets, q.DryRun)
	}
	here, err := Missing(ctx, q.Workload, append(append(needs, q.Records...), q.Sealed...))
	if err != nil {
		return nil, q.ExplainWorkload(err)
	}
	return append(missing, here...), nil
}

// DeniedError says which permissions are missing, that nothing changed,
// and what to do.
func DeniedError(missing []Access) error {
	m := make([]string, len(missing))
	for i, a := range missing {
		m[i] = a.String()
	}
	hint := ""
	if OnlyApplications(missing) {
		hint = ", or use Argo CD API mode (--argocd-server and --argocd-token)"
	}
	for _, a := range missing {
		if a.Group == sealed.Group && a.Resource == sealed.Resource {
			hint += "; the Sealed Secrets takeover reads the SealedSecrets it waits for (docs/secrets.md, What the credential needs)"
			break
		}
	}
	return fmt.Errorf("missing permissions, nothing was changed: %s. Grant them (see docs/finalize.md, Permissions)%s and re-run", strings.Join(m, "; "), hint)
}
