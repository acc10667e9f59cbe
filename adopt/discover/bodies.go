package discover

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/adopt-dev/adopt/adopt/budget"
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
				b += bodyBytes(configMapData(&cms.Items[i]), budget.AnnotationBytes(cms.Items[i].Annotations))
			}
			l, n = cms, int64(len(cms.Items))
		case "Secret":
			ss, err := core.Secrets(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range ss.Items {
				b += bodyBytes(secretData(&ss.Items[i]), budget.AnnotationBytes(ss.Items[i].Annotations))
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

// bodyBytes estimates an object's size in a list from the bytes of its
// data and annotations as stored, and two kilobytes for the rest
// (managedFields and metadata). Collect's pages and BodyPages' follow the
// same estimate, so both make the same requests.
func bodyBytes(data, annotations int) int64 { return int64(2048 + data + annotations) }

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
