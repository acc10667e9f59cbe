// Package kubeconn owns the connection to one cluster that every engine
// is handed: the clients made from a rest.Config at kubectl's rate
// (New), and the one wording of an error of that cluster's API server
// (Explain), which says where it happened and what to do. It reads no
// kubeconfig or flag (the command resolves them into a rest.Config) and
// makes no request.
package kubeconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/discover"
)

// Cluster is a resolved connection to one cluster.
type Cluster struct {
	Config *rest.Config
	// Context names the cluster: its kubeconfig context, or its
	// registered name when Secret is set.
	Context string
	// Secret is the cluster Secret (namespace/name) whose credentials
	// Config holds, for a cluster reached through its Argo CD
	// registration.
	Secret  string
	Clients discover.Clients
	Kube    kubernetes.Interface
}

// New makes the clients of cfg, a cluster named context (a kubeconfig
// context, or a registered cluster's name when secret, the cluster Secret
// whose credentials cfg holds, is set), at kubectl's rate for discovery:
// 50 requests a second, bursts of 300, which a plan's lists of a
// 100,000-object cluster fit in. It makes no request; an error is a
// configuration client-go cannot use.
func New(cfg *rest.Config, context, secret string) (*Cluster, error) {
	cfg.QPS, cfg.Burst = 50, 300
	c := &Cluster{Config: cfg, Context: context, Secret: secret}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	if err != nil {
		return nil, err
	}
	lists, err := discover.ListClient(cfg)
	if err != nil {
		return nil, err
	}
	c.Clients = discover.Clients{Discovery: dc, Metadata: mc, Dynamic: dyn, Core: core.CoreV1(), Lists: lists}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Explain turns an error of c's API server into one sentence that says
// where and what to do next.
func (c *Cluster) Explain(err error) error {
	var ue *url.Error
	var ne net.Error
	host := c.Config.Host
	switch {
	case apierrors.IsUnauthorized(err) && c.Secret != "":
		return fmt.Errorf("the API server at %s rejected the credentials of cluster Secret %s (401): %v. Refresh them there (Argo CD uses them too), or plan the cluster with --contexts", host, c.Secret, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the credentials (401): %v. Refresh the token in your kubeconfig or pick another --context", host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden by the API server at %s: %v. Ask for list and get on these resources (see examples/rbac)", host, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the API server at %s did not answer within --request-timeout: %v. Check that the cluster is up and reachable", host, err)
	case errors.As(err, &ue):
		return fmt.Errorf("cannot reach the API server at %s: %v. Check --kubeconfig, --context and that the cluster is up", host, ue.Err)
	}
	return fmt.Errorf("talking to the API server at %s: %w", host, err)
}
