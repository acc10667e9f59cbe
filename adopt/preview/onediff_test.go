package preview_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/preview"
)

// TestOneDiffForEveryCaller runs the same pairs through drift
// (gitindex.Compare: the Git manifest against live), the Helm proof
// (helmrelease.Compare: the release's manifest against the chart rendered
// now) and the preview (the first sync's dry run against live): before is
// hand-applied with the real kubectl and is the release's manifest, after
// is the Git manifest and the chart rendered now. All three name the same
// fields, spelt the same way. Fields only before holds (onlyBefore) are
// the one difference by design: the Helm proof compares two whole renders
// and names them; drift counts only what the manifest sets, and the dry run
// keeps them, since kubectl still owns them.
func TestOneDiffForEveryCaller(t *testing.T) {
	ctx := ctxFor(t)
	ns := cp.Namespace(t)
	p := &preview.Previewer{Client: dyn()}
	pw := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name          string
		gvr           schema.GroupVersionResource
		before, after string
		want          []string
		onlyBefore    []string
	}{
		{
			name: "ConfigMap",
			gvr:  configMaps,
			before: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: NS, labels: {tier: web}}
data: {greeting: hello, extra: kept, same: s}
`,
			after: `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: NS, labels: {tier: api}, annotations: {}, creationTimestamp: null}
data: {greeting: hi, added: new, same: s}
`,
			want:       []string{"data.added", "data.greeting", "metadata.labels.tier"},
			onlyBefore: []string{"data.extra"},
		},
		{
			name: "Deployment",
			gvr:  deployments,
			before: deploymentWith("web:1", 2, `
        - {name: A, value: "1"}
        - {name: OLD, value: "x"}`),
			after: deploymentWith("web:2", 3, `
        - {name: A, value: "1"}
        - {name: B, value: "2"}`),
			want: []string{
				"spec.replicas",
				"spec.template.spec.containers[name=main].env[name=B]",
				"spec.template.spec.containers[name=main].image",
			},
			onlyBefore: []string{"spec.template.spec.containers[name=main].env[name=OLD]"},
		},
		{
			name: "Secret, stringData against data",
			gvr:  secrets,
			before: `apiVersion: v1
kind: Secret
metadata: {name: auth, namespace: NS}
data: {user: ` + pw("admin") + `, pw: ` + pw("old-value") + `}
`,
			after: `apiVersion: v1
kind: Secret
metadata: {name: auth, namespace: NS}
data: {user: ` + pw("admin") + `}
stringData: {pw: new-value}
`,
			want: []string{"data.pw"},
		},
		{
			name: "nothing but empties and server-set fields",
			gvr:  configMaps,
			before: `apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: NS}
data: {k: v}
`,
			after: `apiVersion: v1
kind: ConfigMap
metadata: {name: same, namespace: NS, labels: {}, creationTimestamp: null}
data: {k: v}
binaryData: {}
`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, after := strings.ReplaceAll(c.before, "NS", ns), strings.ReplaceAll(c.after, "NS", ns)
			handApply(t, ctx, before)
			m := parse(t, after)
			l := live(t, ctx, c.gvr, ns, m.GetName())

			drift := gitindex.Compare(m.Object, l.Object).Fields

			cmp, err := helmrelease.Compare(before, after, ns)
			if err != nil {
				t.Fatal(err)
			}
			var helm []string
			for _, d := range cmp.Diffs {
				helm = append(helm, d.Fields...)
			}
			slices.Sort(helm)

			var changes []string
			for _, ch := range run(t, ctx, p, c.gvr, after).Changes {
				changes = append(changes, ch.Path)
			}

			wantHelm := slices.Sorted(slices.Values(append(slices.Clone(c.want), c.onlyBefore...)))
			for _, got := range []struct {
				caller string
				fields []string
				want   []string
			}{{"drift", drift, c.want}, {"preview", changes, c.want}, {"Helm proof", helm, wantHelm}} {
				if !slices.Equal(got.fields, got.want) {
					t.Errorf("%s names %q, want %q", got.caller, got.fields, got.want)
				}
			}
		})
	}
}

// deploymentWith is a Deployment whose container main runs image with
// replicas and the env entries given as YAML list items.
func deploymentWith(image string, replicas int, env string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: main
        image: %s
        env:%s
`, replicas, image, env)
}
