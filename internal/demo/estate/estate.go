// Package estate is the incident's cluster and GitOps repo, shared by
// `make demo` (which narrates it) and the end-to-end test in e2e/ (which
// asserts on it): usage-hook ConfigMaps applied client-side by hand near the
// 262,144-byte annotation cap, objects a runbook later migrated with
// `kubectl apply --server-side`, a Secret, and a Deployment that cannot fit
// on an almost full node. It only seeds, with the real kubectl; it never
// runs adopt.
package estate

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// Namespaces the estate creates.
var Namespaces = []string{"litellm-test", "litellm-enterprise", "litellm-community", "payments"}

// Hook is a usage-hook ConfigMap of the incident.
type Hook struct {
	Namespace, Name string
	DataBytes       int
	// How the runbook applied it: "client-side" (kubectl apply),
	// "server-side" (born with kubectl apply --server-side) or "migrated"
	// (kubectl apply, later kubectl apply --server-side).
	Applied string
}

// Hooks are the three ConfigMaps from the incident write-up, with its data
// sizes.
var Hooks = []Hook{
	{Namespace: "litellm-test", Name: "litellm-test-usage-hook", DataBytes: 248706, Applied: "client-side"},
	{Namespace: "litellm-enterprise", Name: "litellm-enterprise-usage-hook", DataBytes: 188428, Applied: "migrated"},
	{Namespace: "litellm-community", Name: "litellm-community-usage-hook", DataBytes: 260182, Applied: "server-side"},
}

// GitAhead is how far Git's litellm-test hook is ahead of the cluster: the
// incident's test proxy ran "8,126 B behind git".
const GitAhead = 8126

// Node is the e2-small-like node the workloads must fit on: 2 CPUs,
// 1936 Mi allocatable, 97% of its memory already requested.
const (
	Node       = "e2-small-1"
	NodeCPU    = "2"
	NodeMemory = "1936Mi"
	NodeFull   = 0.97
)

// ProxyConfig is a small ConfigMap a runbook applied client-side and later
// migrated with --server-side: the managers kubectl and
// kubectl-last-applied co-own its keys, so a key deleted in Git survives
// the next sync until adopt finalize drops them.
const (
	ProxyConfigNamespace = "litellm-test"
	ProxyConfigName      = "litellm-proxy-config"
	ProxyConfigPath      = "k8s/system/litellm-proxy-config-cm.yaml"
	// DeletedKey is the key the end-to-end test deletes in Git.
	DeletedKey = "fallbacks.yaml"
)

// The hand-applied Secret of the estate (in ordinaryObjects): without a
// secrets operator adopt leaves it out and names it; with the Sealed
// Secrets controller running (make demo), adopt adopts it as a
// SealedSecret.
const (
	SecretNamespace = "litellm-test"
	SecretName      = "litellm-master-key"
)

// HookPath is a hook's manifest in the GitOps repo.
func HookPath(h Hook) string { return "k8s/system/" + h.Name + "-cm.yaml" }

// HookSource returns a deterministic Python-like file of exactly n bytes.
// Its newlines and quotes make the JSON copy in last-applied larger than the
// data, as real code does.
func HookSource(n int) string {
	var b strings.Builder
	b.WriteString("# usage hook, generated\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "    usage_total_%05d = response.usage.get(\"total_tokens\", 0) + cached_prompt_tokens_%05d\n", i, i)
	}
	return b.String()[:n-1] + "\n"
}

// HookManifest renders the ConfigMap manifest the runbook applies, with
// extra bytes of data on top of the incident's size.
func HookManifest(h Hook, extra int) string {
	src := HookSource(h.DataBytes + extra - len("usage_hook.py"))
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    app.kubernetes.io/name: litellm\n    app.kubernetes.io/part-of: %s\ndata:\n  usage_hook.py: |\n", h.Name, h.Namespace, h.Namespace)
	for _, line := range strings.SplitAfter(src, "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
	}
	return b.String()
}

// ProxyConfigManifest is the proxy's ConfigMap; without DeletedKey when
// withFallbacks is false (the edit the end-to-end test commits to Git).
func ProxyConfigManifest(withFallbacks bool) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
  labels: {app.kubernetes.io/name: litellm, app.kubernetes.io/part-of: litellm-test}
data:
  config.yaml: |
    model_list:
    - model_name: gpt-4o
      litellm_params: {model: openai/gpt-4o}
    callbacks: [usage_hook.proxy_handler_instance]
`, ProxyConfigName, ProxyConfigNamespace)
	if withFallbacks {
		s += "  " + DeletedKey + ": |\n    - gpt-4o: [gpt-4o-mini]\n"
	}
	return s
}

// StartCapacity starts the real kube-scheduler and kube-controller-manager,
// registers Node and binds a filler pod requesting NodeFull of its memory,
// so that the estate's Deployment gets a ReplicaSet and a pod that stays
// Pending with the scheduler's own "Insufficient memory". Stop the returned
// Scheduling when done (it also dies with the process).
func StartCapacity(ctx context.Context, cp *testenv.ControlPlane) (*testenv.Scheduling, error) {
	s, err := testenv.StartScheduling(ctx, cp)
	if err != nil {
		return nil, err
	}
	if _, err := cp.RegisterNode(ctx, Node, NodeCPU, NodeMemory); err != nil {
		s.Stop()
		return nil, err
	}
	if _, err := cp.FillNode(ctx, Node, NodeFull); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Seed creates the estate with the real kubectl, echoing each command and
// its output to w.
func Seed(ctx context.Context, cp *testenv.ControlPlane, w io.Writer) error {
	kubectl := func(stdin string, args ...string) error {
		fmt.Fprintf(w, "$ kubectl %s\n", strings.Join(args, " "))
		out, err := cp.Kubectl(ctx, []byte(stdin), args...)
		fmt.Fprint(w, indent(out))
		return err
	}
	for _, ns := range Namespaces {
		if err := kubectl("", "create", "namespace", ns); err != nil {
			return err
		}
	}
	for _, h := range Hooks {
		args := []string{"apply", "-f", "-"}
		if h.Applied == "server-side" {
			args = []string{"apply", "--server-side", "-f", "-"}
		}
		if err := kubectl(HookManifest(h, 0), args...); err != nil {
			return err
		}
	}
	if err := kubectl(ProxyConfigManifest(true), "apply", "-f", "-"); err != nil {
		return err
	}
	if err := kubectl(ordinaryObjects, "apply", "-f", "-"); err != nil {
		return err
	}
	if err := kubectl(trackedObjects(), "create", "-f", "-"); err != nil {
		return err
	}
	// Later the runbook was changed to --server-side for some files: the
	// stale last-applied copy stays, and kubectl co-owns every field.
	fmt.Fprintln(w, "# the runbook, later changed to --server-side for two files:")
	for _, h := range Hooks {
		if h.Applied == "migrated" {
			if err := kubectl(HookManifest(h, 0), "apply", "--server-side", "-f", "-"); err != nil {
				return err
			}
		}
	}
	return kubectl(ProxyConfigManifest(true), "apply", "--server-side", "-f", "-")
}

// PaymentsApp is the Application that already manages the payments
// objects, in the GitOps repo at argocd/apps/payments.yaml.
const PaymentsApp = "argocd/apps/payments.yaml"

// GitOpsRepo is the estate's GitOps repo, whose URL is repoURL: the runbook
// directory the incident describes, where Git holds a newer litellm-test
// hook than the cluster and a README that still applies it by hand, and
// the payments service that Argo CD already manages.
func GitOpsRepo(repoURL string) map[string]string {
	files := map[string]string{
		PaymentsApp: fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: payments
  namespace: argocd
spec:
  project: default
  source: {repoURL: %q, path: apps/payments, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: payments}
`, repoURL),
		"apps/payments/payments.yaml": paymentsInGit,
		"k8s/system/README.md": "# System ConfigMaps\n\nAfter regenerating the usage hooks, apply them:\n\n" +
			"    kubectl apply -f k8s/system/litellm-test-usage-hook-cm.yaml\n" +
			"    kubectl apply --server-side -f k8s/system/litellm-enterprise-usage-hook-cm.yaml\n" +
			"    kubectl apply --server-side -f " + ProxyConfigPath + "\n",
		ProxyConfigPath: ProxyConfigManifest(true),
	}
	for _, h := range Hooks {
		extra := 0
		if h.Namespace == "litellm-test" {
			extra = GitAhead
		}
		files[HookPath(h)] = HookManifest(h, extra)
	}
	return files
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// ordinaryObjects are hand-applied objects of an ordinary service: its
// Deployment asks for 256 Mi, which the almost full node cannot give.
const ordinaryObjects = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: litellm
  namespace: litellm-test
  labels: {app.kubernetes.io/name: litellm, app.kubernetes.io/part-of: litellm-test}
spec:
  replicas: 1
  selector: {matchLabels: {app: litellm}}
  template:
    metadata: {labels: {app: litellm}}
    spec:
      containers:
      - name: litellm
        image: ghcr.io/berriai/litellm:main-v1.74.0
        command: ["/app/.venv/bin/litellm", "--config", "/etc/litellm/config.yaml"]
        resources: {requests: {memory: 256Mi, cpu: 100m}}
        volumeMounts: [{name: hook, mountPath: /etc/litellm/hooks}, {name: scratch, mountPath: /tmp}]
      volumes:
      - {name: hook, configMap: {name: litellm-test-usage-hook}}
      - {name: scratch, emptyDir: {}}
---
apiVersion: v1
kind: Service
metadata:
  name: litellm
  namespace: litellm-test
  labels: {app.kubernetes.io/name: litellm, app.kubernetes.io/part-of: litellm-test}
spec:
  selector: {app: litellm}
  ports: [{port: 4000, targetPort: 4000}]
---
apiVersion: v1
kind: Secret
metadata:
  name: litellm-master-key
  namespace: litellm-test
  labels: {app.kubernetes.io/part-of: litellm-test}
type: Opaque
stringData:
  master-key: sk-demo-not-a-real-key
`

// trackedObjects are already managed by Argo CD (Application payments):
// each carries the tracking id Argo CD wrote.
func trackedObjects() string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: payments-config
  namespace: payments
  annotations:
    %[1]s: payments:/ConfigMap:payments/payments-config
data: {currency: EUR}
---
apiVersion: v1
kind: Service
metadata:
  name: payments
  namespace: payments
  annotations:
    %[1]s: payments:/Service:payments/payments
spec:
  selector: {app: payments}
  ports: [{port: 80}]
`, argoapp.AnnotationTrackingID)
}

// paymentsInGit is the payments service as Git holds it.
const paymentsInGit = `apiVersion: v1
kind: ConfigMap
metadata: {name: payments-config, namespace: payments}
data: {currency: EUR}
---
apiVersion: v1
kind: Service
metadata: {name: payments, namespace: payments}
spec:
  selector: {app: payments}
  ports: [{port: 80}]
`

// AdoptConfig is the adopt.yaml the demo and the end-to-end test plan
// with. It leaves Argo CD's own installation out: the out-of-cluster Argo
// CD put its config into namespace argocd and its CRDs into the cluster by
// hand, and those belong in an app-of-apps, not in the adoption.
const AdoptConfig = `apiVersion: adopt.dev/v1alpha1
kind: AdoptConfig
exclusions:
- namespaces: [argocd]
- apiGroups: [apiextensions.k8s.io]
- kinds: [Namespace]
  names: [argocd]
`
