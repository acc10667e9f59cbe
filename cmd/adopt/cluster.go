package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
)

// cluster is a resolved connection to one cluster.
type cluster struct {
	rest    *rest.Config
	context string
	// secret is the cluster Secret (namespace/name) whose credentials rest
	// holds, for a cluster reached through its Argo CD registration.
	secret  string
	clients discover.Clients
	kube    kubernetes.Interface
}

// connect resolves kubeconfig flags into clients. It makes no request.
func connect(flags *genericclioptions.ConfigFlags) (*cluster, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, usageErrorf("cannot load kubeconfig: %v. Check --kubeconfig, $KUBECONFIG and --context", err)
	}
	if u, err := url.Parse(cfg.Host); err == nil && u.User != nil {
		// Go's HTTP client would send them as basic auth in place of the
		// kubeconfig's token, which no current API server accepts, and
		// every error and plan file would print them.
		u.User = nil
		return nil, usageErrorf("the kubeconfig's server URL %s carries credentials (user:password@): remove them, and put a token or client certificate in the kubeconfig's user instead", u)
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	ctxName := ""
	if err == nil {
		ctxName = raw.CurrentContext
		if flags.Context != nil && *flags.Context != "" {
			ctxName = *flags.Context
		}
	}
	return connectREST(cfg, ctxName, "")
}

// connectREST makes the clients of cfg, a cluster named context (a
// kubeconfig context, or a registered cluster's name when secret, the
// cluster Secret whose credentials cfg holds, is set). It makes no request.
func connectREST(cfg *rest.Config, context, secret string) (*cluster, error) {
	// kubectl's rate for discovery: 50 requests a second, bursts of 300,
	// which a plan's lists of a 100,000-object cluster fit in.
	cfg.QPS, cfg.Burst = 50, 300
	c := &cluster{rest: cfg, context: context, secret: secret}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	if err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	lists, err := discover.ListClient(cfg)
	if err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	c.clients = discover.Clients{Discovery: dc, Metadata: mc, Dynamic: dyn, Core: core.CoreV1(), Lists: lists}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, usageErrorf("bad cluster configuration: %v", err)
	}
	return c, nil
}

// namespaceScope reads -n/--namespace (with -A, which excludes it) for
// the verbs that scan: the namespaces to plan, joined by commas as the
// plan records them; "" for the whole cluster.
func namespaceScope(cmd *cobra.Command, flags *genericclioptions.ConfigFlags, all bool) (string, error) {
	if !cmd.Flags().Changed("namespace") {
		return "", nil
	}
	if all {
		return "", usageErrorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	ns, err := discover.ParseNamespaces(*flags.Namespace)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	return strings.Join(ns, ","), nil
}

// noNamespace refuses -n/--namespace for a verb that works on what a plan
// names: the plan records its scope, and -n would silently do nothing.
func noNamespace(cmd *cobra.Command, verb string) error {
	if !cmd.Flags().Changed("namespace") {
		return nil
	}
	return usageErrorf("-n/--namespace: %s works on the objects the plan names, in the namespaces it was planned for (adopt plan -n): drop -n", verb)
}

// contextFlags are main's kubeconfig and --request-timeout with another
// context: one cluster of a fleet.
func contextFlags(main *genericclioptions.ConfigFlags, context string) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.KubeConfig, f.Timeout, f.Context = main.KubeConfig, main.Timeout, &context
	f.WrapConfigFn = main.WrapConfigFn
	return f
}

// explain turns a client error into one sentence that says where and what to
// do next.
func (c *cluster) explain(err error) error {
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsUnauthorized(err) && c.secret != "":
		return fmt.Errorf("the API server at %s rejected the credentials of cluster Secret %s (401): %v. Refresh them there (Argo CD uses them too), or plan the cluster with --contexts", c.rest.Host, c.secret, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server at %s rejected the credentials (401): %v. Refresh the token in your kubeconfig or pick another --context", c.rest.Host, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden by the API server at %s: %v. Ask for list and get on these resources (see examples/rbac)", c.rest.Host, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the API server at %s did not answer within --request-timeout: %v. Check that the cluster is up and reachable", c.rest.Host, err)
	case errors.As(err, &ue):
		return fmt.Errorf("cannot reach the API server at %s: %v. Check --kubeconfig, --context and that the cluster is up", c.rest.Host, ue.Err)
	}
	return fmt.Errorf("talking to the API server at %s: %w", c.rest.Host, err)
}

// scanOptions are the plan pipeline's inputs for this cluster, with
// adopt.yaml's grouping and kubectl's default chunk size.
func (c *cluster) scanOptions(namespace string, cfg *config.Config, argoNS, argoVersion string, repo gitindex.Source) planner.Options {
	return planner.Options{
		Clients: c.clients, Kube: c.kube, Dynamic: c.clients.Dynamic,
		Cluster: plan.Cluster{Server: c.rest.Host, Context: c.context, Namespace: namespace},
		Config:  cfg, GroupBy: plan.GroupBy(cfg.GroupBy), ArgoCDNamespace: argoNS, ArgoCDVersion: argoVersion,
		Repo: repo, ChunkSize: 500, Explain: c.explain,
	}
}
