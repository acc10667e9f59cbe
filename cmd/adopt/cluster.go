package main

import (
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
)

// cluster is a resolved connection to one cluster.
type cluster = kubeconn.Cluster

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

// connectREST makes the clients of cfg (kubeconn.New). It makes no
// request.
func connectREST(cfg *rest.Config, context, secret string) (*cluster, error) {
	c, err := kubeconn.New(cfg, context, secret)
	if err != nil {
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

// scanOptions are the plan pipeline's inputs for this cluster, with
// adopt.yaml's grouping, kubectl's default chunk size and adopt's
// environment (getenv).
func scanOptions(c *cluster, namespace string, cfg *config.Config, argoNS, argoVersion string, repo gitindex.Source, getenv func(string) string) planner.Options {
	return planner.Options{
		Clients: c.Clients, Kube: c.Kube, Dynamic: c.Clients.Dynamic,
		Cluster: plan.Cluster{Server: c.Config.Host, Context: c.Context, Namespace: namespace},
		Config:  cfg, GroupBy: plan.GroupBy(cfg.GroupBy), ArgoCDNamespace: argoNS, ArgoCDVersion: argoVersion,
		Repo: repo, ChunkSize: 500, Explain: c.Explain, Getenv: getenv,
	}
}
