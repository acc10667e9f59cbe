package argoapp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/gitops"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// ApplicationGVR is the Application custom resource.
var ApplicationGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// Sync, operation and health values adopt looks for.
const (
	PhaseSucceeded = "Succeeded"
	PhaseRunning   = "Running"
	PhaseFailed    = "Failed"
	PhaseError     = "Error"
	SyncSynced     = "Synced"
	HealthHealthy  = "Healthy"
)

// AppState is what adopt reads of an Application's sync and health.
type AppState struct {
	Name      string `json:"name" yaml:"name"`
	Namespace string `json:"namespace" yaml:"namespace"`
	Found     bool   `json:"found" yaml:"found"`
	// Operation is true while .operation is set (a sync was asked for and
	// not yet picked up) or the last operation is Running.
	Operation bool   `json:"operationInProgress" yaml:"operationInProgress"`
	Phase     string `json:"phase,omitempty" yaml:"phase,omitempty"`
	Message   string `json:"message,omitempty" yaml:"message,omitempty"`
	// Revision is the revision of the last sync operation.
	Revision string `json:"revision,omitempty" yaml:"revision,omitempty"`
	// History are the revisions deployed by successful syncs, oldest first.
	History       []string        `json:"history,omitempty" yaml:"history,omitempty"`
	Sync          string          `json:"sync,omitempty" yaml:"sync,omitempty"`
	Health        string          `json:"health,omitempty" yaml:"health,omitempty"`
	HealthMessage string          `json:"healthMessage,omitempty" yaml:"healthMessage,omitempty"`
	Resources     []ResourceState `json:"-" yaml:"-"`
	// SyncOptions are the Application's spec.syncPolicy.syncOptions.
	SyncOptions []string `json:"-" yaml:"-"`
}

// Terminal reports whether the last sync ended in failure and nothing is
// running or asked for: a retry in progress keeps the phase Running, and
// automated sync does not try a revision again after it failed, so waiting
// longer cannot make the Application ready; a new sync must be started.
func (s AppState) Terminal() bool {
	return s.Found && !s.Operation && (s.Phase == PhaseFailed || s.Phase == PhaseError)
}

// ResourceState is one entry of status.resources.
type ResourceState struct {
	objref.Ref
	Status, Health, HealthMessage string
}

// StatusReader reads an Application's state. KubeStatus reads the
// Application custom resources through the Kubernetes API (Kubernetes
// mode); API reads them through argocd-server (Argo CD API mode).
type StatusReader interface {
	Application(ctx context.Context, name string) (AppState, error)
}

// Syncer starts a sync of an Application at revision (when set): server-side
// apply, no pruning, with the options SyncOptions gives for Argo CD v. It
// refuses while another operation is running. KubeStatus and API are
// Syncers.
type Syncer interface {
	Sync(ctx context.Context, name, revision string, v Version) error
}

// SplitName reads an Application's name as readers and syncers take it:
// "namespace/name" for one in another namespace than ns (apps in any
// namespace), or a plain name in ns.
func SplitName(name, ns string) (string, string) {
	if i := strings.IndexByte(name, '/'); i > 0 {
		return name[:i], name[i+1:]
	}
	return ns, name
}

// KubeStatus reads Applications in Namespace through the Kubernetes API
// (and in another namespace when given "namespace/name", SplitName).
type KubeStatus struct {
	Client    dynamic.Interface
	Namespace string
}

// Application reads one Application. A missing Application is not an
// error: Found is false.
func (k KubeStatus) Application(ctx context.Context, name string) (AppState, error) {
	k.Namespace, name = SplitName(name, k.Namespace)
	s := AppState{Name: name, Namespace: k.Namespace}
	u, err := k.Client.Resource(ApplicationGVR).Namespace(k.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read Application %s/%s: %w", k.Namespace, name, err)
	}
	return StateOf(u), nil
}

// BySource names the one Application in Namespace that syncs path of
// repository repoURL (SameRepo; any repository when "") to destination
// namespace ns: "" when none or more than one does. finalize finds by it
// an Application renamed in review before it merged.
func (k KubeStatus) BySource(ctx context.Context, repoURL, path, ns string) (string, error) {
	list, err := k.Client.Resource(ApplicationGVR).Namespace(k.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list Applications in %s: %w", k.Namespace, err)
	}
	var found []string
	for _, u := range list.Items {
		str := func(p ...string) string { v, _, _ := unstructured.NestedString(u.Object, p...); return v }
		if SameSource(str("spec", "source", "repoURL"), str("spec", "source", "path"), repoURL, path) && str("spec", "destination", "namespace") == ns {
			found = append(found, u.GetName())
		}
	}
	if len(found) != 1 {
		return "", nil
	}
	return found[0], nil
}

// Changes watches Application name through the Kubernetes API and sends
// after each event. The channel is closed when ctx ends or the watch
// breaks; Wait then keeps polling.
func (k KubeStatus) Changes(ctx context.Context, name string) <-chan struct{} {
	k.Namespace, name = SplitName(name, k.Namespace)
	out := make(chan struct{}, 1)
	w, err := k.Client.Resource(ApplicationGVR).Namespace(k.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default: // a wake-up is already pending
				}
			}
		}
	}()
	return out
}

// StateOf extracts the state of an Application object.
func StateOf(u *unstructured.Unstructured) AppState {
	s := AppState{Name: u.GetName(), Namespace: u.GetNamespace(), Found: true}
	str := func(path ...string) string { v, _, _ := unstructured.NestedString(u.Object, path...); return v }
	_, s.Operation, _ = unstructured.NestedMap(u.Object, "operation")
	s.Phase = str("status", "operationState", "phase")
	s.Message = str("status", "operationState", "message")
	if s.Phase == PhaseRunning || s.Phase == "Terminating" {
		s.Operation = true
	}
	s.Revision = str("status", "operationState", "syncResult", "revision")
	if s.Revision == "" {
		if rs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "operationState", "syncResult", "revisions"); len(rs) > 0 {
			s.Revision = rs[0]
		}
	}
	hist, _, _ := unstructured.NestedSlice(u.Object, "status", "history")
	for _, h := range hist {
		if m, ok := h.(map[string]any); ok {
			if r, _ := m["revision"].(string); r != "" {
				s.History = append(s.History, r)
			}
		}
	}
	s.SyncOptions, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "syncPolicy", "syncOptions")
	s.Sync = str("status", "sync", "status")
	s.Health = str("status", "health", "status")
	s.HealthMessage = str("status", "health", "message")
	res, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, r := range res {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		get := func(k ...string) string { v, _, _ := unstructured.NestedString(m, k...); return v }
		s.Resources = append(s.Resources, ResourceState{
			Ref:    objref.Ref{Group: get("group"), Version: get("version"), Kind: get("kind"), Namespace: get("namespace"), Name: get("name")},
			Status: get("status"), Health: get("health", "status"), HealthMessage: get("health", "message"),
		})
	}
	return s
}

// Want is what finalize needs of an Application before it cleans up.
type Want struct {
	// Revision, when set, is the adoption commit: a successful sync must
	// have deployed it (it is in the history), or a later one since.
	Revision string
	// AllowHealth are health statuses accepted besides Healthy.
	AllowHealth []string
	// Check is a last condition, asked when all others hold (for example
	// that every adopted object carries the tracking id); it returns what
	// is still missing, or "".
	Check func(ctx context.Context, s AppState) (string, error)
}

// Waiting says what the Application still lacks, or "" when it is ready.
func (s AppState) Waiting(w Want) string {
	switch {
	case !s.Found:
		return "Application not found"
	case s.Operation:
		return "a sync operation is running"
	case s.Phase == "" && len(s.History) == 0:
		return "no sync yet (use --sync to start one)"
	case s.Phase != PhaseSucceeded:
		return fmt.Sprintf("last sync %s: %s", s.Phase, gitops.OneLine(s.Message))
	case w.Revision != "" && !slices.Contains(s.History, w.Revision) && s.Revision != w.Revision:
		return fmt.Sprintf("revision %s not synced yet (last synced %s)", short(w.Revision), short(s.Revision))
	case s.Sync != SyncSynced:
		return "sync status " + orUnknown(s.Sync)
	case s.Health != HealthHealthy && !slices.Contains(w.AllowHealth, s.Health):
		msg := "health " + orUnknown(s.Health)
		if s.HealthMessage != "" {
			msg += ": " + gitops.OneLine(s.HealthMessage)
		}
		return msg
	}
	return ""
}

// Watcher is a StatusReader that can also say when an Application changes
// (a Kubernetes watch, or argocd-server's Watch in API mode). Wait then reads again at once
// after each change, not only every interval.
type Watcher interface {
	// Changes receives a value after each change of Application name, until
	// ctx ends or the watch breaks; then it is closed.
	Changes(ctx context.Context, name string) <-chan struct{}
}

// Wait reads r every interval, and after each change when r is a Watcher,
// until the Application has what w asks for, or timeout passes, or ctx
// ends. progress, when set, is called whenever what it waits for changes.
// It returns the last state read and what was still missing ("" when
// ready). A sync that failed for good (AppState.Terminal) ends the wait at
// once: no timeout can mend it. Reads are not cut short by the timeout: the last one, made when
// the timeout passes, decides.
func Wait(ctx context.Context, r StatusReader, name string, w Want, interval, timeout time.Duration, progress func(AppState, string)) (AppState, string, error) {
	var last AppState
	waiting, said := "", "\x00"
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var changes <-chan struct{}
	if wr, ok := r.(Watcher); ok {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		changes = wr.Changes(wctx, name)
	}
	for late := false; ; {
		s, err := r.Application(ctx, name)
		if err != nil {
			return last, waiting, err
		}
		last = s
		waiting = s.Waiting(w)
		if waiting == "" && w.Check != nil {
			if waiting, err = w.Check(ctx, s); err != nil {
				return last, waiting, err
			}
		}
		if progress != nil && waiting != said {
			progress(s, waiting)
			said = waiting
		}
		if waiting == "" || late || s.Terminal() {
			return last, waiting, nil
		}
		select {
		case <-ctx.Done():
			return last, waiting, ctx.Err()
		case <-deadline.C:
			late = true
		case <-tick.C:
		case _, ok := <-changes:
			if !ok {
				changes = nil // the watch broke: keep polling
			}
		}
	}
}

// Sync options adopt sets on the syncs it starts.
const (
	OptionServerSideApply          = "ServerSideApply=true"
	OptionNoClientSideApplyMigrate = "ClientSideApplyMigration=false"
)

// SyncOptions are the options of a sync that adopt starts, given the
// Application's own spec.syncPolicy.syncOptions. A sync operation's options
// replace the Application's (argocd-server and the controller read only the
// operation's), so the Application's are kept, ServerSideApply=true replaces
// any ServerSideApply option, and on the Argo CD versions where
// CSAMigrationTrap holds ClientSideApplyMigration=false is added unless the
// Application says otherwise.
func SyncOptions(appOptions []string, v Version) []string {
	var out []string
	csa := false
	for _, o := range appOptions {
		switch {
		case strings.HasPrefix(o, "ServerSideApply="):
			continue
		case strings.HasPrefix(o, "ClientSideApplyMigration="):
			csa = true
		}
		out = append(out, o)
	}
	out = append(out, OptionServerSideApply)
	if CSAMigrationTrap(v) && !csa {
		out = append(out, OptionNoClientSideApplyMigrate)
	}
	return out
}

// SyncOperation is the .operation that KubeStatus.Sync sets: a sync by
// adopt with the given options and no pruning.
func SyncOperation(revision string, options []string) map[string]any {
	opts := make([]any, 0, len(options))
	for _, o := range options {
		opts = append(opts, o)
	}
	sync := map[string]any{"prune": false, "syncOptions": opts}
	if revision != "" {
		sync["revision"] = revision
	}
	return map[string]any{"initiatedBy": map[string]any{"username": "adopt"}, "sync": sync}
}

// TriggerSync is KubeStatus{c, ns}.Sync for an unknown Argo CD version.
func TriggerSync(ctx context.Context, c dynamic.Interface, ns, name, revision string) error {
	return KubeStatus{Client: c, Namespace: ns}.Sync(ctx, name, revision, Version{})
}

// syncAttempts bounds how often Sync reads an Application again when it
// changed between the read and the guarded patch: Argo CD's controller
// writes an Application's status at every refresh.
const syncAttempts = 5

// Sync asks Argo CD for a sync by setting the Application's .operation,
// with a JSON patch guarded by the resourceVersion it read. It refuses
// while another operation is running. When the Application changed between
// the read and the patch (the guard failed), it reads it again, up to
// syncAttempts times.
func (k KubeStatus) Sync(ctx context.Context, name, revision string, v Version) error {
	k.Namespace, name = SplitName(name, k.Namespace)
	for attempt := 1; ; attempt++ {
		changed, err := k.trySync(ctx, name, revision, v)
		if !changed || attempt == syncAttempts {
			return err
		}
	}
}

// trySync is one read and guarded patch; changed reports a patch refused
// because the Application was written meanwhile.
func (k KubeStatus) trySync(ctx context.Context, name, revision string, v Version) (changed bool, err error) {
	ns := k.Namespace
	apps := k.Client.Resource(ApplicationGVR).Namespace(ns)
	u, err := apps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read Application %s/%s: %w", ns, name, err)
	}
	s := StateOf(u)
	if s.Operation {
		return false, fmt.Errorf("Application %s/%s: another operation is running; wait for it to finish, then re-run", ns, name)
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": u.GetResourceVersion()},
		{"op": "add", "path": "/operation", "value": SyncOperation(revision, SyncOptions(s.SyncOptions, v))},
	})
	if err != nil {
		return false, err
	}
	if _, err := apps.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "adopt"}); err != nil {
		// A failed test op is 422 Invalid; a write racing the patch, 409.
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			return true, fmt.Errorf("start a sync of Application %s/%s: %w (it changed between each of %d reads and the guarded patch; re-run)", ns, name, err, syncAttempts)
		}
		return false, fmt.Errorf("start a sync of Application %s/%s: %w", ns, name, err)
	}
	return false, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return orUnknown(rev)
}

// Explain says why an Application is not Healthy: one line per resource
// that is not, from status.resources, and for workloads one line per pod
// that is stuck (for a workload whose health Argo CD did not record, as
// Argo CD 3 does by default, a line per stuck pod, naming the workload), read from the pods (scheduler reason, crash loop with the
// last exit, failing probe, missing command), with what looks like a
// secret masked. It fails only when the secret-detection rules do not
// load.
func Explain(ctx context.Context, kube kubernetes.Interface, s AppState) ([]string, error) {
	j, err := redact.DefaultJudge()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range s.Resources {
		if r.Health == "" && r.Group == "apps" && kube != nil {
			// Argo CD 3 keeps no resource health in status.resources
			// unless told to: the workload's pods say what is wrong.
			for _, p := range workloadPods(ctx, kube, j, r) {
				out = append(out, r.Ref.String()+": "+p)
			}
			continue
		}
		if r.Health == "" || r.Health == HealthHealthy {
			continue
		}
		line := r.Ref.String() + ": " + r.Health
		if r.HealthMessage != "" {
			line += ": " + gitops.OneLine(r.HealthMessage)
		}
		out = append(out, line)
		if r.Group == "apps" && kube != nil {
			for _, p := range workloadPods(ctx, kube, j, r) {
				out = append(out, "  "+p)
			}
		}
	}
	if len(out) == 0 && s.Health != "" && s.Health != HealthHealthy {
		line := "Application " + s.Name + ": " + s.Health
		if s.HealthMessage != "" {
			line += ": " + gitops.OneLine(s.HealthMessage)
		}
		out = append(out, line)
	}
	return out, nil
}
