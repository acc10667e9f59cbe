package objdiff_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	gediff "github.com/argoproj/gitops-engine/pkg/diff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objdiff"
)

// pair is a manifest and the live object it is compared with, each as the
// API server or a YAML decoder gives it.
type pair struct {
	name             string
	manifest, live   *unstructured.Unstructured
	manifestB, liveB int
}

// BenchmarkAgainstGitopsEngine measures, in one invocation, this package's
// Diff and gitops-engine's diff.Diff (Argo CD's OutOfSync decision, with
// its default options) on the same pairs: a ConfigMap near the annotation
// cap (8,126 B behind, too large for the last-applied annotation, so a
// two-way diff), a Deployment hand-applied with kubectl (a three-way diff
// from its last-applied annotation; one image differs) and a CRD of about
// 150 KB, also hand-applied (one description differs). "+paths" is
// gitops-engine followed by what naming the fields would still need:
// decoding its two documents and walking them. It logs the costs and
// reports the ratios as metrics; it asserts only that both find the
// difference.
//
//	go test ./adopt/objdiff -run '^$' -bench AgainstGitopsEngine
func BenchmarkAgainstGitopsEngine(b *testing.B) {
	for _, p := range pairs(b) {
		if len(objdiff.Diff(p.live.Object, p.manifest.Object)) == 0 {
			b.Fatalf("%s: objdiff finds no difference", p.name)
		}
		r, err := gediff.Diff(p.manifest, p.live)
		if err != nil || !r.Modified {
			b.Fatalf("%s: gitops-engine: modified %v, %v", p.name, r != nil && r.Modified, err)
		}
		ours := measure(func() { objdiff.Diff(p.live.Object, p.manifest.Object) })
		theirs := measure(func() {
			if _, err := gediff.Diff(p.manifest, p.live); err != nil {
				b.Fatal(err)
			}
		})
		withPaths := measure(func() {
			r, err := gediff.Diff(p.manifest, p.live)
			if err != nil {
				b.Fatal(err)
			}
			var predicted, live map[string]any
			if json.Unmarshal(r.PredictedLive, &predicted) != nil || json.Unmarshal(r.NormalizedLive, &live) != nil {
				b.Fatal("gitops-engine's documents do not decode")
			}
			objdiff.Diff(live, predicted)
		})
		ratio := func(x, y cost) float64 { return float64(x.ns) / float64(max(y.ns, 1)) }
		memRatio := func(x, y cost) float64 { return float64(x.bytes) / float64(max(y.bytes, 1)) }
		b.Logf("%-10s (manifest %s B, live %s B): objdiff %s, %s B/op; gitops-engine %s, %s B/op: %.0fx the time, %.0fx the memory; +paths %.0fx the time",
			p.name, thousands(p.manifestB), thousands(p.liveB),
			micros(ours), thousands(int(ours.bytes)),
			micros(theirs), thousands(int(theirs.bytes)),
			ratio(theirs, ours), memRatio(theirs, ours), ratio(withPaths, ours))
		b.ReportMetric(ratio(theirs, ours), "x-time-"+p.name)
		b.ReportMetric(memRatio(theirs, ours), "x-mem-"+p.name)
	}
}

// cost is what one call of a function takes on average: time and bytes
// allocated.
type cost struct{ ns, bytes int64 }

// measure calls f until 200 ms have passed (at least 5 times) and
// returns its average cost. testing.Benchmark cannot be nested in a
// benchmark (both take the benchmark lock), so the two comparisons of one
// pair are timed here, in the same invocation.
func measure(f func()) cost {
	f() // warm caches and lazy initialisation
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start, n := time.Now(), int64(0)
	for n < 5 || time.Since(start) < 200*time.Millisecond {
		f()
		n++
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return cost{ns: elapsed.Nanoseconds() / n, bytes: int64(after.TotalAlloc-before.TotalAlloc) / n}
}

func micros(c cost) string {
	return fmt.Sprintf("%.1f µs", float64(c.ns)/1000)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func pairs(b *testing.B) []pair {
	return []pair{configMapPair(b), deploymentPair(b), crdPair(b)}
}

// decode reads YAML or JSON as the API server's JSON would decode
// (integers as int64).
func decode(b *testing.B, doc []byte) *unstructured.Unstructured {
	b.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		b.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		b.Fatal(err)
	}
	return u
}

// serverSide makes a copy of m look read back from the API server: server
// metadata, managedFields, status, the last-applied annotation of applied
// when given, and edit applied to the copy.
func serverSide(b *testing.B, m *unstructured.Unstructured, applied *unstructured.Unstructured, status map[string]any, edit func(map[string]any)) *unstructured.Unstructured {
	b.Helper()
	l := m.DeepCopy()
	edit(l.Object)
	meta := l.Object["metadata"].(map[string]any)
	meta["uid"] = "0b8e6f6c-3f1e-4c4e-9d55-9a7f1c2a1b7e"
	meta["resourceVersion"] = "184467"
	meta["generation"] = int64(3)
	meta["creationTimestamp"] = "2024-05-02T09:14:00Z"
	if applied != nil {
		j, err := applied.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann[budget.LastAppliedKey] = string(j) + "\n"
		meta["annotations"] = ann
	}
	meta["managedFields"] = []any{map[string]any{
		"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": m.GetAPIVersion(),
		"time": "2024-05-02T09:14:00Z", "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{".": map[string]any{}}}},
	}}
	if status != nil {
		l.Object["status"] = status
	}
	j, err := l.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return decode(b, j)
}

func configMapPair(b *testing.B) pair {
	hook := strings.Repeat("def usage_hook(event):\n    return event\n", 256832/40)
	hook += strings.Repeat("#", 256832-len(hook))
	m := decode(b, []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"litellm-usage-hook","namespace":"litellm","labels":{"app":"litellm"}},"data":{"usage_hook.py":%q,"settings.yaml":"retries: 3\n"}}`, hook)))
	live := serverSide(b, m, nil, nil, func(o map[string]any) {
		o["data"].(map[string]any)["usage_hook.py"] = hook[:256832-8126]
	})
	return pair{name: "configmap", manifest: m, live: live, manifestB: size(b, m), liveB: size(b, live)}
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: litellm
  namespace: litellm
  labels: {app.kubernetes.io/name: litellm, app.kubernetes.io/part-of: gateway}
spec:
  replicas: 3
  selector:
    matchLabels: {app.kubernetes.io/name: litellm}
  template:
    metadata:
      labels: {app.kubernetes.io/name: litellm}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "4000"}
    spec:
      serviceAccountName: litellm
      containers:
      - name: main
        image: registry.invalid/litellm:%s
        args: [--config, /etc/litellm/config.yaml, --port, "4000"]
        ports:
        - {name: http, containerPort: 4000}
        - {name: metrics, containerPort: 9090}
        env:
        - {name: LOG_LEVEL, value: info}
        - {name: STORE_MODEL_IN_DB, value: "True"}
        - {name: DATABASE_URL, valueFrom: {secretKeyRef: {name: litellm-db, key: url}}}
        - {name: MASTER_KEY, valueFrom: {secretKeyRef: {name: litellm-keys, key: master}}}
        - {name: REDIS_HOST, value: redis.litellm.svc}
        - {name: REDIS_PORT, value: "6379"}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NUM_WORKERS, value: "4"}
        resources:
          requests: {cpu: 500m, memory: 1Gi}
          limits: {memory: 2Gi}
        readinessProbe:
          httpGet: {path: /health/readiness, port: http}
          periodSeconds: 10
        livenessProbe:
          httpGet: {path: /health/liveliness, port: http}
          initialDelaySeconds: 30
        volumeMounts:
        - {name: config, mountPath: /etc/litellm}
        - {name: hook, mountPath: /app/hooks}
      - name: exporter
        image: registry.invalid/exporter:0.9
        ports:
        - {name: exporter, containerPort: 9100}
        resources:
          requests: {cpu: 50m, memory: 64Mi}
      volumes:
      - name: config
        configMap: {name: litellm-config}
      - name: hook
        configMap: {name: litellm-usage-hook}
`

func deploymentPair(b *testing.B) pair {
	m := decode(b, []byte(fmt.Sprintf(deploymentYAML, "1.41")))
	applied := decode(b, []byte(fmt.Sprintf(deploymentYAML, "1.40")))
	status := map[string]any{
		"observedGeneration": int64(3), "replicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3), "updatedReplicas": int64(3),
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastUpdateTime": "2024-05-02T09:15:00Z", "lastTransitionTime": "2024-05-02T09:15:00Z", "message": "Deployment has minimum availability."},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "lastUpdateTime": "2024-05-02T09:15:00Z", "lastTransitionTime": "2024-05-02T09:14:00Z", "message": `ReplicaSet "litellm-7d9f" has successfully progressed.`},
		},
	}
	live := serverSide(b, applied, applied, status, func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["progressDeadlineSeconds"] = 600
		spec["revisionHistoryLimit"] = 10
		spec["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		for k, v := range map[string]any{"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": map[string]any{}, "terminationGracePeriodSeconds": 30, "serviceAccount": "litellm"} {
			pod[k] = v
		}
		for _, c := range pod["containers"].([]any) {
			c := c.(map[string]any)
			c["imagePullPolicy"] = "IfNotPresent"
			c["terminationMessagePath"] = "/dev/termination-log"
			c["terminationMessagePolicy"] = "File"
			for _, p := range c["ports"].([]any) {
				p.(map[string]any)["protocol"] = "TCP"
			}
		}
		o["metadata"].(map[string]any)["annotations"] = map[string]any{"deployment.kubernetes.io/revision": "3"}
	})
	return pair{name: "deployment", manifest: m, live: live, manifestB: size(b, m), liveB: size(b, live)}
}

// crd is a CustomResourceDefinition whose schema has fields properties,
// each with a description and a nested object of four properties;
// description changes the first field's.
func crd(b *testing.B, fields int, description string) *unstructured.Unstructured {
	props := map[string]any{}
	for i := range fields {
		props[fmt.Sprintf("field%03d", i)] = map[string]any{
			"type":        "object",
			"description": fmt.Sprintf("Field %d configures one part of the workload; it is optional and defaults to the controller's setting when left out.", i),
			"properties": map[string]any{
				"enabled":  map[string]any{"type": "boolean", "description": "Enabled turns this part on."},
				"replicas": map[string]any{"type": "integer", "format": "int32", "minimum": 0, "description": "Replicas is how many copies run."},
				"selector": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}, "description": "Selector picks the pods."},
				"mode":     map[string]any{"type": "string", "enum": []any{"Auto", "Manual", "Off"}, "description": "Mode says who decides."},
			},
		}
	}
	props["field000"].(map[string]any)["description"] = description
	o := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "workloads.example.invalid"},
		"spec": map[string]any{
			"group": "example.invalid", "scope": "Namespaced",
			"names": map[string]any{"kind": "Workload", "listKind": "WorkloadList", "plural": "workloads", "singular": "workload"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec":   map[string]any{"type": "object", "properties": props},
					"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
				}}},
			}},
		},
	}
	j, err := json.Marshal(o)
	if err != nil {
		b.Fatal(err)
	}
	return decode(b, j)
}

func crdPair(b *testing.B) pair {
	m := crd(b, 220, "Field 0, changed in Git.")
	applied := crd(b, 220, "Field 0 configures one part.")
	status := map[string]any{
		"acceptedNames": map[string]any{"kind": "Workload", "listKind": "WorkloadList", "plural": "workloads", "singular": "workload"},
		"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": "2024-05-02T09:14:00Z"},
			map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": "2024-05-02T09:14:00Z"},
		},
		"storedVersions": []any{"v1"},
	}
	live := serverSide(b, applied, applied, status, func(o map[string]any) {
		o["spec"].(map[string]any)["conversion"] = map[string]any{"strategy": "None"}
	})
	return pair{name: "crd", manifest: m, live: live, manifestB: size(b, m), liveB: size(b, live)}
}

func size(b *testing.B, u *unstructured.Unstructured) int {
	j, err := u.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return len(j)
}
