package main

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// completionTimeout bounds the cluster request a completion makes, so a
// slow or unreachable cluster never hangs the shell.
const completionTimeout = 5 * time.Second

// registerCompletions gives flag values dynamic completion as kubectl's
// do: --context, --cluster and --user from the kubeconfig; -n/--namespace
// and every --argocd-namespace from the cluster's namespaces; every
// --plan (and --config) from *.yaml and *.yml files. It walks the command
// tree, so a verb's flags get it without the verb's file knowing.
func registerCompletions(root *cobra.Command, flags *genericclioptions.ConfigFlags) {
	kubeconfig := func(names func(*kubeconfigNames) []string) completionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			n, err := readKubeconfigNames(flags)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
			}
			return prefixed(names(n), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = root.RegisterFlagCompletionFunc("context", kubeconfig(func(n *kubeconfigNames) []string { return n.contexts }))
	_ = root.RegisterFlagCompletionFunc("cluster", kubeconfig(func(n *kubeconfigNames) []string { return n.clusters }))
	_ = root.RegisterFlagCompletionFunc("user", kubeconfig(func(n *kubeconfigNames) []string { return n.users }))
	namespaces := func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ns, err := listNamespaces(cmd.Context(), flags)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		return prefixed(ns, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	_ = root.RegisterFlagCompletionFunc("namespace", namespaces)
	yamlFiles := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, name := range []string{"plan", "config"} {
			if c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, yamlFiles) // an error: the verb registered its own
			}
		}
		if c.Flags().Lookup("argocd-namespace") != nil {
			_ = c.RegisterFlagCompletionFunc("argocd-namespace", namespaces)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

type completionFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

type kubeconfigNames struct{ contexts, clusters, users []string }

// readKubeconfigNames reads the names in the kubeconfig the flags select
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config), sorted.
func readKubeconfigNames(flags *genericclioptions.ConfigFlags) (*kubeconfigNames, error) {
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	n := &kubeconfigNames{}
	for k := range raw.Contexts {
		n.contexts = append(n.contexts, k)
	}
	for k := range raw.Clusters {
		n.clusters = append(n.clusters, k)
	}
	for k := range raw.AuthInfos {
		n.users = append(n.users, k)
	}
	sort.Strings(n.contexts)
	sort.Strings(n.clusters)
	sort.Strings(n.users)
	return n, nil
}

// listNamespaces lists the namespaces of the cluster the flags select
// (honouring a --context given earlier on the line).
func listNamespaces(ctx context.Context, flags *genericclioptions.ConfigFlags) ([]string, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = completionTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	sort.Strings(out)
	return out, nil
}

func prefixed(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
