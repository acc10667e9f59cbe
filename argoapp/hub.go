package argoapp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// Hub and spoke: Argo CD runs on a management cluster and deploys to
// workload clusters registered there as cluster Secrets. These helpers
// read, from the management cluster, which registered cluster a workload
// cluster is and which Applications deploy to it.

// SecretTypeLabel and SecretTypeCluster mark Argo CD's cluster Secrets.
const (
	SecretTypeLabel   = "argocd.argoproj.io/secret-type"
	SecretTypeCluster = "cluster"
)

// Cluster is a cluster registered with Argo CD: its name, server and
// labels. The Secret's config (the credentials) is never kept.
type Cluster struct {
	Name   string            `json:"name" yaml:"name"`
	Server string            `json:"server" yaml:"server"`
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
}

// RegisteredClusters lists the cluster Secrets in Argo CD's namespace ns,
// keeping only name, server and labels, sorted by name.
func RegisteredClusters(ctx context.Context, kube kubernetes.Interface, ns string) ([]Cluster, error) {
	out := []Cluster{}
	err := eachClusterSecret(ctx, kube, ns, func(c Cluster, _ *corev1.Secret) { out = append(out, c) })
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// eachClusterSecret lists the cluster Secrets in Argo CD's namespace ns
// and hands fn each one that names a server, with its name, server and
// labels; the Secret's data goes no further than fn.
func eachClusterSecret(ctx context.Context, kube kubernetes.Interface, ns string, fn func(Cluster, *corev1.Secret)) error {
	list, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: SecretTypeLabel + "=" + SecretTypeCluster})
	if err != nil {
		return fmt.Errorf("list Argo CD's cluster Secrets in namespace %s: %w", ns, err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if c := clusterOf(s); c.Server != "" {
			fn(c, s)
		}
		s.Data, s.StringData = nil, nil // the credentials go no further
	}
	return nil
}

// FindCluster returns the registered cluster whose server is server.
func FindCluster(clusters []Cluster, server string) (Cluster, bool) {
	for _, c := range clusters {
		if SameServer(c.Server, server) {
			return c, true
		}
	}
	return Cluster{}, false
}

// SameServer compares API server URLs as Argo CD does, ignoring case and a
// trailing slash.
func SameServer(a, b string) bool {
	norm := func(s string) string { return strings.TrimRight(strings.ToLower(strings.TrimSpace(s)), "/") }
	return norm(a) == norm(b)
}

// Here says whether an Application's destination (server or name) is the
// cluster being planned.
type Here func(server, name string) bool

// InClusterName is the name of the cluster Argo CD runs in (reached at
// InClusterServer) unless a cluster Secret for that server names it
// otherwise.
const InClusterName = "in-cluster"

// HereInCluster is the Here of the cluster Argo CD itself runs in, when
// that is the cluster being planned (no hub): InClusterServer and its
// name, and the cluster registered again by its own API server URL
// (server, as the kubeconfig reaches it), by server or by name.
func HereInCluster(clusters []Cluster, server string) Here {
	names := map[string]bool{InClusterName: true}
	for _, c := range clusters {
		if SameServer(c.Server, InClusterServer) {
			delete(names, InClusterName)
		}
	}
	for _, c := range clusters {
		if SameServer(c.Server, InClusterServer) || server != "" && SameServer(c.Server, server) {
			names[c.Name] = true
		}
	}
	return func(s, name string) bool {
		if name != "" {
			return names[name]
		}
		return SameServer(s, InClusterServer) || server != "" && SameServer(s, server)
	}
}

// HereIs is the Here of a workload cluster registered as c.
func HereIs(c Cluster) Here {
	return func(server, name string) bool {
		return name != "" && name == c.Name || server != "" && SameServer(server, c.Server)
	}
}

// ListApplicationsTo lists every Application of the management cluster
// (dyn) and keeps as tracking only those whose destination is here (every
// one when here is nil); an Application deploying elsewhere is
// remembered, so a mark naming it is called stale with the reason. Errors
// follow ListApplications.
func ListApplicationsTo(ctx context.Context, dyn dynamic.Interface, here Here) (Applications, error) {
	var keys []string
	var specs []Spec
	elsewhere := map[string]string{}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return dyn.Resource(ApplicationGVR).List(ctx, opts)
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		server, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "server")
		name, _, _ := unstructured.NestedString(u.Object, "spec", "destination", "name")
		key := u.GetNamespace() + "/" + u.GetName()
		if here == nil || here(server, name) {
			keys = append(keys, key)
			specs = append(specs, specOf(u))
			return nil
		}
		dest := "server " + server
		if name != "" {
			dest = "cluster " + name
		}
		elsewhere[key] = dest
		return nil
	})
	if err != nil {
		return notListed(err, " on the management cluster")
	}
	a := NewApplications(keys)
	a.Specs = specs
	a.here = here
	if here == nil {
		return a, nil
	}
	a.elsewhere = elsewhere
	a.Note = fmt.Sprintf("%d Argo CD Applications deploy to this cluster (%d elsewhere)", len(keys), len(elsewhere))
	return a, nil
}
