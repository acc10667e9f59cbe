package sealed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/adopt-dev/adopt/adopt/objref"
)

// FieldManager names adopt's writes.
const FieldManager = "adopt"

// ErrNotManaged is the controller's refusal of a SealedSecret applied over
// a Secret that was not annotated sealedsecrets.bitnami.com/managed: "true"
// first. The controller retries a refused unseal 5 times, within about
// 0.2 s (its work queue's backoff), and then never again on its own: the
// SealedSecret's spec is unchanged and it never resyncs. An annotation
// that comes later is not seen.
var ErrNotManaged = errors.New("the Sealed Secrets controller refused to take over a Secret it does not manage")

// ErrReplaced says the Secret now has another uid than the one taken over:
// it was deleted and created again, so for a moment it did not exist.
var ErrReplaced = errors.New("the Secret was replaced, not taken over in place")

// MarkManaged annotates the live Secret namespace/name
// sealedsecrets.bitnami.com/managed: "true", the step that must come
// before its SealedSecret is applied, and returns the Secret's uid, which
// WaitTakeover then expects. sealedAt is the resourceVersion of the Secret
// that was sealed (empty: not checked): a Secret changed since then is
// refused, so the controller never writes older values over newer ones.
// The JSON patch tests the uid and resourceVersion it read, so it never
// writes over a change it did not see; an annotation already there is
// left as it is, so it is safe to run again.
func MarkManaged(ctx context.Context, k kubernetes.Interface, namespace, name, sealedAt string) (types.UID, error) {
	ref := objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: namespace, Name: name}
	live, err := k.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read %s before marking it for the Sealed Secrets controller: %w", ref, err)
	}
	if live.Annotations[ManagedAnnotation] == "true" {
		return live.UID, nil
	}
	if sealedAt != "" && live.ResourceVersion != sealedAt {
		return "", fmt.Errorf("%s changed since it was sealed (resourceVersion %s, now %s): the controller would write the older values over it; seal it again", ref, sealedAt, live.ResourceVersion)
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": live.UID},
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.ResourceVersion},
	}
	if live.Annotations == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{ManagedAnnotation: "true"}})
	} else {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(ManagedAnnotation, "/", "~1"), "value": "true"})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	// The patch's answer is the whole Secret: it is read for nothing but
	// the error, and never kept.
	if _, err := k.CoreV1().Secrets(namespace).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return "", fmt.Errorf("annotate %s %s=true (guarded by uid %s and resourceVersion %s): %w; if it changed meanwhile, run again",
			ref, ManagedAnnotation, live.UID, live.ResourceVersion, err)
	}
	return live.UID, nil
}

// Takeover is what WaitTakeover proved: the Secret kept its uid and is
// now controlled by the SealedSecret.
type Takeover struct {
	Secret objref.Ref
	UID    types.UID
	// Owner is the SealedSecret's uid, the Secret's controller.
	Owner           types.UID
	ResourceVersion string
}

// WaitTakeover waits until the controller has unsealed SealedSecret
// namespace/name (its status observes its generation), then checks that
// the Secret of that name still has uid and is controlled by the
// SealedSecret. A refusal because the Secret was not marked first is
// ErrNotManaged; a Secret with another uid is ErrReplaced. The
// controller's own message, which names keys and never values, is quoted
// otherwise. It waits on a watch, as long as ctx allows.
func WaitTakeover(ctx context.Context, k kubernetes.Interface, d dynamic.Interface, namespace, name string, uid types.UID) (*Takeover, error) {
	ss := &SealedSecret{Metadata: Meta{Namespace: namespace, Name: name}}
	ref, secretRef := ss.Ref(), ss.SecretRef()
	res := d.Resource(GVR).Namespace(namespace)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return res.List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return res.Watch(ctx, o)
		},
	}
	var synced *unstructured.Unstructured
	_, err := watchtools.UntilWithSync(ctx, lw, &unstructured.Unstructured{}, nil, func(e watch.Event) (bool, error) {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok || e.Type == watch.Deleted {
			return false, nil
		}
		if _, found := syncedCondition(u); found && observed(u) {
			synced = u
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the Sealed Secrets controller to unseal %s: %w; is the controller running and watching %s?", ref, err, namespace)
	}
	cond, _ := syncedCondition(synced)
	secret, err := k.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s after the controller unsealed %s: %w", secretRef, ref, err)
	}
	controlled := metav1.IsControlledBy(secret, synced)
	if cond.status != string(corev1.ConditionTrue) || !controlled {
		return nil, refusal(ref, secretRef, secret, cond.message, controlled)
	}
	if uid != "" && secret.UID != uid {
		return nil, fmt.Errorf("%s: uid %s, not %s: %w by %s; a Secret deleted even for a moment can fail pods that mount it", secretRef, secret.UID, uid, ErrReplaced, ref)
	}
	return &Takeover{Secret: secretRef, UID: secret.UID, Owner: synced.GetUID(), ResourceVersion: secret.ResourceVersion}, nil
}

// refusal explains why the controller did not take secret over.
func refusal(ref, secretRef objref.Ref, secret *corev1.Secret, message string, controlled bool) error {
	if !controlled && strings.Contains(message, "is not managed by SealedSecret") {
		late := ""
		if secret.Annotations[ManagedAnnotation] == "true" {
			late = " It carries the annotation now, after the SealedSecret: unless it came within the controller's 5 retries (about 0.2 s), the controller does not see it."
		}
		return fmt.Errorf("%s was applied over %s before the Secret was annotated %s: \"true\": %w.%s "+
			"To recover without a gap: annotate the Secret (MarkManaged), then make the controller look again: "+
			"seal the Secret again and apply (or commit) the new SealedSecret, whose changed spec it unseals, or restart the controller. "+
			"Do not delete the SealedSecret: if it controls the Secret by then, the garbage collector deletes the Secret with it",
			ref, secretRef, ManagedAnnotation, ErrNotManaged, late)
	}
	if message == "" {
		message = "no message"
	}
	return fmt.Errorf("the Sealed Secrets controller did not take over %s from %s: %q; see the SealedSecret's events", secretRef, ref, message)
}

// condition is the SealedSecret's Synced condition.
type condition struct{ status, message string }

func syncedCondition(u *unstructured.Unstructured) (condition, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Synced" {
			continue
		}
		status, _ := m["status"].(string)
		message, _ := m["message"].(string)
		return condition{status: status, message: message}, true
	}
	return condition{}, false
}

// observed reports whether the status describes the current spec.
func observed(u *unstructured.Unstructured) bool {
	g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return g >= u.GetGeneration()
}
