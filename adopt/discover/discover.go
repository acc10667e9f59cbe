// Package discover is the collector: it finds every listable resource type
// in the cluster and lists its objects with pagination, keeping only the
// facts the later stages need (identity, labels, small annotations, the
// annotation budget, field managers, owners, data size). It never writes to
// the cluster and never keeps a Secret's values.
package discover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
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
// so memory does not follow body size. Each worker's page buffer grows
// to the largest page it reads, so bodyPageBytes bounds what bodies can
// add to the heap: at 4 MB, 4x larger bodies raised a 20,000-object plan's
// peak RSS by 14%; at 2 MB, by 1 to 3%, in the same time.
const (
	bodyPageFirst = 50
	bodyPageMin   = 10
	bodyPageBytes = 2 << 20
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
	Type            Type   `json:"-"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	// Labels may be shared with other objects that carry the same: read
	// them, never write to them.
	Labels map[string]string `json:"labels,omitempty"`
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

// Ref names the object (no allocation: it copies the strings' headers).
func (o *Object) Ref() objref.Ref {
	return objref.Ref{Group: o.Type.Group, Version: o.Type.Version, Kind: o.Type.Kind, Resource: o.Type.Resource, Namespace: o.Namespace, Name: o.Name}
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
	// Namespaces limit namespaced types to these namespaces; none means
	// all. Cluster-scoped types are listed only when there are none.
	Namespaces []string
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
	// Core reads ConfigMap and Secret bodies to export them; made for
	// protobuf (ProtobufConfig), which the API server encodes and client-go
	// decodes several times faster than JSON.
	Core corev1client.CoreV1Interface
	// Lists is what Collect lists with (ListClient).
	Lists rest.Interface
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
		if len(o.Namespaces) > 0 && !t.Namespaced {
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
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer // each page is read into it, in turn
			var sets labelSets   // and its objects' labels shared through it
			for i := range next {
				t := todo[i]
				objs, err := listType(ctx, c, t, o, &buf, &sets)
				results[i] = out{t: t, objs: objs, err: err}
				if o.Progress != nil {
					mu.Lock()
					done++
					seen += len(objs)
					o.Progress(done, len(todo), seen)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range todo {
		next <- i
	}
	close(next)
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

// listType lists every object of t (in each of o.Namespaces, or all),
// page by page into buf, keeping each object's facts.
func listType(ctx context.Context, c Clients, t Type, o Options, buf *bytes.Buffer, sets *labelSets) ([]Object, error) {
	if !t.Namespaced || len(o.Namespaces) == 0 {
		return listIn(ctx, c, t, "", o, buf, sets)
	}
	var all []Object
	for _, ns := range o.Namespaces {
		objs, err := listIn(ctx, c, t, ns, o, buf, sets)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = objs
			continue
		}
		all = append(all, objs...)
	}
	return all, nil
}

// listIn lists every object of t in namespace ns ("" for all).
func listIn(ctx context.Context, c Clients, t Type, ns string, o Options, buf *bytes.Buffer, sets *labelSets) ([]Object, error) {
	pageSize := o.PageSize
	if pageSize == 0 {
		pageSize = 500
	}
	read := wireBody(t)
	// Transient server faults and an expired continue token (410) restart
	// the type from scratch, with client-go's backoff, so a result is whole
	// or absent: never a silent part.
	var objs []Object
	err := retry.OnError(retry.DefaultBackoff, Transient, func() error {
		objs = objs[:0]
		limit, next := pageSize, ""
		if read != nil {
			limit = min(bodyPageFirst, pageSize)
		}
		for {
			if err := getPage(ctx, c.Lists, t, ns, limit, next, buf); err != nil {
				return err
			}
			first := len(objs)
			page, err := eachItem(t, buf.Bytes(), func(b []byte) error {
				ob, err := wireObject(t, b, read, sets)
				objs = append(objs, ob)
				return err
			})
			if err != nil {
				return err
			}
			// The first page says how many objects the type holds, so the
			// slice is made once at that size instead of doubling.
			if first == 0 && page.remaining > 0 {
				objs = append(make([]Object, 0, int64(len(objs))+page.remaining), objs...)
			}
			if page.next == "" {
				return nil
			}
			if n := int64(len(objs) - first); read != nil && n > 0 {
				var b int64
				for _, o := range objs[first:] {
					b += bodyBytes(o.DataBytes, o.Budget.AnnotationBytes)
				}
				limit = nextLimit(n, b, pageSize)
			}
			next = page.next
		}
	})
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// wireBody reads the data fields of t's objects when it is listed with
// bodies (ConfigMap, Secret), else nil.
func wireBody(t Type) func(protowire.Number, []byte, uint64, *bodyLen) error {
	switch {
	case !withData(t):
		return nil
	case t.Kind == "ConfigMap":
		return configMapBody
	}
	return secretBody
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
