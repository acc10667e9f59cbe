// Package argoapp owns everything Argo CD: how Argo CD marks the objects it
// manages (tracking method, tracking ids, instance labels), the Application
// model rendered from a plan, and reading sync and health. It never writes to
// the cluster objects that Applications manage.
package argoapp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/argoproj/argo-cd/v2/util/security"

	"github.com/adopt-dev/adopt/adopt/objref"
)

// TrackingMethod is Argo CD's application.resourceTrackingMethod.
type TrackingMethod string

// The tracking methods Argo CD supports.
const (
	TrackingAnnotation         TrackingMethod = "annotation"
	TrackingLabel              TrackingMethod = "label"
	TrackingAnnotationAndLabel TrackingMethod = "annotation+label"
)

// Well-known keys.
const (
	AnnotationTrackingID     = "argocd.argoproj.io/tracking-id"
	AnnotationInstallationID = "argocd.argoproj.io/installation-id"
	DefaultInstanceLabelKey  = "app.kubernetes.io/instance"
	ConfigMapName            = "argocd-cm"
	ParamsConfigMapName      = "argocd-cmd-params-cm"
	keyAppNamespaces         = "application.namespaces"
	keyTrackingMethod        = "application.resourceTrackingMethod"
	keyInstanceLabelKey      = "application.instanceLabelKey"
	keyInstallationID        = "installationID"
	controllerName           = "argocd-application-controller"
)

// applicationResource is the Argo CD Application resource, listed to check
// tracking ids.
var applicationResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// Tracking is how the Argo CD installation marks the objects it manages.
type Tracking struct {
	Method           TrackingMethod `json:"method" yaml:"method"`
	InstanceLabelKey string         `json:"instanceLabelKey" yaml:"instanceLabelKey"`
	InstallationID   string         `json:"installationID,omitempty" yaml:"installationID,omitempty"`
	// Namespace is Argo CD's control-plane namespace.
	Namespace string `json:"namespace" yaml:"namespace"`
	// Installed is false when argocd-cm was not found.
	Installed bool `json:"installed" yaml:"installed"`
	// Version is the Argo CD version used to pick the default method
	// ("" when unknown); VersionSource says where it came from.
	Version       string `json:"version,omitempty" yaml:"version,omitempty"`
	VersionSource string `json:"versionSource,omitempty" yaml:"versionSource,omitempty"`
	// Reason says where Method came from, for the user.
	Reason string `json:"reason" yaml:"reason"`
	// AppNamespaces is application.namespaces of argocd-cmd-params-cm:
	// the namespaces besides Namespace whose Applications Argo CD runs
	// (Argo CD's patterns: a glob, or a regular expression between
	// slashes). AppNamespacesRead is false when it could not be read, and
	// then an Application in any namespace counts as running.
	AppNamespaces     []string `json:"appNamespaces,omitempty" yaml:"appNamespaces,omitempty"`
	AppNamespacesRead bool     `json:"appNamespacesRead,omitempty" yaml:"appNamespacesRead,omitempty"`
}

// ReadTracking reads the tracking configuration from argocd-cm in namespace
// ns. version overrides the Argo CD version; when empty it is read from the
// image tag of the argocd-application-controller workload in ns. A missing
// argocd-cm is not an error: Installed is false and the version's default
// method is assumed (annotation when the version is unknown).
func ReadTracking(ctx context.Context, c kubernetes.Interface, ns, version string) (Tracking, error) {
	d, err := ResolveVersion(ctx, VersionQuery{Flag: version, Kube: c, Namespace: ns})
	if err != nil {
		return Tracking{}, err
	}
	version, source := d.Raw, d.Source
	if !d.Version.Known() {
		version = ""
	}
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t := TrackingFromConfig(nil, ns, version)
		t.VersionSource = source
		t.Reason = fmt.Sprintf("%s not found in namespace %q (Argo CD not installed there?); assuming %q, %s", ConfigMapName, ns, t.Method, defaultWhy(version))
		return t, nil
	case apierrors.IsForbidden(err):
		t := TrackingFromConfig(nil, ns, version)
		t.VersionSource = source
		t.Reason = fmt.Sprintf("may not read ConfigMap %s/%s (403); assuming %q, %s", ns, ConfigMapName, t.Method, defaultWhy(version))
		return t, nil
	case err != nil:
		return Tracking{}, fmt.Errorf("read ConfigMap %s/%s: %w", ns, ConfigMapName, err)
	}
	t := TrackingFromConfig(cm, ns, version)
	t.VersionSource = source
	t.Installed = true
	params, err := c.CoreV1().ConfigMaps(ns).Get(ctx, ParamsConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		t.AppNamespacesRead = true // Argo CD's default: its own namespace only
	case apierrors.IsForbidden(err):
		// Not known: every namespace counts as watched.
	case err != nil:
		return Tracking{}, fmt.Errorf("read ConfigMap %s/%s: %w", ns, ParamsConfigMapName, err)
	default:
		t.AppNamespaces, t.AppNamespacesRead = appNamespaces(params.Data[keyAppNamespaces]), true
	}
	return t, nil
}

// appNamespaces splits application.namespaces as Argo CD does: a comma
// separated list, each entry trimmed, empty entries dropped.
func appNamespaces(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Runs reports whether Argo CD reconciles Applications in namespace ns: its
// own namespace, or one that application.namespaces matches, by Argo CD's
// own rule (or any, when that setting could not be read).
func (t Tracking) Runs(ns string) bool {
	return !t.AppNamespacesRead || security.IsNamespaceEnabled(ns, t.Namespace, t.AppNamespaces)
}

// NotRun says why the Application key (namespace/name) in a namespace Argo
// CD does not watch never runs, and what to do.
func (t Tracking) NotRun(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	set := "not set"
	if len(t.AppNamespaces) > 0 {
		set = fmt.Sprintf("%q", strings.Join(t.AppNamespaces, ","))
	}
	return fmt.Sprintf("Application %s is not run by Argo CD: namespace %s is neither Argo CD's namespace %s nor in %s of %s/%s (%s); add %s there (and to its AppProject's sourceNamespaces) and restart argocd-server and the application controller, or move the Application to %s",
		key, ns, t.Namespace, keyAppNamespaces, t.Namespace, ParamsConfigMapName, set, ns, t.Namespace)
}

// defaultMethod is Argo CD's default tracking method for the version
// string v (DefaultTrackingMethod; annotation when v does not parse).
func defaultMethod(v string) TrackingMethod {
	pv, _ := ParseVersion(v)
	return DefaultTrackingMethod(pv)
}

// defaultWhy says whose default defaultMethod chose.
func defaultWhy(v string) string {
	if pv, err := ParseVersion(v); err == nil && pv.Known() {
		return "Argo CD " + v + "'s default"
	}
	return "Argo CD 3's default (version unknown)"
}

// TrackingFromConfig derives the tracking configuration from argocd-cm's
// contents (cm may be nil) and the Argo CD version ("" when unknown).
func TrackingFromConfig(cm *corev1.ConfigMap, ns, version string) Tracking {
	t := Tracking{Method: defaultMethod(version), InstanceLabelKey: DefaultInstanceLabelKey, Namespace: ns, Version: version}
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	if v := strings.TrimSpace(data[keyInstanceLabelKey]); v != "" {
		t.InstanceLabelKey = v
	}
	t.InstallationID = strings.TrimSpace(data[keyInstallationID])
	switch m := TrackingMethod(strings.TrimSpace(data[keyTrackingMethod])); m {
	case TrackingAnnotation, TrackingLabel, TrackingAnnotationAndLabel:
		t.Method = m
		t.Reason = fmt.Sprintf("%s in %s/%s", keyTrackingMethod, ns, ConfigMapName)
	case "":
		t.Reason = fmt.Sprintf("%s not set in %s/%s; assuming %q, %s", keyTrackingMethod, ns, ConfigMapName, t.Method, defaultWhy(version))
	default:
		t.Reason = fmt.Sprintf("unknown %s %q in %s/%s; assuming %q as Argo CD does", keyTrackingMethod, m, ns, ConfigMapName, t.Method)
	}
	return t
}

// Mark is what an object's labels and annotations claim about its owner,
// under one tracking configuration.
type Mark struct {
	// App is the qualified Application name the object names
	// (<app-namespace>_<app-name> or <app-name>); "" when unmarked.
	App string
	// ID is the parsed tracking id (annotation methods only).
	ID *TrackingID
	// Foreign is set when the object carries a tracking id for another
	// Argo CD installation (installation-id differs).
	Foreign string
}

// MarkOf reads the owner an object claims, following Argo CD's own rules:
// label tracking reads the instance label; annotation tracking (and
// annotation+label) reads the tracking id, and only when the object's
// installation-id matches the installation's.
func (t Tracking) MarkOf(labels, annotations map[string]string) Mark {
	switch t.Method {
	case TrackingLabel:
		return Mark{App: labels[t.InstanceLabelKey]}
	default:
		raw := annotations[AnnotationTrackingID]
		if raw == "" {
			return Mark{}
		}
		if annotations[AnnotationInstallationID] != t.InstallationID {
			return Mark{Foreign: fmt.Sprintf("tracking id belongs to installation %q, this Argo CD is %q", annotations[AnnotationInstallationID], t.InstallationID)}
		}
		id, err := ParseTrackingID(raw)
		if err != nil {
			return Mark{}
		}
		return Mark{App: id.AppQualifiedName(), ID: &id}
	}
}

// TrackedBy reports which Application marks an object as its own, judged by
// the object's labels and annotations alone. The empty string means the
// object carries no tracking under this method.
func (t Tracking) TrackedBy(labels, annotations map[string]string) string {
	return t.MarkOf(labels, annotations).App
}

// AppKey is the namespace/name of the Application an app part names: a bare
// name lives in the control-plane namespace.
func (t Tracking) AppKey(qualified string) string {
	if ns, name, ok := strings.Cut(qualified, "_"); ok && ns != "" && name != "" {
		return ns + "/" + name
	}
	return t.Namespace + "/" + qualified
}

// Applications is the set of Argo CD Applications in the cluster.
type Applications struct {
	// Installed is false when the Application CRD is not served.
	Installed bool `json:"installed" yaml:"installed"`
	// Verified is false when the Applications could not be listed: tracking
	// ids are then taken at their word.
	Verified bool `json:"verified" yaml:"verified"`
	// Names holds namespace/name of every Application.
	Names []string `json:"names,omitempty" yaml:"names,omitempty"`
	// Note says what was found, for the user.
	Note string `json:"note" yaml:"note"`
	set  map[string]bool
	// Specs are what each Application (deploying here) syncs, by
	// namespace/name.
	Specs []Spec `json:"-" yaml:"-"`
	// elsewhere maps Applications that deploy to another cluster to their
	// destination (hub and spoke, ListApplicationsTo).
	elsewhere map[string]string
	// here is the Here the Applications were listed with (nil: all).
	here Here
	// AppSets are the ApplicationSets (ListApplicationSets), whose Git
	// generators AddGenerated evaluates; AppSetsNote says why they could
	// not be listed.
	AppSets     []AppSet `json:"-" yaml:"-"`
	AppSetsNote string   `json:"-" yaml:"-"`
}

// NewApplications builds the set from namespace/name keys.
func NewApplications(keys []string) Applications {
	a := Applications{Installed: true, Verified: true, set: map[string]bool{}}
	for _, k := range keys {
		a.set[k] = true
	}
	a.Names = append([]string(nil), keys...)
	sort.Strings(a.Names)
	a.Note = fmt.Sprintf("%d Argo CD Applications found", len(a.Names))
	return a
}

// Has reports whether namespace/name is an Application.
func (a Applications) Has(key string) bool { return a.set[key] }

// Deploys says whether an Application with this destination (server or
// name) deploys to the cluster the Applications were listed for (the
// Here of ListApplicationsTo); any does when none was chosen.
func (a Applications) Deploys(server, name string) bool { return a.here == nil || a.here(server, name) }

// ListApplications lists every Application (all namespaces), with what
// each syncs. When the CRD is absent it says Argo CD is not installed and
// returns no error; when listing is forbidden it says ids cannot be
// verified.
func ListApplications(ctx context.Context, dyn dynamic.Interface) (Applications, error) {
	return ListApplicationsTo(ctx, dyn, nil)
}

// notListed is what a failed list of Applications (on: where, "" for this
// cluster) leaves tracking: no CRD means Argo CD is not installed and marks
// are taken at their word; a 403 means ids are not checked; anything else
// is an error.
func notListed(err error, on string) (Applications, error) {
	switch {
	case apierrors.IsNotFound(err):
		return Applications{Note: "Argo CD is not installed" + on + " (no applications.argoproj.io CRD): tracking marks are taken at their word"}, nil
	case apierrors.IsForbidden(err):
		return Applications{Installed: true, Note: "may not list applications.argoproj.io" + on + " (403): tracking ids are not checked against Applications"}, nil
	}
	return Applications{}, fmt.Errorf("list argoproj.io/Application%s: %w", on, err)
}

// Tracked is the verdict on one object's tracking.
type Tracked struct {
	// App is the Application that really tracks the object; "" when none.
	App string
	// Stale says why a tracking mark does not count; "" when it counts or
	// there is none.
	Stale string
}

// Check decides whether the object r, with its labels and annotations, is
// tracked by an existing Application. A mark is stale when it names an
// Application that does not exist (checked only when the Applications could
// be listed), or (annotation methods) names another object than the
// carrier, as Argo CD's self-reference check does.
func (t Tracking) Check(r objref.Ref, labels, annotations map[string]string, apps Applications) Tracked {
	m := t.MarkOf(labels, annotations)
	if m.Foreign != "" {
		return Tracked{Stale: m.Foreign}
	}
	if m.App == "" {
		return Tracked{}
	}
	if m.ID != nil && !m.ID.Names(r) {
		return Tracked{Stale: fmt.Sprintf("tracking id %q names %s, not this object (copied annotation?)", m.ID.String(), m.ID.Ref.String())}
	}
	key := t.AppKey(m.App)
	if apps.Verified && !apps.Has(key) {
		if dest := apps.elsewhere[key]; dest != "" {
			return Tracked{Stale: fmt.Sprintf("names Application %s, which deploys to %s, not this cluster", key, dest)}
		}
		return Tracked{Stale: fmt.Sprintf("names Application %s, which does not exist", key)}
	}
	if ns, _, _ := strings.Cut(key, "/"); !t.Runs(ns) {
		return Tracked{Stale: "names " + t.NotRun(key)}
	}
	// Without the Application CRD (Argo CD not installed) or without the
	// right to list Applications, a well-formed mark is taken at its word;
	// the plan says so once.
	return Tracked{App: m.App}
}

// TrackingID is the value of argocd.argoproj.io/tracking-id:
// <app>:<group>/<kind>:<namespace>/<name>, where <app> is
// <app-namespace>_<app-name> for Applications outside the control-plane
// namespace and the group is empty for core kinds.
type TrackingID struct {
	AppNamespace string `json:"appNamespace,omitempty" yaml:"appNamespace,omitempty"`
	AppName      string `json:"appName" yaml:"appName"`
	// Ref is the object it names (group, kind, namespace, name).
	objref.Ref `yaml:",inline"`
}

// AppQualifiedName is <app-namespace>_<app-name>, or the bare name.
func (id TrackingID) AppQualifiedName() string {
	if id.AppNamespace == "" {
		return id.AppName
	}
	return id.AppNamespace + "_" + id.AppName
}

// String renders the id the way Argo CD writes it.
func (id TrackingID) String() string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", id.AppQualifiedName(), id.Group, id.Kind, id.Namespace, id.Name)
}

// Names is Argo CD's self-reference check: the id names r when group, kind
// and name match and the namespace matches or r is cluster-scoped (a
// cluster-scoped object carries the Application's destination namespace).
func (id TrackingID) Names(r objref.Ref) bool {
	return (r.Namespace == id.Namespace || r.Namespace == "") && r.Name == id.Name && r.Group == id.Group && r.Kind == id.Kind
}

// ParseTrackingID parses a tracking-id annotation value the way Argo CD
// does: three colon-separated parts (the last may hold colons, as RBAC names
// do), then <group>/<kind> and <namespace>/<name> with exactly one slash.
func ParseTrackingID(s string) (TrackingID, error) {
	if s == "" {
		return TrackingID{}, fmt.Errorf("empty tracking id")
	}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return TrackingID{}, fmt.Errorf("tracking id %q: want <app>:<group>/<kind>:<namespace>/<name>", s)
	}
	app, gk, nn := parts[0], parts[1], parts[2]
	g := strings.Split(gk, "/")
	if len(g) != 2 || g[1] == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: %q is not <group>/<kind>", s, gk)
	}
	n := strings.Split(nn, "/")
	if len(n) != 2 || n[1] == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: %q is not <namespace>/<name>", s, nn)
	}
	if app == "" {
		return TrackingID{}, fmt.Errorf("tracking id %q: empty application name", s)
	}
	id := TrackingID{AppName: app, Ref: objref.Ref{Group: g[0], Kind: g[1], Namespace: n[0], Name: n[1]}}
	if appNS, appName, ok := strings.Cut(app, "_"); ok && appNS != "" && appName != "" {
		id.AppNamespace, id.AppName = appNS, appName
	}
	return id, nil
}

// keyKustomizeBuildOptions is argocd-cm's kustomize.buildOptions, the
// options the repo-server passes to `kustomize build`.
const keyKustomizeBuildOptions = "kustomize.buildOptions"

// KustomizeBuildOptions reads argocd-cm's kustomize.buildOptions in
// namespace ns. A missing argocd-cm or key is "" (kustomize's defaults);
// a ConfigMap that cannot be read is an error the caller may note.
func KustomizeBuildOptions(ctx context.Context, c kubernetes.Interface, ns string) (string, error) {
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read ConfigMap %s/%s: %w", ns, ConfigMapName, err)
	}
	return cm.Data[keyKustomizeBuildOptions], nil
}

// LabelMaxLength is the longest label value Kubernetes accepts, so the
// longest Application name label tracking can write.
const LabelMaxLength = 63

// TruncatedLabel is the instance label Argo CD writes for Application app
// under annotation+label tracking, where the label is informational: cut to
// LabelMaxLength, then shortened until it ends in a letter or digit.
func TruncatedLabel(app string) string {
	if len(app) <= LabelMaxLength {
		return app
	}
	v := app[:LabelMaxLength]
	for len(v) > 1 && !isAlnum(v[len(v)-1]) {
		v = v[:len(v)-1]
	}
	return v
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
