package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// canI is one question to the API server's authorizer, asked with the
// real `kubectl auth can-i --as system:serviceaccount:…`: may the chart's
// ServiceAccount verb what (resource[.group][/name]), subresource sub, in
// namespace ns ("" for all namespaces, or a cluster-scoped type)?
type canI struct {
	want           bool
	verb, what, ns string
	sub            string
	why            string
}

func (c canI) String() string {
	s := c.verb + " " + c.what
	if c.sub != "" {
		s += "/" + c.sub
	}
	if c.ns == "" {
		return s + " (all namespaces)"
	}
	return s + " in " + c.ns
}

// TestChartLeastPrivilege (issue 43): the chart, rendered with the real
// helm and applied server-side to the real kube-apiserver, scoped to two
// namespaces and cluster-wide, each with and without secrets.read; then
// `kubectl auth can-i` as its ServiceAccount. The token may read what plan
// lists, patch the adopted types where finalize may, and write its Lease
// and records in its own namespace. It may not read a Secret (unless
// secrets.read), reach a node, a Service or a pod (proxy, exec, attach,
// port-forward, logs), write anything in the Argo CD namespace
// (argocd-cm, argocd-rbac-cm, a Lease, an Application), write any
// Application, grant itself more, or patch outside its namespaces. With
// secrets.read (issue 45) it may do exactly what the Sealed Secrets form
// needs: read Secrets and SealedSecrets where it plans (in a scoped
// install never the Argo CD namespace's; cluster-wide, RBAC cannot leave
// them out), patch Secrets only where finalize patches (the managed mark),
// and reach the controller's one Service by name (its certificate, GET,
// and /v1/verify, a POST through services/proxy), no other Service's
// proxy; without it, none of that. Every
// type plan lists on this API server is readable where the install
// plans, so a run is not partial for want of a grant.
func TestChartLeastPrivilege(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// kubectl auth can-i resolves a resource by discovery, and answers no
	// for one it does not know: the shared plane serves argoproj.io's,
	// bitnami.com's and external-secrets.io's from TestMain on
	// (sharedCRDsOn).
	h, err := testenv.NewHelm(cp, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	argoNS, a, b, outside, ctrlNS := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	// The Sealed Secrets controller's Service, as the service proxy names
	// it (http:<name>:<port>).
	const ctrl = "sealed-secrets-controller"
	proxy := "services/http:" + ctrl + ":http"
	for _, name := range []string{"argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm"} {
		kubectlApplyConfigMap(ctx, t, cp, argoNS, name, "v")
	}
	scope := fmt.Sprintf(`["%s","%s"]`, a, b)

	// What a run needs, and what the token must never do, in every install.
	common := func(rel string) []canI {
		return []canI{
			// plan's reads, finalize's patch, the lock and the records.
			{true, "list", "configmaps", a, "", "plan lists the types in scope"},
			{true, "get", "configmaps", b, "", "apply exports an object"},
			{true, "watch", "configmaps", a, "", "finalize watches the objects over the settle window"},
			{true, "list", "deployments.apps", b, "", "plan lists every built-in group"},
			{true, "list", "pods", a, "", "finalize explains an unhealthy Application"},
			{true, "list", "events", a, "", "finalize explains an unhealthy Application"},
			{true, "patch", "configmaps", a, "", "finalize's guarded patch of an adopted type"},
			{true, "patch", "deployments.apps", b, "", "finalize's guarded patch of an adopted type"},
			{true, "get", "namespaces/" + a, a, "", "plan checks the namespace exists; --group-prs-by reads its labels"},
			{true, "get", "configmaps/argocd-cm", argoNS, "", "the tracking method"},
			{true, "get", "configmaps/argocd-cmd-params-cm", argoNS, "", "application.namespaces"},
			{true, "get", "statefulsets.apps/argocd-application-controller", argoNS, "", "the Argo CD version"},
			{true, "list", "applications.argoproj.io", "", "", "plan lists every Application (apps in any namespace)"},
			{true, "list", "applicationsets.argoproj.io", "", "", "plan lists every ApplicationSet"},
			{true, "watch", "applications.argoproj.io", argoNS, "", "finalize waits for its Applications"},
			{true, "create", "leases.coordination.k8s.io", rel, "", "the lock, the first time"},
			{true, "get", "leases.coordination.k8s.io/adopt-reconcile", rel, "", "the lock"},
			{true, "update", "leases.coordination.k8s.io/adopt-reconcile", rel, "", "the lock"},
			{true, "list", "configmaps", rel, "", "the groups' records"},
			{true, "get", "configmaps", rel, "", "a group's stored plan"},
			{true, "create", "configmaps", rel, "", "a group's stored plan"},
			{true, "update", "configmaps", rel, "", "a group's stored plan"},
			{true, "create", "selfsubjectaccessreviews.authorization.k8s.io", "", "", "finalize checks its access before any change"},

			// Secrets, nodes, Services and pods.
			{false, "get", "secrets", a, "", "Secret data"},
			{false, "list", "secrets", a, "", "a list returns the data"},
			{false, "list", "secrets", "", "", "Secret data anywhere"},
			{false, "get", "secrets", argoNS, "", "Argo CD's repository and cluster credentials"},
			{false, "list", "secrets", rel, "", "the Git token beside it"},
			{false, "get", "nodes", "", "proxy", "a kubelet GET over a websocket is exec"},
			{false, "create", "nodes", "", "proxy", "the kubelet's API"},
			{false, "get", "services", a, "proxy", "reach a Service's pods"},
			{false, "create", "services", a, "proxy", "reach a Service's pods"},
			{false, "get", "pods", a, "proxy", "reach a pod"},
			{false, "create", "pods", a, "exec", "run a command in a pod"},
			{false, "get", "pods", a, "exec", "exec over a websocket"},
			{false, "create", "pods", a, "attach", "attach to a pod"},
			{false, "get", "pods", a, "attach", "attach over a websocket"},
			{false, "create", "pods", a, "portforward", "port-forward to a pod"},
			{false, "get", "pods", a, "portforward", "port-forward over a websocket"},
			{false, "get", "pods", a, "log", "logs carry secrets"},
			{false, "patch", "pods", a, "ephemeralcontainers", "a debug container is exec"},
			{false, "create", "pods", a, "", "run anything"},
			{false, "create", "serviceaccounts", a, "token", "mint another identity's token"},

			// Without secrets.read, nothing of the sealed form.
			{false, "patch", "secrets", a, "", "the managed mark only with secrets.read"},
			{false, "list", "sealedsecrets.bitnami.com", a, "", "SealedSecrets only with secrets.read"},
			{false, "get", proxy, ctrlNS, "proxy", "the controller's certificate only with secrets.read"},
			{false, "create", proxy, ctrlNS, "proxy", "/v1/verify only with secrets.read"},
			{false, "create", "pushsecrets.external-secrets.io", a, "", "the push only with secrets.externalSecrets"},
			{false, "create", "externalsecrets.external-secrets.io", a, "", "the probe only with secrets.externalSecrets"},
			{false, "create", "secretstores.external-secrets.io", a, "", "adopt never writes a store"},

			// The Argo CD namespace and its Applications.
			{false, "update", "configmaps/argocd-cm", argoNS, "", "accounts and settings: Argo CD admin"},
			{false, "patch", "configmaps/argocd-cm", argoNS, "", "accounts and settings: Argo CD admin"},
			{false, "update", "configmaps/argocd-rbac-cm", argoNS, "", "Argo CD's RBAC: Argo CD admin"},
			{false, "patch", "configmaps/argocd-rbac-cm", argoNS, "", "Argo CD's RBAC: Argo CD admin"},
			{false, "delete", "configmaps/argocd-cm", argoNS, "", "Argo CD's settings"},
			{false, "create", "configmaps", argoNS, "", "no state in the Argo CD namespace"},
			{false, "create", "leases.coordination.k8s.io", argoNS, "", "no lock in the Argo CD namespace"},
			{false, "update", "leases.coordination.k8s.io/adopt-reconcile", argoNS, "", "no lock in the Argo CD namespace"},
			{false, "patch", "applications.argoproj.io", argoNS, "", "point an Application elsewhere, deploy with Argo CD's rights"},
			{false, "update", "applications.argoproj.io", argoNS, "", "point an Application elsewhere"},
			{false, "patch", "applications.argoproj.io", "", "", "any Application, anywhere"},
			{false, "create", "applications.argoproj.io", argoNS, "", "deploy anything with Argo CD's rights"},
			{false, "delete", "applications.argoproj.io", argoNS, "", "an Application and its resources"},
			{false, "patch", "appprojects.argoproj.io", argoNS, "", "widen a project"},

			// Writes outside finalize's patch, and no way to grant itself more.
			{false, "patch", "configmaps", "kube-system", "", "kube-system is never adopted"},
			{false, "patch", "configmaps", outside, "", "outside the namespaces finalize may patch"},
			{false, "update", "configmaps", a, "", "finalize only patches"},
			{false, "create", "configmaps", a, "", "finalize only patches"},
			{false, "delete", "configmaps", a, "", "adopt never deletes"},
			{false, "create", "rolebindings.rbac.authorization.k8s.io", a, "", "grant itself more"},
			{false, "create", "clusterrolebindings.rbac.authorization.k8s.io", "", "", "grant itself more"},
			{false, "escalate", "clusterroles.rbac.authorization.k8s.io", "", "", "grant itself more"},
			{false, "bind", "clusterroles.rbac.authorization.k8s.io", "", "", "grant itself more"},
			{false, "impersonate", "serviceaccounts", a, "", "act as another identity"},
			{false, "get", "leases.coordination.k8s.io/other", rel, "", "only its own Lease"},
			{false, "update", "leases.coordination.k8s.io/other", rel, "", "only its own Lease"},
			{false, "delete", "leases.coordination.k8s.io/adopt-reconcile", rel, "", "the lock is released, not deleted"},
			{false, "delete", "configmaps", rel, "", "records are never deleted"},
			{false, "patch", "configmaps", rel, "", "records are written whole (update), nothing else"},
		}
	}
	scoped := []canI{
		{false, "list", "configmaps", outside, "", "reads stay in the namespaces in scope"},
		{false, "list", "configmaps", "", "", "reads stay in the namespaces in scope"},
		{false, "get", "configmaps", "kube-system", "", "reads stay in the namespaces in scope"},
		{false, "list", "deployments.apps", "", "", "reads stay in the namespaces in scope"},
		{false, "get", "namespaces/" + outside, outside, "", "only the namespaces in scope"},
		{false, "list", "namespaces", "", "", "only the namespaces in scope"},
		{false, "list", "configmaps", argoNS, "", "Argo CD's settings by name only"},
		{false, "get", "configmaps/argocd-rbac-cm", argoNS, "", "Argo CD's settings by name only"},
		{false, "get", "statefulsets.apps/other", argoNS, "", "the controller by name only"},
	}
	clusterWide := []canI{
		{true, "list", "configmaps", outside, "", "plan lists every namespace"},
		{true, "list", "configmaps", "", "", "plan lists every namespace"},
		{true, "list", "namespaces", "", "", "plan lists cluster-scoped types"},
		{true, "list", "clusterroles.rbac.authorization.k8s.io", "", "", "plan lists cluster-scoped types"},
		{true, "get", "configmaps/argocd-rbac-cm", argoNS, "", "read, never written"},
	}
	// What the sealed form needs with secrets.read, exactly: read Secrets
	// and SealedSecrets in scope, patch Secrets (the managed mark) where
	// finalize patches, and the controller's one Service and its proxy;
	// nothing more of Secrets, SealedSecrets or Services.
	sealedForm := func() []canI {
		return []canI{
			{true, "get", "secrets", a, "", "apply seals the live Secret (in memory)"},
			{true, "list", "secrets", b, "", "plan lists Secrets with the rest"},
			{true, "watch", "secrets", a, "", "finalize watches the objects over the settle window"},
			{true, "patch", "secrets", a, "", "finalize's guarded managed mark before the first sync"},
			{true, "patch", "secrets", b, "", "finalize's guarded managed mark before the first sync"},
			{false, "patch", "secrets", outside, "", "the mark only where finalize patches"},
			{false, "patch", "secrets", argoNS, "", "never a Secret of the Argo CD namespace"},
			{false, "patch", "secrets", "kube-system", "", "never kube-system"},
			{false, "patch", "secrets", "", "", "the mark only where finalize patches"},
			{false, "update", "secrets", a, "", "the mark is a patch"},
			{false, "create", "secrets", a, "", "adopt never writes a Secret's values"},
			{false, "delete", "secrets", a, "", "adopt never deletes"},
			{true, "get", "sealedsecrets.bitnami.com", a, "", "finalize reads the SealedSecret's status"},
			{true, "list", "sealedsecrets.bitnami.com", b, "", "plan lists SealedSecrets in scope"},
			{true, "watch", "sealedsecrets.bitnami.com", a, "", "finalize watches the takeover"},
			{false, "create", "sealedsecrets.bitnami.com", a, "", "Argo CD applies them, never adopt"},
			{false, "patch", "sealedsecrets.bitnami.com", a, "", "Argo CD applies them, never adopt"},
			{false, "delete", "sealedsecrets.bitnami.com", a, "", "deleting one deletes its Secret"},
			{true, "get", "services/" + ctrl, ctrlNS, "", "the controller's port, by name"},
			{true, "get", proxy, ctrlNS, "proxy", "GET /v1/cert.pem: the certificate"},
			{true, "create", proxy, ctrlNS, "proxy", "POST /v1/verify"},
			{false, "get", "services/" + ctrl, ctrlNS, "proxy", "only the proxy name adopt uses"},
			{false, "get", "services/http:other:http", ctrlNS, "proxy", "never another Service's proxy"},
			{false, "create", "services/http:other:http", ctrlNS, "proxy", "never another Service's proxy"},
			{false, "get", "services", ctrlNS, "proxy", "never every Service's proxy"},
			{false, "create", "services", a, "proxy", "never every Service's proxy"},
			{false, "get", proxy, a, "proxy", "the name only in the controller's namespace"},
			{false, "update", "services/" + ctrl, ctrlNS, "", "read only"},
			{false, "get", "pods", ctrlNS, "proxy", "never the controller's pod"},
		}
	}
	// What form eso needs with secrets.externalSecrets, on top of the
	// sealed form's (whose create, update and delete of Secrets it turns
	// to allowed where finalize patches, and only there): plan lists the
	// stores, finalize pushes through a copy and a PushSecret and reads
	// back through a probe ExternalSecret; never a write of a store.
	esoForm := func(sealed []canI) []canI {
		var out []canI
		for _, c := range sealed {
			if c.what == "secrets" && c.ns == a && (c.verb == "create" || c.verb == "update" || c.verb == "delete") {
				continue
			}
			out = append(out, c)
		}
		out = append(out, []canI{
			{true, "list", "secretstores.external-secrets.io", a, "", "plan finds the namespace's store"},
			{true, "list", "externalsecrets.external-secrets.io", b, "", "plan lists every type of the group"},
			{true, "list", "pushsecrets.external-secrets.io", b, "", "plan lists every type of the group"},
			{true, "create", "secrets", a, "", "the copy without labels or annotations that is pushed"},
			{true, "update", "secrets", b, "", "the copy's owner, the PushSecret"},
			{true, "delete", "secrets", a, "", "the copy and the probe's Secret, guarded by uid"},
			{true, "create", "pushsecrets.external-secrets.io", a, "", "the push, once"},
			{true, "get", "pushsecrets.external-secrets.io", b, "", "the push's status"},
			{true, "watch", "pushsecrets.external-secrets.io", a, "", "the wait for the push"},
			{true, "delete", "pushsecrets.external-secrets.io", a, "", "the push is deleted once proven (the store keeps the value)"},
			{true, "create", "externalsecrets.external-secrets.io", b, "", "the probe that reads the key back"},
			{true, "watch", "externalsecrets.external-secrets.io", a, "", "the wait for the probe and the takeover"},
			{true, "delete", "externalsecrets.external-secrets.io", a, "", "the probe, guarded by uid"},
			{false, "create", "secrets", outside, "", "the push only where finalize patches"},
			{false, "create", "secrets", argoNS, "", "never in the Argo CD namespace"},
			{false, "delete", "secrets", argoNS, "", "never in the Argo CD namespace"},
			{false, "create", "secrets", "kube-system", "", "never kube-system"},
			{false, "delete", "secrets", "", "", "only where finalize patches"},
			{false, "create", "pushsecrets.external-secrets.io", outside, "", "the push only where finalize patches"},
			{false, "create", "pushsecrets.external-secrets.io", argoNS, "", "never in the Argo CD namespace"},
			{false, "create", "externalsecrets.external-secrets.io", "kube-system", "", "never kube-system"},
			{false, "patch", "pushsecrets.external-secrets.io", a, "", "created and deleted, never changed"},
			{false, "update", "externalsecrets.external-secrets.io", a, "", "Argo CD applies the one in Git"},
			{false, "create", "secretstores.external-secrets.io", a, "", "adopt never writes a store"},
			{false, "patch", "secretstores.external-secrets.io", a, "", "adopt never writes a store"},
			{false, "delete", "secretstores.external-secrets.io", a, "", "adopt never writes a store"},
			{false, "create", "clustersecretstores.external-secrets.io", "", "", "adopt never writes a store"},
			{false, "create", "clusterpushsecrets.external-secrets.io", "", "", "no push to every namespace's stores"},
		}...)
		return out
	}
	esoSet := func(set ...string) []string {
		return append(set, "--set", "secrets.read=true", "--set", "secrets.sealedSecretsController="+ctrlNS+"/"+ctrl, "--set", "secrets.externalSecrets=true")
	}
	installs := []struct {
		name    string
		set     []string
		secrets bool
		checks  func(rel string) []canI
	}{
		{"scoped", []string{"--set-json", "namespaces=" + scope}, false,
			func(rel string) []canI { return append(common(rel), scoped...) }},
		{"cluster-wide", []string{"--set-json", "finalize.namespaces=" + scope}, false,
			func(rel string) []canI { return append(common(rel), clusterWide...) }},
		{"scoped, secrets.read", []string{"--set-json", "namespaces=" + scope, "--set", "secrets.read=true", "--set", "secrets.sealedSecretsController=" + ctrlNS + "/" + ctrl}, true,
			func(rel string) []canI {
				return append(sealedForm(), []canI{
					{false, "list", "secrets", rel, "", "never the Git token beside it in a scoped install"},
					{false, "list", "secrets", outside, "", "not outside the scope"},
					{false, "list", "secrets", "", "", "not outside the scope"},
					{false, "get", "secrets", argoNS, "", "never the Argo CD namespace's in a scoped install"},
					{false, "list", "secrets", ctrlNS, "", "the controller's namespace is not in scope"},
					{false, "list", "sealedsecrets.bitnami.com", outside, "", "not outside the scope"},
					{false, "list", "sealedsecrets.bitnami.com", "", "", "not outside the scope"},
				}...)
			}},
		{"cluster-wide, secrets.read", []string{"--set-json", "finalize.namespaces=" + scope, "--set", "secrets.read=true", "--set", "secrets.sealedSecretsController=" + ctrlNS + "/" + ctrl}, true,
			func(rel string) []canI {
				return append(sealedForm(), []canI{
					{true, "list", "secrets", "", "", "secrets.read, every namespace"},
					{true, "get", "secrets", rel, "", "cluster-wide covers the Git token beside it too (documented)"},
					{true, "get", "secrets", argoNS, "", "secrets.read cluster-wide covers Argo CD's credentials: RBAC cannot leave a namespace out (documented)"},
					{true, "list", "sealedsecrets.bitnami.com", "", "", "plan lists SealedSecrets in every namespace"},
				}...)
			}},
		{"scoped, secrets.externalSecrets", esoSet("--set-json", "namespaces="+scope), true,
			func(rel string) []canI {
				return append(esoForm(sealedForm()), []canI{
					{false, "list", "secrets", rel, "", "never the Git token beside it in a scoped install"},
					{false, "list", "secretstores.external-secrets.io", outside, "", "not outside the scope"},
					{false, "list", "clustersecretstores.external-secrets.io", "", "", "a scoped install sees each namespace's SecretStores only (documented)"},
				}...)
			}},
		{"cluster-wide, secrets.externalSecrets", esoSet("--set-json", "finalize.namespaces="+scope), true,
			func(rel string) []canI {
				return append(esoForm(sealedForm()), []canI{
					{true, "list", "clustersecretstores.external-secrets.io", "", "", "plan lists the ClusterSecretStores"},
					{true, "list", "secretstores.external-secrets.io", "", "", "plan lists every namespace"},
					{false, "create", "secrets", rel, "", "the push only where finalize patches, not beside the Git token"},
				}...)
			}},
	}
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			// A release of its own, unique on the shared control plane
			// (its ClusterRoles' names are the release's).
			rel := cp.Namespace(t)
			release := "adopt-" + rel[len(rel)-6:]
			args := append([]string{"template", release, deployChart, "--namespace", rel, "--set", "argocdNamespace=" + argoNS}, deploySampleValues...)
			rendered := helmRun(ctx, t, h, append(args, in.set...)...)
			cfg := chartConfig(t, rendered)
			if excluded := cfg.ExcludesType("", "Secret") != ""; excluded == in.secrets {
				t.Errorf("secrets.read=%v, yet the chart's adopt.yaml excludes Secrets: %v", in.secrets, excluded)
			}
			if want := map[bool]string{true: ctrlNS + "/" + ctrl}[in.secrets]; cfg.Secrets.SealedSecretsController != want {
				t.Errorf("the chart's adopt.yaml names the Sealed Secrets controller %q, want %q (plan then lists no Service to find it)", cfg.Secrets.SealedSecretsController, want)
			}
			for _, want := range []string{"--lock-namespace=" + rel, "--config=/etc/adopt/adopt.yaml"} {
				if !strings.Contains(rendered, want) {
					t.Errorf("the CronJob does not pass %s", want)
				}
			}
			t.Cleanup(func() {
				_, _ = cp.Kubectl(context.Background(), nil, "delete", "clusterrole,clusterrolebinding", "-l", "app.kubernetes.io/instance="+release, "--ignore-not-found")
			})
			if out, err := cp.Kubectl(ctx, []byte(rendered), "apply", "--server-side", "--field-manager=adopt-test", "-f", "-"); err != nil {
				t.Fatalf("kubectl apply --server-side of the chart's render: %v: %s", err, out)
			}
			user := "system:serviceaccount:" + rel + ":" + release + "-reconcile"
			waitAllowed(ctx, t, user, authorizationv1.ResourceAttributes{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: rel})
			for _, c := range in.checks(rel) {
				if got := kubectlCanI(ctx, t, user, c); got != c.want {
					t.Errorf("can-i %s: %v, want %v (%s)", c, got, c.want, c.why)
				}
			}
			if in.secrets {
				return
			}
			// Every type plan lists here (the built-in groups and
			// Argo CD's) may be listed where the install plans.
			types, _, err := discover.Types(cp.Clientset().Discovery())
			if err != nil {
				t.Fatal(err)
			}
			skip, n := judge.UserTypes(cfg), 0
			for _, ty := range types {
				if !builtinGroup(ty.Group) || skip(ty) != "" || strings.HasPrefix(in.name, "scoped") && !ty.Namespaced {
					continue
				}
				ns := ""
				if strings.HasPrefix(in.name, "scoped") {
					ns = a
				}
				n++
				if !allowed(ctx, t, user, authorizationv1.ResourceAttributes{Verb: "list", Group: ty.Group, Resource: ty.Resource, Namespace: ns}) {
					t.Errorf("plan lists %s, which the token may not list in %q: the run would be partial (exit 4)", ty, ns)
				}
			}
			if n < 20 {
				t.Errorf("only %d types checked: discovery is not what this test expects", n)
			}
		})
	}
}

// builtinGroup reports whether group is Kubernetes' own or Argo CD's, not
// a CRD another test of the package installed.
func builtinGroup(group string) bool {
	return group == "" || strings.HasSuffix(group, ".k8s.io") || slices.Contains([]string{"apps", "autoscaling", "batch", "policy", "argoproj.io"}, group)
}

// chartConfig is the adopt.yaml the render's ConfigMap holds, parsed as
// reconcile's --config reads it.
func chartConfig(t *testing.T, rendered string) *config.Config {
	t.Helper()
	text := chartConfigText(t, rendered)
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatalf("the chart's adopt.yaml: %v\n%s", err, text)
	}
	return cfg
}

// chartConfigText is the adopt.yaml the render's ConfigMap holds.
func chartConfigText(t *testing.T, rendered string) string {
	t.Helper()
	for _, doc := range strings.Split(rendered, "\n---") {
		var cm struct {
			Kind string
			Data map[string]string
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" && cm.Data["adopt.yaml"] != "" {
			return cm.Data["adopt.yaml"]
		}
	}
	t.Fatal("the render holds no ConfigMap with adopt.yaml")
	return ""
}

// kubectlCanI asks `kubectl auth can-i` as admin impersonating user.
func kubectlCanI(ctx context.Context, t *testing.T, user string, c canI) bool {
	t.Helper()
	args := []string{"auth", "can-i", c.verb, c.what, "--as", user}
	if c.sub != "" {
		args = append(args, "--subresource", c.sub)
	}
	if c.ns == "" {
		args = append(args, "--all-namespaces")
	} else {
		args = append(args, "-n", c.ns)
	}
	out, err := cp.Kubectl(ctx, nil, args...)
	for _, line := range strings.Split(out, "\n") {
		switch strings.TrimSpace(line) {
		case "yes":
			return true
		case "no":
			return false
		}
	}
	t.Fatalf("kubectl %s: no answer (%v): %s", strings.Join(args, " "), err, out)
	return false
}

// allowed asks the authorizer (a SubjectAccessReview) whether user, a
// ServiceAccount, may do ra.
func allowed(ctx context.Context, t *testing.T, user string, ra authorizationv1.ResourceAttributes) bool {
	t.Helper()
	ns := strings.Split(user, ":")[2]
	r, err := cp.Clientset().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}, ResourceAttributes: &ra}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// waitAllowed waits until the authorizer allows ra to user: a barrier on
// the RBAC cache after an apply.
func waitAllowed(ctx context.Context, t *testing.T, user string, ra authorizationv1.ResourceAttributes) {
	t.Helper()
	for !allowed(ctx, t, user, ra) {
		select {
		case <-ctx.Done():
			t.Fatalf("the authorizer never allowed %s %s to %s", ra.Verb, ra.Resource, user)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
