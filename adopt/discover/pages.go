package discover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// ListClient is the client Collect lists with (Clients.Lists): raw
// requests to any type's list path, so each page is read into a buffer
// the next page reuses and its facts are read from the bytes (wire.go).
func ListClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return rest.UnversionedRESTClientFor(c)
}

// What a list asks for: only the metadata of most types, as client-go's
// metadata client asks (protobuf, else JSON); the whole of ConfigMaps and
// Secrets, whose data is measured.
const (
	acceptMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	acceptBodies = "application/vnd.kubernetes.protobuf,application/json"
)

// listPath is the path of t's list in ns, or in all namespaces when ns is "".
func listPath(t Type, ns string) string {
	p := "/apis/" + t.Group + "/" + t.Version
	if t.Group == "" {
		p = "/api/" + t.Version
	}
	if ns != "" && t.Namespaced {
		p += "/namespaces/" + ns
	}
	return p + "/" + t.Resource
}

// getPage reads one page of t's list in ns into buf.
func getPage(ctx context.Context, c rest.Interface, t Type, ns string, limit int64, next string, buf *bytes.Buffer) error {
	accept := acceptMetadata
	if withData(t) {
		accept = acceptBodies
	}
	req := c.Get().AbsPath(listPath(t, ns)).Param("limit", strconv.FormatInt(limit, 10)).SetHeader("Accept", accept)
	if next != "" {
		req = req.Param("continue", next)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	buf.Reset()
	_, err = buf.ReadFrom(body)
	return err
}

// eachItem hands each item of a list page to item as protobuf: a
// protobuf page in place, a JSON one (a server that cannot send
// protobuf) decoded and marshalled item by item.
func eachItem(t Type, body []byte, item func([]byte) error) (listPage, error) {
	if bytes.HasPrefix(body, protobufMagic) {
		return readPage(body, item)
	}
	var l struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := utiljson.Unmarshal(body, &l); err != nil {
		return listPage{}, fmt.Errorf("read %s from the API server's JSON: %w", t.String(), err)
	}
	for _, raw := range l.Items {
		var it interface{ Marshal() ([]byte, error) } = &metav1.PartialObjectMetadata{}
		switch {
		case withData(t) && t.Kind == "ConfigMap":
			it = &corev1.ConfigMap{}
		case withData(t):
			it = &corev1.Secret{}
		}
		if err := utiljson.Unmarshal(raw, it); err != nil {
			return listPage{}, fmt.Errorf("read %s from the API server's JSON: %w", t.String(), err)
		}
		b, err := it.Marshal()
		if err != nil {
			return listPage{}, err
		}
		if err := item(b); err != nil {
			return listPage{}, err
		}
	}
	page := listPage{next: l.Metadata.Continue, remaining: -1}
	if l.Metadata.RemainingItemCount != nil {
		page.remaining = *l.Metadata.RemainingItemCount
	}
	return page, nil
}
