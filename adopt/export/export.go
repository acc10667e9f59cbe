// Package export turns live objects read from the API server into clean
// manifests for Git: what a person would have written, without what the
// server or a controller added. It drops status, server-owned metadata,
// last-applied copies, Argo CD tracking marks and server-assigned values,
// keeps meaningful empty values (emptyDir: {}), and encodes one object per
// file with a stable field order and a predictable name. It never writes a
// Secret's values anywhere: a Secret becomes at most a placeholder with its
// keys. It reads from the cluster and never writes to it.
package export

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/pager"

	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/reads"
)

// Fetch reads one live object.
func Fetch(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	var r dynamic.ResourceInterface = c.Resource(gvr)
	if namespace != "" {
		r = c.Resource(gvr).Namespace(namespace)
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// listPage bounds a List's page: exported objects can weigh up to the
// 1.5 MB object limit, so pages stay small. ConfigMaps and Secrets are
// paged by bytes (discover.BodyPages), so their pages can hold more.
const (
	listPage     = 100
	bodyListPage = 500
)

// ListPage is how many objects one page of List holds at most.
func ListPage(gvr schema.GroupVersionResource) int {
	if bodyKind(gvr) != "" {
		return bodyListPage
	}
	return listPage
}

// Count is how many objects of gvr the whole cluster holds, from a list
// of one item (the item is dropped): the API server's remainingItemCount
// plus it, or -1 when the server does not tell.
func Count(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource) (int, error) {
	l, err := c.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return -1, err
	}
	return reads.Total(len(l.Items), l), nil
}

// List reads every object of gvr in namespace ("" for all namespaces or a
// cluster-scoped resource) page by page and hands each to fn. With core
// set (a client of discover.ProtobufConfig), core/v1 ConfigMaps and
// Secrets are read as protobuf through it, without their managedFields
// (listCore); everything else as JSON through the dynamic client c.
func List(ctx context.Context, c dynamic.Interface, core corev1client.CoreV1Interface, gvr schema.GroupVersionResource, namespace string, fn func(*unstructured.Unstructured) error) error {
	if kind := bodyKind(gvr); kind != "" && core != nil {
		return listCore(ctx, core, kind, namespace, fn)
	}
	var r dynamic.ResourceInterface = c.Resource(gvr)
	if namespace != "" {
		r = c.Resource(gvr).Namespace(namespace)
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) })
	p.PageSize, p.PageBufferSize = listPage, 1
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("unexpected list item %T", o)
		}
		return fn(u)
	})
}

// bodyKind is the kind of a core/v1 ConfigMap or Secret resource, else "".
func bodyKind(gvr schema.GroupVersionResource) string {
	if gvr.Group != "" || gvr.Version != "v1" {
		return ""
	}
	switch gvr.Resource {
	case "configmaps":
		return "ConfigMap"
	case "secrets":
		return "Secret"
	}
	return ""
}

// listCore lists kind (ConfigMap or Secret) in namespace as protobuf,
// paged by bytes, and hands each item to fn as the dynamic client's JSON
// list gives it, but for managedFields, which it leaves out (Clean drops
// them, and a placeholder never reads them; converting their fieldsV1
// JSON was most of the conversion's cost): the typed object converted to
// an unstructured map, with apiVersion v1 and its kind. Decoding protobuf
// and converting is several times cheaper than decoding JSON into maps.
func listCore(ctx context.Context, core corev1client.CoreV1Interface, kind, namespace string, fn func(*unstructured.Unstructured) error) error {
	p := pager.New(discover.BodyPages(core, kind, namespace, bodyListPage))
	p.PageSize, p.PageBufferSize = bodyListPage, 1
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		return fn(u)
	})
}
