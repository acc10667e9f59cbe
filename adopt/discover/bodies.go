package discover

import (
	"context"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/jsonenc"
)

// ProtobufConfig is cfg asking for protobuf, as Clients.Core needs.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// BodyPages lists kind (ConfigMap or Secret) in ns by bytes
// (bodyPageBytes a page), with at most most objects a page. The pager
// calls it one page after another; a full list (the pager's fallback
// after an expired continue token, limit 0) is left as asked.
func BodyPages(core corev1client.CoreV1Interface, kind, ns string, most int64) pager.ListPageFunc {
	limit := min(int64(bodyPageFirst), most)
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if opts.Limit > 0 {
			opts.Limit = limit
		}
		var l runtime.Object
		var n, b int64
		switch kind {
		case "ConfigMap":
			cms, err := core.ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range cms.Items {
				b += bodyBytes(&cms.Items[i].ObjectMeta, configMapData(&cms.Items[i]))
			}
			l, n = cms, int64(len(cms.Items))
		case "Secret":
			ss, err := core.Secrets(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range ss.Items {
				b += bodyBytes(&ss.Items[i].ObjectMeta, secretData(&ss.Items[i]))
			}
			l, n = ss, int64(len(ss.Items))
		default:
			return nil, fmt.Errorf("no body list for %s", kind)
		}
		if n > 0 {
			limit = nextLimit(n, b, most)
		}
		return l, nil
	}
}

// nextLimit is the size of the page after one of n objects and b bytes.
func nextLimit(n, b, most int64) int64 {
	return min(max(bodyPageBytes*n/b, bodyPageMin), most)
}

// bodyBytes estimates an object's size in a list: its data and
// annotations as stored, and two kilobytes for the rest (managedFields
// and metadata).
func bodyBytes(m *metav1.ObjectMeta, data int) int64 {
	n := 2048 + data
	for k, v := range m.Annotations {
		n += len(k) + len(v)
	}
	return int64(n)
}

// configMapData is the bytes of a ConfigMap's data and binaryData, keys
// and values, as stored.
func configMapData(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// secretData is the bytes of a Secret's data, keys and decoded values.
func secretData(s *corev1.Secret) int {
	n := 0
	for k, v := range s.Data {
		n += len(k) + len(v)
	}
	return n
}

func fromConfigMap(t Type, cm *corev1.ConfigMap) Object {
	o := fromMeta(t, &cm.ObjectMeta, configMapData(cm))
	// {"apiVersion":"v1","kind":"ConfigMap","metadata":{…},"immutable":…,"data":{…},"binaryData":{…}}
	n := len(`{"apiVersion":"v1","kind":"ConfigMap","metadata":}`) + appliedMetaLen(&cm.ObjectMeta) +
		immutableLen(cm.Immutable) + stringsLen(`,"data":`, cm.Data) + bytesLen(`,"binaryData":`, cm.BinaryData)
	o.AppliedBytes = n + 1 // and the trailing newline
	return o
}

func fromSecret(t Type, s *corev1.Secret) Object {
	o := fromMeta(t, &s.ObjectMeta, secretData(s))
	// {"apiVersion":"v1","kind":"Secret","metadata":{…},"immutable":…,"data":{…},"stringData":{…},"type":…}
	n := len(`{"apiVersion":"v1","kind":"Secret","metadata":}`) + appliedMetaLen(&s.ObjectMeta) +
		immutableLen(s.Immutable) + bytesLen(`,"data":`, s.Data) + stringsLen(`,"stringData":`, s.StringData)
	if s.Type != "" {
		n += len(`,"type":`) + jsonenc.StringLen(string(s.Type))
	}
	o.AppliedBytes = n + 1
	return o
}

// The lengths below add up, without writing it, the JSON encoding/json
// writes for what AppliedBytes keeps of a live ConfigMap or Secret: no
// server fields, no last-applied annotation, the API's JSON names,
// omitempty, map keys in any order (the length does not depend on it).
// So AppliedBytes of the same object read as JSON gives the same number
// (TestProtobufBodiesMeasureAsJSON), and so does encoding/json
// (TestAppliedLenIsEncodingJSON): reflecting over each body was the
// largest cost of listing bodies.

// appliedMetaLen is the length of {"name":…,"generateName":…,
// "namespace":…,"labels":{…},"annotations":{…}}, each omitted when empty.
func appliedMetaLen(m *metav1.ObjectMeta) int {
	n, fields := 2, 0 // {}
	field := func(l int) {
		if fields > 0 {
			n++ // ,
		}
		n += l
		fields++
	}
	for _, f := range [...]struct{ key, v string }{{`"name":`, m.Name}, {`"generateName":`, m.GenerateName}, {`"namespace":`, m.Namespace}} {
		if f.v != "" {
			field(len(f.key) + jsonenc.StringLen(f.v))
		}
	}
	if len(m.Labels) > 0 {
		field(len(`"labels":`) + mapLen(m.Labels, ""))
	}
	if kept := len(m.Annotations); kept > 0 {
		if _, ok := m.Annotations[budget.LastAppliedKey]; ok {
			kept--
		}
		if kept > 0 {
			field(len(`"annotations":`) + mapLen(m.Annotations, budget.LastAppliedKey))
		}
	}
	return n
}

// mapLen is the length of m as a JSON object, without the key skip
// unless skip is "".
func mapLen(m map[string]string, skip string) int {
	n, entries := 2, 0
	for k, v := range m {
		if skip != "" && k == skip {
			continue
		}
		n += jsonenc.StringLen(k) + 1 + jsonenc.StringLen(v)
		entries++
	}
	return n + max(entries-1, 0)
}

// stringsLen is the length of key and m, or 0 when m is empty (omitempty).
func stringsLen(key string, m map[string]string) int {
	if len(m) == 0 {
		return 0
	}
	return len(key) + mapLen(m, "")
}

// bytesLen is the length of key and m, values in base64 (null for a nil
// one), or 0 when m is empty.
func bytesLen(key string, m map[string][]byte) int {
	if len(m) == 0 {
		return 0
	}
	n := len(key) + 2 + len(m) - 1
	for k, v := range m {
		n += jsonenc.StringLen(k) + 1
		if v == nil {
			n += len("null")
		} else {
			n += 2 + base64.StdEncoding.EncodedLen(len(v))
		}
	}
	return n
}

// immutableLen is the length of ,"immutable":true or false; 0 when unset.
func immutableLen(b *bool) int {
	switch {
	case b == nil:
		return 0
	case *b:
		return len(`,"immutable":true`)
	}
	return len(`,"immutable":false`)
}
