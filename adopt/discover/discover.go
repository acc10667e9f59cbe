// Package discover is the collector: it finds every listable resource type
// in the cluster and lists its objects with pagination, keeping only the
// facts the later stages need (identity, labels, small annotations, the
// annotation budget, field managers, owners, data size). It never writes to
// the cluster and never keeps a Secret's values.
package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/adopt-dev/adopt/adopt/budget"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"
)

// MaxKeptAnnotationValue is the largest annotation value kept verbatim on an
// Object. Larger values are counted, then dropped, so memory does not grow
// with annotation size. last-applied-configuration is always dropped.
const MaxKeptAnnotationValue = 4096

// A type listed with full bodies (ConfigMaps, Secrets) is paged by bytes,
// not by a fixed count: its first page holds bodyPageFirst objects, and
// each next page as many as fit in bodyPageBytes at the size of the
// objects in the page before it, between bodyPageMin and the list's page
// size. Small ConfigMaps then come 500 to a request, so a large estate
// is not a thousand requests held back by the client's rate limit, and a
// page of ConfigMaps near the annotation cap (about 512 KB each) holds 10,
// so memory does not follow body size.
const (
	bodyPageFirst = 50
	bodyPageMin   = 10
	bodyPageBytes = 4 << 20
)

// Type is one listable resource type.
type Type struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
}

// GVR is the type's GroupVersionResource.
func (t Type) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.Resource}
}

// String is resource.group, as kubectl names types.
func (t Type) String() string {
	if t.Group == "" {
		return t.Resource
	}
	return t.Resource + "." + t.Group
}

// Manager is one managedFields entry, without the field set.
type Manager struct {
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`
	Subresource string `json:"subresource,omitempty"`
}

// Object holds what was collected about one live object.
type Object struct {
	Type            Type              `json:"-"`
	Namespace       string            `json:"namespace,omitempty"`
	Name            string            `json:"name"`
	ResourceVersion string            `json:"resourceVersion"`
	Labels          map[string]string `json:"labels,omitempty"`
	// Annotations holds the annotations whose values are at most
	// MaxKeptAnnotationValue bytes; Elided names the others.
	Annotations map[string]string `json:"annotations,omitempty"`
	Elided      []string          `json:"elided,omitempty"`
	Budget      budget.Budget     `json:"budget"`
	Owners      []string          `json:"owners,omitempty"`
	Managers    []Manager         `json:"managers,omitempty"`
	// DataBytes is, for ConfigMaps and Secrets, the sum of key and value
	// bytes of data and binaryData (decoded). Zero for other kinds.
	DataBytes int `json:"dataBytes"`
	// AppliedBytes is the size of the last-applied-configuration value a
	// client-side apply of the live object would write (see AppliedBytes);
	// zero when the body was not read.
	AppliedBytes int `json:"appliedBytes,omitempty"`
}

// Skipped is a type left out on purpose.
type Skipped struct {
	Type   Type   `json:"type"`
	Reason string `json:"reason"`
}

// Failed is a type that could not be listed.
type Failed struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
	Err    error  `json:"-"`
}

// Result is everything one discovery pass found.
type Result struct {
	Objects      []Object  `json:"objects"`
	Scanned      []Type    `json:"scanned"`
	SkippedTypes []Skipped `json:"skippedTypes"`
	NotScanned   []Failed  `json:"notScanned"`
}

// Options says what to list.
type Options struct {
	// Namespace limits namespaced types to one namespace; "" means all.
	// Cluster-scoped types are listed only when Namespace is "".
	Namespace string
	// SkipType returns a non-empty reason to leave a type out.
	SkipType func(Type) string
	// PageSize is the list chunk size (limit); 0 means 500.
	PageSize int64
	// Workers bounds how many types are listed at once; 0 means 4.
	Workers int
	// Progress, when set, is called after each type is listed.
	Progress func(done, total, objects int)
}

// Clients are the API clients discovery uses.
type Clients struct {
	Discovery discovery.DiscoveryInterface
	Metadata  metadata.Interface
	Dynamic   dynamic.Interface
	// Core lists ConfigMap and Secret bodies; made for protobuf
	// (ProtobufConfig), which the API server encodes and adopt decodes
	// several times faster than JSON.
	Core corev1client.CoreV1Interface
}

// Types returns the listable resource types the server prefers, sorted. A
// group whose discovery failed is returned in failed rather than aborting.
func Types(d discovery.DiscoveryInterface) (types []Type, failed []Failed, err error) {
	lists, err := d.ServerPreferredResources()
	var gdf *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &gdf) {
		for gv, e := range gdf.Groups {
			failed = append(failed, Failed{Type: gv.String(), Reason: "API discovery failed: " + e.Error(), Err: e})
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("discover API resources: %w", err)
	}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			types = append(types, Type{Group: gv.Group, Version: gv.Version, Kind: r.Kind, Resource: r.Name, Namespaced: r.Namespaced})
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].String() < types[j].String() })
	sort.Slice(failed, func(i, j int) bool { return failed[i].Type < failed[j].Type })
	return types, failed, nil
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// Collect discovers the types and lists every object of every type that is
// not skipped. A type that cannot be listed (forbidden, failing) goes into
// NotScanned with the reason; it never aborts the scan.
func Collect(ctx context.Context, c Clients, o Options) (*Result, error) {
	types, failed, err := Types(c.Discovery)
	if err != nil {
		return nil, err
	}
	res := &Result{NotScanned: failed}
	var todo []Type
	for _, t := range types {
		if o.Namespace != "" && !t.Namespaced {
			continue
		}
		if o.SkipType != nil {
			if why := o.SkipType(t); why != "" {
				res.SkippedTypes = append(res.SkippedTypes, Skipped{Type: t, Reason: why})
				continue
			}
		}
		todo = append(todo, t)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 4
	}
	type out struct {
		t    Type
		objs []Object
		err  error
	}
	results := make([]out, len(todo))
	var mu sync.Mutex
	done, seen := 0, 0
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, t := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			objs, err := listType(ctx, c, t, o)
			results[i] = out{t: t, objs: objs, err: err}
			if o.Progress != nil {
				mu.Lock()
				done++
				seen += len(objs)
				o.Progress(done, len(todo), seen)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := 0
	for _, r := range results {
		n += len(r.objs)
	}
	// One allocation for all objects, each type's list dropped once copied.
	res.Objects = make([]Object, 0, n)
	for i, r := range results {
		if r.err != nil {
			res.NotScanned = append(res.NotScanned, Failed{Type: r.t.String(), Reason: Reason(r.err), Err: r.err})
			continue
		}
		res.Scanned = append(res.Scanned, r.t)
		res.Objects = append(res.Objects, r.objs...)
		results[i].objs = nil
	}
	sort.SliceStable(res.NotScanned, func(i, j int) bool { return res.NotScanned[i].Type < res.NotScanned[j].Type })
	SortObjects(res.Objects)
	return res, nil
}

// SortObjects orders objects by namespace, group, kind and name. The
// comparison reads the objects in place: copying two of them for each of
// the n log n comparisons was most of the sort of 100,000.
func SortObjects(objs []Object) {
	sort.Slice(objs, func(i, j int) bool {
		a, b := &objs[i], &objs[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Type.Group != b.Type.Group {
			return a.Type.Group < b.Type.Group
		}
		if a.Type.Kind != b.Type.Kind {
			return a.Type.Kind < b.Type.Kind
		}
		return a.Name < b.Name
	})
}

// withData says whether a type's body must be read to measure its data.
func withData(t Type) bool {
	return t.Group == "" && (t.Kind == "ConfigMap" || t.Kind == "Secret")
}

func listType(ctx context.Context, c Clients, t Type, o Options) ([]Object, error) {
	ns := o.Namespace
	if !t.Namespaced {
		ns = ""
	}
	var fn pager.ListPageFunc
	pageSize := o.PageSize
	if pageSize == 0 {
		pageSize = 500
	}
	if withData(t) {
		fn = BodyPages(c.Core, t.Kind, ns, pageSize)
	} else {
		fn = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.Metadata.Resource(t.GVR()).Namespace(ns).List(ctx, opts)
		}
	}
	// The first page says how many objects the type holds (its remaining
	// count), so the slice is made once at that size instead of doubling
	// through the list. The pager fetches pages ahead on its own
	// goroutine: the count crosses over atomically.
	var total atomic.Int64
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		l, err := fn(ctx, opts)
		if err == nil {
			if m, merr := meta.ListAccessor(l); merr == nil && m.GetRemainingItemCount() != nil {
				total.CompareAndSwap(0, int64(meta.LenList(l))+*m.GetRemainingItemCount())
			}
		}
		return l, err
	})
	p.PageSize = pageSize
	// Transient server faults and an expired continue token (410) restart
	// the type from scratch, with client-go's backoff, so a result is whole
	// or absent: never a silent part.
	var objs []Object
	err := retry.OnError(retry.DefaultBackoff, Transient, func() error {
		objs = objs[:0]
		return p.EachListItem(ctx, metav1.ListOptions{}, func(item runtime.Object) error {
			if n := int(total.Load()); cap(objs) < n && len(objs) == 0 {
				objs = make([]Object, 0, n)
			}
			switch v := item.(type) {
			case *metav1.PartialObjectMetadata:
				objs = append(objs, fromMeta(t, &v.ObjectMeta, 0))
			case *corev1.ConfigMap:
				objs = append(objs, fromConfigMap(t, v))
			case *corev1.Secret:
				objs = append(objs, fromSecret(t, v))
			default:
				return fmt.Errorf("unexpected list item %T", item)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// Transient reports whether a list error is worth retrying: server errors,
// throttling that outlasted client-go's own Retry-After handling, an expired
// continue token, and connections dropped mid-response.
func Transient(err error) bool {
	switch {
	case apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServerTimeout(err), apierrors.IsUnexpectedServerError(err),
		apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return true
	case utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		c := se.Status().Code
		return c == 500 || c == 502 || c == 503 || c == 504
	}
	return false
}

func fromMeta(t Type, m *metav1.ObjectMeta, dataBytes int) Object {
	o := Object{
		Type: t, Namespace: unique.Make(m.Namespace).Value(), Name: m.Name, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, Budget: budget.MeasureBudget(m.Annotations), DataBytes: dataBytes,
	}
	for k, v := range m.Annotations {
		// last-applied is never kept: it is large, and on a Secret it holds
		// the Secret's values.
		if len(v) > MaxKeptAnnotationValue || k == budget.LastAppliedKey {
			o.Elided = append(o.Elided, k)
			continue
		}
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[k] = v
	}
	sort.Strings(o.Elided)
	for _, r := range m.OwnerReferences {
		o.Owners = append(o.Owners, r.Kind+"/"+r.Name)
	}
	for _, f := range m.ManagedFields {
		o.Managers = append(o.Managers, Manager{Manager: unique.Make(f.Manager).Value(), Operation: string(f.Operation), Subresource: f.Subresource})
	}
	return o
}

// Reason says in a few words why listing a type failed.
func Reason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: the credentials may not list this type (403)"
	case apierrors.IsUnauthorized(err):
		return "unauthorized (401)"
	case apierrors.IsNotFound(err):
		return "the type is no longer served (404)"
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return "the list expired while paging (410): " + err.Error()
	case apierrors.IsTooManyRequests(err):
		return "throttled by the API server (429) after retries: " + err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout: no answer within --request-timeout, after retries: " + err.Error()
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return fmt.Sprintf("HTTP %d from the API server after retries: %s", se.Status().Code, se.Status().Message)
	}
	return err.Error()
}
