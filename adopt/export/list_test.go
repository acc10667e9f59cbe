package export

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/redact"
)

// bodies are applied client-side with the real kubectl, as by hand, so they
// carry last-applied copies, managedFields and the server's fields; their
// content is what a conversion can get wrong: HTML characters, non-ASCII,
// binary data, empty values and maps, immutable, instance labels and
// tracking annotations, Secret types, stringData.
const bodies = `apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data: {a: "1", config.yaml: "key: value\n<b>&amp;</b> é ☃\n", empty: ""}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: labelled
  labels: {app: x, tier: web, app.kubernetes.io/instance: old-app}
  annotations: {note: "a & b", empty: "", argocd.argoproj.io/tracking-id: "old-app:/ConfigMap:x/labelled"}
immutable: true
data: {script.sh: "#!/bin/sh\necho hi\n"}
binaryData: {blob: AAECAwT/, none: ""}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: empty-data}
data: {}
---
apiVersion: v1
kind: Secret
metadata: {name: opaque, labels: {a: b, app.kubernetes.io/instance: old-app}, annotations: {team: blue}}
type: Opaque
data: {password: c2VjcmV0, bin: AP8=, empty: ""}
stringData: {token: "t<o>ken"}
---
apiVersion: v1
kind: Secret
metadata: {name: string-only}
stringData: {user: admin, password: "p@ss word"}
---
apiVersion: v1
kind: Secret
metadata: {name: tls}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
apiVersion: v1
kind: Secret
metadata: {name: basic}
type: kubernetes.io/basic-auth
immutable: true
stringData: {username: u, password: p}
---
apiVersion: v1
kind: Secret
metadata: {name: no-data}
type: example.com/custom
`

// contentTypes records the content type of every list response of the
// ConfigMaps and Secrets read through it.
type contentTypes struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && (strings.HasSuffix(r.URL.Path, "/configmaps") || strings.HasSuffix(r.URL.Path, "/secrets")) {
		c.mu.Lock()
		c.seen = append(c.seen, resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

// TestProtobufListEqualsJSON: ConfigMaps and Secrets listed as protobuf
// through the typed core client (paged by bytes, across pages) reach the
// caller as the very unstructured objects the dynamic client's JSON list
// gives, but for managedFields, so their exports and placeholders are the
// same bytes; and the list really went as protobuf.
func TestProtobufListEqualsJSON(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	if out, err := cp.Kubectl(ctx, []byte(bodies), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, out)
	}
	// More ConfigMaps than BodyPages' first page, created without
	// kubectl, so the list continues onto a second page.
	cs := cp.Clientset()
	for i := range 60 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"i": fmt.Sprint(i)}},
			Data: map[string]string{"k": strings.Repeat("v", i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "seed"}); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := discover.ProtobufConfig(cp.RESTConfig())
	seen := &contentTypes{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { seen.rt = rt; return seen })
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list := func(t *testing.T, resource string, withCore bool) map[string]*unstructured.Unstructured {
		t.Helper()
		c := core.CoreV1()
		if !withCore {
			c = nil
		}
		got := map[string]*unstructured.Unstructured{}
		err := List(ctx, dyn, c, schema.GroupVersionResource{Version: "v1", Resource: resource}, ns, func(u *unstructured.Unstructured) error {
			if _, dup := got[u.GetName()]; dup {
				t.Errorf("%s %s listed twice", resource, u.GetName())
			}
			got[u.GetName()] = u
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range []struct {
		resource string
		least    int
	}{{"configmaps", 64}, {"secrets", 5}} {
		t.Run(c.resource, func(t *testing.T) {
			seen.seen = nil
			byJSON, byProto := list(t, c.resource, false), list(t, c.resource, true)
			if len(seen.seen) < 1 || c.resource == "configmaps" && len(seen.seen) < 2 {
				t.Fatalf("%d list requests through the core client, want pages of it", len(seen.seen))
			}
			for _, ct := range seen.seen {
				if ct != runtime.ContentTypeProtobuf {
					t.Fatalf("a list through the core client came as %q, not protobuf", ct)
				}
			}
			if len(byJSON) < c.least || len(byProto) != len(byJSON) {
				t.Fatalf("%d listed as JSON, %d as protobuf, want %d or more", len(byJSON), len(byProto), c.least)
			}
			for name, want := range byJSON {
				got := byProto[name]
				if got == nil {
					t.Errorf("%s: not listed as protobuf", name)
					continue
				}
				// The protobuf list leaves managedFields out, and only them.
				if len(want.GetManagedFields()) == 0 {
					t.Errorf("%s: no managedFields listed as JSON", name)
				}
				if has(got.Object, "metadata", "managedFields") {
					t.Errorf("%s: managedFields listed as protobuf", name)
				}
				want = want.DeepCopy()
				unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
				if !reflect.DeepEqual(got.Object, want.Object) {
					t.Errorf("%s:\nprotobuf %#v\nJSON     %#v", name, got.Object, want.Object)
				}
				g, w := exportBytes(t, got), exportBytes(t, want)
				if !bytes.Equal(g, w) {
					t.Errorf("%s: exports differ:\nprotobuf:\n%s\nJSON:\n%s", name, g, w)
				}
				if len(w) == 0 {
					t.Errorf("%s: empty export", name)
				}
			}
		})
	}
}

// exportBytes is what apply writes of a live object: its clean manifest,
// or a Secret's placeholder followed by its keys.
func exportBytes(t *testing.T, live *unstructured.Unstructured) []byte {
	t.Helper()
	var c *unstructured.Unstructured
	var keys []string
	var err error
	if redact.IsSecret("", live.GetKind()) {
		c, keys = SecretPlaceholder(live, Options{}), SecretKeys(live)
	} else if c, err = Clean(live, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(c.Object)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, strings.Join(keys, ",")...)
}

// BenchmarkList lists the apply bench's 2,000 ConfigMaps (20 lines of
// data each) from one namespace, as JSON into maps and as protobuf
// converted to the same maps.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	ns := cp.Namespace(b)
	cfg := cp.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	errs := make(chan error, 2000)
	sem := make(chan struct{}, 16)
	for i := range 2000 {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%04d", i), Labels: map[string]string{"app.kubernetes.io/part-of": fmt.Sprintf("svc-%03d", i%500)}},
				Data: map[string]string{"config.yaml": strings.Repeat(fmt.Sprintf("key-%d: value\n", i), 20)}}
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range 2000 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	core, err := kubernetes.NewForConfig(discover.ProtobufConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, c := range []struct {
		name string
		core corev1client.CoreV1Interface
	}{{"json", nil}, {"protobuf", core.CoreV1()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if err := List(ctx, dyn, c.core, gvr, ns, func(*unstructured.Unstructured) error { n++; return nil }); err != nil || n != 2000 {
					b.Fatalf("%d listed: %v", n, err)
				}
			}
		})
	}
}
