// Package preview shows what Argo CD's first sync will do to an adopted
// object before it happens. It sends the manifest Argo CD will sync to the
// real API server as a server-side apply with dryRun=All, as the field
// manager argocd-controller with force (what a sync with ServerSideApply=true
// sends), and compares the server's answer with the live object: no-op,
// field changes, or the server's refusal, quoted. It also names the rollout
// a pod template change starts and whether its pods fit (package capacity),
// the fields that become deletions once finalize drops the hand-apply
// managers, and the ignoreDifferences a controller-owned field needs.
//
// It must never write: every request it sends is a dry run or a read. It
// does not build manifests (the caller gives the Git file or the clean
// export) and it does not print; results are plain data.
package preview

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/capacity"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// FieldManager is the manager Argo CD's server-side apply writes as.
const FieldManager = "argocd-controller"

// Previewer runs previews against one cluster.
type Previewer struct {
	// Client sends the dry runs and reads HorizontalPodAutoscalers.
	Client dynamic.Interface
	// Capacity is the cluster's nodes and pods (capacity.Read); when nil,
	// rollouts are reported without a capacity check.
	Capacity *capacity.Snapshot
}

// Input is one adopted object.
type Input struct {
	// Resource is the object's API resource, e.g. apps/v1 deployments.
	Resource schema.GroupVersionResource
	// Manifest is what the Application will sync: the Git file when matched,
	// otherwise the clean export. It is not modified.
	Manifest *unstructured.Unstructured
	// Live is the object as it is in the cluster now.
	Live *unstructured.Unstructured
	// TrackingID is the tracking-id annotation value Argo CD will add, or
	// "" under label tracking.
	TrackingID string
	// Hide holds secret values the result must never show (a Helm
	// release's values that placeholders replaced); nil for none. The
	// values of the Secrets the object reads are hidden too.
	Hide *redact.Set
}

// Outcome is what the first sync does to one object.
type Outcome string

// Outcomes.
const (
	NoOp      Outcome = "no-op"
	Changes   Outcome = "changes"
	WouldFail Outcome = "would-fail"
)

// Result is the preview of one object. Every list is sorted.
type Result struct {
	// Ref is group/kind namespace/name.
	Ref        string  `json:"ref" yaml:"ref"`
	APIVersion string  `json:"apiVersion" yaml:"apiVersion"`
	Kind       string  `json:"kind" yaml:"kind"`
	Namespace  string  `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name       string  `json:"name" yaml:"name"`
	Outcome    Outcome `json:"outcome" yaml:"outcome"`
	// Verdict is the API server's (or a webhook's) refusal, quoted, when
	// the outcome is would-fail.
	Verdict string   `json:"verdict,omitempty" yaml:"verdict,omitempty"`
	Changes []Change `json:"changes,omitempty" yaml:"changes,omitempty"`
	// Rollout is set when the sync changes a workload's pod template or
	// replicas.
	Rollout *Rollout `json:"rollout,omitempty" yaml:"rollout,omitempty"`
	// PendingDeletions are fields the live object has and the manifest
	// lacks, kept by the first sync because hand-apply managers co-own
	// them, and removed (or reset to their default) by the first sync after
	// finalize.
	PendingDeletions  []Field            `json:"pendingDeletions,omitempty" yaml:"pendingDeletions,omitempty"`
	IgnoreDifferences []IgnoreDifference `json:"ignoreDifferences,omitempty" yaml:"ignoreDifferences,omitempty"`
	// Warnings are heuristics (e.g. a command repeating the entrypoint).
	Warnings []string `json:"warnings,omitempty" yaml:"warnings,omitempty"`
	// Notes say what the preview could not check.
	Notes []string `json:"notes,omitempty" yaml:"notes,omitempty"`
}

// Change is one field the sync would change.
type Change struct {
	Path string `json:"path" yaml:"path"`
	// Op is add, remove or replace.
	Op string `json:"op" yaml:"op"`
	// Before and After are the values, shortened when long; empty for a
	// Secret's values, which are never shown.
	Before      string `json:"before,omitempty" yaml:"before,omitempty"`
	After       string `json:"after,omitempty" yaml:"after,omitempty"`
	BeforeBytes int    `json:"beforeBytes" yaml:"beforeBytes"`
	AfterBytes  int    `json:"afterBytes" yaml:"afterBytes"`
	// Text is the change in one line, e.g. "data.usage_hook.py +8,126 B
	// (248,706 B → 256,832 B)".
	Text string `json:"text" yaml:"text"`
}

// Rollout is the pod churn a workload change causes.
type Rollout struct {
	// PodsReplaced is how many running pods a pod template change replaces.
	PodsReplaced int `json:"podsReplaced" yaml:"podsReplaced"`
	// ReplicasBefore and ReplicasAfter differ when the sync scales.
	ReplicasBefore int `json:"replicasBefore" yaml:"replicasBefore"`
	ReplicasAfter  int `json:"replicasAfter" yaml:"replicasAfter"`
	// Text is e.g. "rollout: 3 pods replaced".
	Text string `json:"text" yaml:"text"`
	// Capacity says whether the new pods fit; nil when not checked.
	Capacity *capacity.Verdict `json:"capacity,omitempty" yaml:"capacity,omitempty"`
}

// Field is a field waiting to be deleted, with the managers that own it.
type Field struct {
	Path     string   `json:"path" yaml:"path"`
	Managers []string `json:"managers" yaml:"managers"`
	// Bytes is the size of the live value (Secret values are never shown).
	Bytes int `json:"bytes" yaml:"bytes"`
}

// IgnoreDifference is one spec.ignoreDifferences entry for a field another
// writer owns. apply writes Group, Kind, Name, Namespace, JSONPointers and
// ManagedFieldsManagers exactly; the rest is for the reviewer.
type IgnoreDifference struct {
	Group                 string   `json:"group,omitempty" yaml:"group,omitempty"`
	Kind                  string   `json:"kind" yaml:"kind"`
	Name                  string   `json:"name" yaml:"name"`
	Namespace             string   `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty" yaml:"jsonPointers,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty" yaml:"managedFieldsManagers,omitempty"`
	// Manager is the field manager that owns the fields now, or the one
	// the known controller writes as when it has not written them yet.
	Manager string `json:"manager,omitempty" yaml:"manager,omitempty"`
	// Fields are the fields, as Change paths name them.
	Fields []string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// Reason says which writer owns the fields and why Git would fight it.
	Reason string `json:"reason" yaml:"reason"`
	// Source is SourceManagedFields, or the known controller's entry
	// (KnownControllers) with where its behaviour is documented.
	Source string `json:"source" yaml:"source"`
}

// SourceManagedFields is the Source of an entry found in the object's
// managedFields: a manager that is neither a person's kubectl nor Argo CD
// owns fields the first sync would take from it.
const SourceManagedFields = "managedFields"

// String is the entry in one line, e.g. "apps/Deployment ns/api:
// managedFieldsManagers [replica-manager] (spec.replicas)".
func (d IgnoreDifference) String() string {
	var what []string
	if len(d.ManagedFieldsManagers) > 0 {
		what = append(what, "managedFieldsManagers ["+strings.Join(d.ManagedFieldsManagers, ", ")+"]")
	}
	if len(d.JSONPointers) > 0 {
		what = append(what, "jsonPointers ["+strings.Join(d.JSONPointers, ", ")+"]")
	}
	ref := objref.Ref{Group: d.Group, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}.String()
	s := ref + ": " + strings.Join(what, ", ")
	if len(d.Fields) > 0 {
		s += " (" + strings.Join(d.Fields, ", ") + ")"
	}
	return s
}

// Column is the table cell: "no-op", "changes N" or "fails"; ", no fit"
// is appended when a rollout's pods would not fit.
func (r Result) Column() string {
	s := string(r.Outcome)
	switch r.Outcome {
	case Changes:
		s = fmt.Sprintf("changes %d", len(r.Changes))
	case WouldFail:
		s = "fails"
	}
	if r.WouldNotFit() {
		s += ", no fit"
	}
	return s
}

// WouldNotFit reports whether the rollout leaves pods Pending.
func (r Result) WouldNotFit() bool {
	return r.Rollout != nil && r.Rollout.Capacity != nil && !r.Rollout.Capacity.Fits
}

// Summary counts results, for the table footer and --fail-on.
type Summary struct {
	NoOp        int `json:"noOp" yaml:"noOp"`
	Changes     int `json:"changes" yaml:"changes"`
	WouldFail   int `json:"wouldFail" yaml:"wouldFail"`
	WouldNotFit int `json:"wouldNotFit" yaml:"wouldNotFit"`
}

// Summarize counts rs.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		switch r.Outcome {
		case NoOp:
			s.NoOp++
		case Changes:
			s.Changes++
		case WouldFail:
			s.WouldFail++
		}
		if r.WouldNotFit() {
			s.WouldNotFit++
		}
	}
	return s
}

// Sort orders results by namespace, group, kind and name.
func Sort(rs []Result) {
	key := func(r Result) string {
		return r.Namespace + "\x00" + r.APIVersion + "\x00" + r.Kind + "\x00" + r.Name
	}
	sort.SliceStable(rs, func(i, j int) bool { return key(rs[i]) < key(rs[j]) })
}

// Object previews one object. An error means the preview itself could not
// run (bad input, no permission, no connection); the server refusing the
// manifest is a Result with outcome would-fail. No secret value the
// preview knows of leaves in the result or the error.
func (p *Previewer) Object(ctx context.Context, in Input) (r Result, err error) {
	if in.Manifest == nil || in.Live == nil {
		return Result{}, errors.New("preview: both the manifest and the live object are needed")
	}
	j, err := redact.DefaultJudge()
	if err != nil {
		return Result{}, err
	}
	live := in.Live
	r = Result{APIVersion: live.GetAPIVersion(), Kind: live.GetKind(), Namespace: live.GetNamespace(), Name: live.GetName()}
	r.Ref = ref(live).String()
	gv, _ := schema.ParseGroupVersion(in.Manifest.GetAPIVersion())
	if in.Manifest.GetKind() != live.GetKind() || gv.Group != in.Resource.Group || in.Manifest.GetName() != live.GetName() {
		return r, fmt.Errorf("%s: the manifest is %s %s/%s, not this object; match the Git file to the live object first",
			r.Ref, in.Manifest.GetAPIVersion(), in.Manifest.GetKind(), in.Manifest.GetName())
	}

	obj := in.Manifest.DeepCopy()
	obj.SetManagedFields(nil)
	if obj.GetNamespace() == "" {
		obj.SetNamespace(live.GetNamespace())
	}
	if in.TrackingID != "" {
		ann := obj.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[argoapp.AnnotationTrackingID] = in.TrackingID
		obj.SetAnnotations(ann)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return r, fmt.Errorf("%s: encode the manifest: %w", r.Ref, err)
	}
	client := p.Client.Resource(in.Resource).Namespace(live.GetNamespace())
	force := true
	synced, err := client.Patch(ctx, live.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager, Force: &force,
	})
	hide, allEnv := p.hidden(ctx, j, in, &r)
	// The results are named so that this runs on what is returned: the
	// verdict (the server's refusal may quote a value) and any error.
	defer func() {
		mask(&r, hide, j)
		if err != nil {
			err = maskedError{err: err, hide: hide}
		}
	}()
	if err != nil {
		if refused(err) {
			r.Outcome = WouldFail
			r.Verdict = secretValues(live, obj, strings.ReplaceAll(err.Error(), "\n", " "))
			return r, nil
		}
		return r, fmt.Errorf("%s: server-side dry-run apply as %s: %w; the preview needs patch permission on %s (dry runs write nothing)",
			r.Ref, FieldManager, err, in.Resource.GroupResource())
	}

	j.Hide(hide, synced.Object)
	secret := ref(live).IsSecret()
	r.Changes = diff(live.Object, synced.Object, shown{secret: secret, hide: hide, allEnv: allEnv})
	r.Outcome = NoOp
	if len(r.Changes) > 0 {
		r.Outcome = Changes
	}
	if err := p.pendingDeletions(ctx, &r, client, obj, live, synced, secret); err != nil {
		return r, err
	}
	if err := p.ignoreDifferences(ctx, &r, in, live, synced); err != nil {
		return r, err
	}
	if err := p.rollout(&r, live, synced); err != nil {
		return r, err
	}
	return r, nil
}

// refused reports whether err is the server's verdict on the manifest
// (validation, immutable field, admission, conflict, size), as opposed to
// the preview being unable to ask.
func refused(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch {
	case apierrors.IsUnauthorized(err), apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err):
		return false
	case apierrors.IsForbidden(err):
		// RBAC says "cannot patch resource"; a webhook's denial is a verdict.
		return !strings.Contains(err.Error(), "cannot patch resource")
	}
	return true
}

// ref names the object u.
func ref(u *unstructured.Unstructured) objref.Ref {
	return objref.Ref{Group: u.GroupVersionKind().Group, Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// secretValues removes a Secret's values from a server message: the
// server may quote an invalid value.
func secretValues(live, manifest *unstructured.Unstructured, msg string) string {
	if !ref(live).IsSecret() {
		return msg
	}
	for _, u := range []*unstructured.Unstructured{live, manifest} {
		for _, field := range []string{"data", "stringData"} {
			m, _, _ := unstructured.NestedStringMap(u.Object, field)
			for _, v := range m {
				if len(v) >= 4 {
					msg = strings.ReplaceAll(msg, v, redact.Shown)
				}
			}
		}
		if la, ok := u.GetAnnotations()[budget.LastAppliedKey]; ok && len(la) >= 4 {
			msg = strings.ReplaceAll(msg, la, redact.Shown)
		}
	}
	return msg
}
