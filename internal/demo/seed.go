package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// hook is a usage-hook ConfigMap of the incident.
type hook struct {
	ns, name  string
	dataBytes int
	// serverSide marks the one a past fix moved to server-side apply.
	serverSide bool
}

// The three ConfigMaps from the incident write-up, with its data sizes.
var hooks = []hook{
	{ns: "litellm-test", name: "litellm-test-usage-hook", dataBytes: 248706},
	{ns: "litellm-enterprise", name: "litellm-enterprise-usage-hook", dataBytes: 188428},
	{ns: "litellm-community", name: "litellm-community-usage-hook", dataBytes: 260182, serverSide: true},
}

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

// gitAhead is how far Git's litellm-test hook is ahead of the cluster: the
// incident's test proxy ran "8,126 B behind git".
const gitAhead = 8126

// hookManifest renders the ConfigMap manifest the runbook applies, with
// extra bytes of data on top of the incident's size.
func hookManifest(h hook, extra int) string {
	src := HookSource(h.dataBytes + extra - len("usage_hook.py"))
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    app.kubernetes.io/name: litellm\n    app.kubernetes.io/part-of: %s\ndata:\n  usage_hook.py: |\n", h.name, h.ns, h.ns)
	for _, line := range strings.SplitAfter(src, "\n") {
		if line != "" {
			b.WriteString("    " + line)
		}
	}
	return b.String()
}

// Seed creates the demo estate with the real kubectl.
func Seed(ctx context.Context, cp *testenv.ControlPlane, w io.Writer) error {
	kubectl := func(stdin string, args ...string) error {
		fmt.Fprintf(w, "$ kubectl %s\n", strings.Join(args, " "))
		out, err := cp.Kubectl(ctx, []byte(stdin), args...)
		fmt.Fprint(w, indent(out))
		return err
	}
	for _, ns := range []string{"litellm-test", "litellm-enterprise", "litellm-community", "payments"} {
		if err := kubectl("", "create", "namespace", ns); err != nil {
			return err
		}
	}
	for _, h := range hooks {
		args := []string{"apply", "-f", "-"}
		if h.serverSide {
			args = []string{"apply", "--server-side", "-f", "-"}
		}
		if err := kubectl(hookManifest(h, 0), args...); err != nil {
			return err
		}
	}
	if err := kubectl(ordinaryObjects, "apply", "-f", "-"); err != nil {
		return err
	}
	return kubectl(trackedObjects, "create", "-f", "-")
}

// GitOpsRepo is the demo's local GitOps repo: the runbook directory the
// incident describes, where Git holds a newer litellm-test hook than the
// cluster and a README that still applies it by hand.
func GitOpsRepo() map[string]string {
	files := map[string]string{
		"k8s/system/README.md": "# System ConfigMaps\n\nAfter regenerating the usage hooks, apply them:\n\n" +
			"    kubectl apply -f k8s/system/litellm-test-usage-hook-cm.yaml\n" +
			"    kubectl apply -f k8s/system/litellm-enterprise-usage-hook-cm.yaml\n",
	}
	for _, h := range hooks {
		extra := 0
		if h.ns == "litellm-test" {
			extra = gitAhead
		}
		files["k8s/system/"+h.name+"-cm.yaml"] = hookManifest(h, extra)
	}
	return files
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// ordinaryObjects are hand-applied objects of an ordinary service.
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

// trackedObjects are already managed by Argo CD.
const trackedObjects = `apiVersion: v1
kind: ConfigMap
metadata:
  name: payments-config
  namespace: payments
  annotations:
    argocd.argoproj.io/tracking-id: payments:/ConfigMap:payments/payments-config
data: {currency: EUR}
---
apiVersion: v1
kind: Service
metadata:
  name: payments
  namespace: payments
  annotations:
    argocd.argoproj.io/tracking-id: payments:/Service:payments/payments
spec:
  selector: {app: payments}
  ports: [{port: 80}]
`
