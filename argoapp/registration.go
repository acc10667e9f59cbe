package argoapp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Registration is a cluster registered with Argo CD, with the connection
// its cluster Secret's config describes (Argo CD's ClusterConfig: bearer
// token, basic auth, TLS client config). The connection lives in memory
// only, behind a pointer (so printing a Registration shows an address, not
// a credential); nothing of config is kept but the rest.Config built from
// it.
type Registration struct {
	Cluster
	// Secret is the cluster Secret, namespace/name.
	Secret string
	// Unusable says why adopt cannot connect with the Secret's credentials
	// ("" when it can): the in-cluster entry, an exec plugin or AWS IAM
	// auth, or a config it cannot read.
	Unusable string
	config   *rest.Config
}

// RESTConfig is a copy of the connection the Secret describes, nil when
// Unusable.
func (r Registration) RESTConfig() *rest.Config {
	if r.config == nil {
		return nil
	}
	return rest.CopyConfig(r.config)
}

// Registrations lists the cluster Secrets in Argo CD's namespace ns with
// the connection each describes, sorted by name. It reads the credentials
// (`config`), so the caller's role needs get/list on those Secrets.
func Registrations(ctx context.Context, kube kubernetes.Interface, ns string) ([]Registration, error) {
	out := []Registration{}
	err := eachClusterSecret(ctx, kube, ns, func(c Cluster, s *corev1.Secret) {
		r := Registration{Cluster: c, Secret: s.Namespace + "/" + s.Name}
		r.config, r.Unusable = restConfig(r.Server, s.Data["config"])
		out = append(out, r)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// clusterOf is a cluster Secret's name, server and labels (without the
// secret-type label).
func clusterOf(s *corev1.Secret) Cluster {
	c := Cluster{Name: string(s.Data["name"]), Server: string(s.Data["server"]), Labels: map[string]string{}}
	for k, v := range s.Labels {
		if k != SecretTypeLabel {
			c.Labels[k] = v
		}
	}
	return c
}

// restConfig turns a cluster Secret's config (Argo CD's ClusterConfig
// JSON) into a connection to server, or says why it cannot. No message
// quotes the config.
func restConfig(server string, raw []byte) (*rest.Config, string) {
	if SameServer(server, InClusterServer) {
		return nil, "it is Argo CD's in-cluster entry (" + InClusterServer + "), the management cluster as Argo CD's own pod sees it, which adopt cannot reach: plan the management cluster alone with --context"
	}
	if u, err := url.Parse(server); err != nil || u.User != nil || u.Host == "" {
		return nil, "its server is not an https://host[:port] URL without credentials"
	}
	var cfg v1alpha1.ClusterConfig
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, "its config is not Argo CD cluster config JSON"
		}
	}
	switch {
	case cfg.ExecProviderConfig != nil:
		return nil, "its config uses exec plugin auth (execProviderConfig), which adopt does not run: give the cluster a kubeconfig context and use --contexts"
	case cfg.AWSAuthConfig != nil:
		return nil, "its config uses AWS IAM auth (awsAuthConfig), which adopt does not run: give the cluster a kubeconfig context and use --contexts"
	}
	c, err := (&v1alpha1.Cluster{Server: server, Config: cfg}).RawRestConfig()
	if err != nil {
		// Only its proxyUrl can fail here; the error would quote it.
		return nil, "its config's proxyUrl is not an http, https or socks5 URL"
	}
	return c, ""
}

// Select keeps the registrations whose Secret's labels match selector (a
// Kubernetes label selector; "" selects all). None matching is an error
// that lists what is registered.
func Select(regs []Registration, selector string) ([]Registration, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", selector, err)
	}
	out := []Registration{}
	for _, r := range regs {
		if sel.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if len(regs) == 0 {
		return nil, fmt.Errorf("no cluster is registered with Argo CD (no Secret labelled %s=%s)", SecretTypeLabel, SecretTypeCluster)
	}
	have := make([]string, 0, len(regs))
	for _, r := range regs {
		have = append(have, r.Name+" "+labels.Set(r.Labels).String())
	}
	return nil, fmt.Errorf("no registered cluster's Secret matches the label selector %q (registered: %s)", selector, strings.Join(have, "; "))
}

// FindRegistration is the registration named name, checked to still be
// for server: a later verb reconnects the way the plan connected, and a
// registration that is gone or now names another server is refused.
func FindRegistration(regs []Registration, name, server string) (Registration, error) {
	for _, r := range regs {
		if r.Name != name {
			continue
		}
		switch {
		case !SameServer(r.Server, server):
			return r, fmt.Errorf("cluster Secret %s registers %s with server %s, but the plan was made for %s: the registration changed since the plan; plan again", r.Secret, name, r.Server, server)
		case r.Unusable != "":
			return r, fmt.Errorf("cluster Secret %s of %s: %s", r.Secret, name, r.Unusable)
		}
		return r, nil
	}
	return Registration{}, fmt.Errorf("cluster %s is no longer registered with Argo CD (no cluster Secret names it): the plan reached it through that registration; register it again, or plan again", name)
}
