package discover

import (
	"bytes"
	"context"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

// bodies are applied client-side with the real kubectl, as by hand, so
// they carry last-applied copies, managedFields and the server's fields;
// their content is what a JSON encoder can get wrong: HTML characters,
// non-ASCII, binary data, empty maps, immutable, Secret types, stringData.
const bodies = `apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data: {a: "1", config.yaml: "key: value\n<b>&amp;</b> é ☃\n"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: labelled
  labels: {app: x, tier: web}
  annotations: {note: "a & b", empty: ""}
  finalizers: [example.com/keep]
immutable: true
binaryData: {blob: AAECAwT/}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty}
---
apiVersion: v1
kind: Secret
metadata: {name: opaque, labels: {a: b}}
type: Opaque
data: {password: c2VjcmV0, bin: AP8=}
stringData: {token: "t<o>ken"}
---
apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
`

// TestProtobufBodiesMeasureAsJSON: the facts adopt reads of a ConfigMap or
// Secret from a real API server's protobuf pages equal those of the same
// object read as JSON, which AppliedBytes and the stored sizes are defined
// on; and the paged list returns every object exactly once.
func TestProtobufBodiesMeasureAsJSON(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	if out, err := cp.Kubectl(ctx, []byte(bodies), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
	t.Cleanup(func() {
		cp.Kubectl(context.Background(), nil, "patch", "-n", ns, "configmap", "labelled", "--type", "json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	})
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	lists, err := ListClient(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ConfigMap", "Secret"} {
		typ := Type{Version: "v1", Kind: kind, Resource: strings.ToLower(kind) + "s", Namespaced: true}
		want := map[string]Object{}
		ul, err := dyn.Resource(typ.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range ul.Items {
			want[ul.Items[i].GetName()] = fromJSON(typ, &ul.Items[i])
		}
		if len(want) < 2 {
			t.Fatalf("%s: %d listed", kind, len(want))
		}
		// Two objects a page: the continue token is followed.
		var buf bytes.Buffer
		objs, err := listType(ctx, Clients{Lists: lists}, typ, Options{Namespaces: []string{ns}, PageSize: 2}, &buf, &labelSets{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Object{}
		for _, o := range objs {
			if _, dup := got[o.Name]; dup {
				t.Errorf("%s %s listed twice", kind, o.Name)
			}
			got[o.Name] = o
		}
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("%s %s: not listed as protobuf", kind, name)
				continue
			}
			if w.AppliedBytes == 0 || w.DataBytes == 0 && name != "empty" {
				t.Errorf("%s %s: JSON facts look empty: %+v", kind, name, w)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s %s:\nprotobuf %+v\nJSON     %+v", kind, name, g, w)
			}
		}
	}
}

// fromJSON is the collector's facts from a JSON body, as it kept them
// before bodies came as protobuf: the reference the wire path must equal.
func fromJSON(t Type, u *unstructured.Unstructured) Object {
	n := jsonMapBytes(u.Object["data"], t.Kind == "Secret") + jsonMapBytes(u.Object["binaryData"], true)
	meta := metav1.ObjectMeta{
		Namespace: u.GetNamespace(), Name: u.GetName(), ResourceVersion: u.GetResourceVersion(),
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), OwnerReferences: u.GetOwnerReferences(),
		ManagedFields: u.GetManagedFields(),
	}
	o := wantFacts(t, &meta, n)
	o.AppliedBytes = AppliedBytes(u.Object)
	return o
}

func jsonMapBytes(v any, encoded bool) int {
	m, _ := v.(map[string]any)
	n := 0
	for k, v := range m {
		s, _ := v.(string)
		n += len(k)
		if dec, err := base64.StdEncoding.DecodeString(s); encoded && err == nil {
			n += len(dec)
			continue
		}
		n += len(s)
	}
	return n
}

// TestBodyPagesFollowTheBytes: the next page's size follows the bytes of
// the page before it, between bodyPageMin and the list's page size.
func TestBodyPagesFollowTheBytes(t *testing.T) {
	for _, c := range []struct{ n, b, most, want int64 }{
		{50, 50 * 2500, 500, 500},
		{500, 500 * 600 << 10, 500, bodyPageMin},
		{10, 10 * 100 << 10, 500, bodyPageBytes / (100 << 10)},
		{50, 50 * 2500, 20, 20},
	} {
		if got := nextLimit(c.n, c.b, c.most); got != c.want {
			t.Errorf("nextLimit(%d, %d, %d) = %d, want %d", c.n, c.b, c.most, got, c.want)
		}
	}
}
