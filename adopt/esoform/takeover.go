package esoform

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// The ways the takeover is not proven.
var (
	// ErrNotOwned: the ExternalSecret is Ready, but the Secret is not
	// its (no controller reference to it).
	ErrNotOwned = errors.New("the Secret is not owned by its ExternalSecret")
	// ErrReplaced: the Secret has another uid than the one the plan
	// adopted: it was deleted and created again.
	ErrReplaced = errors.New("the Secret was replaced")
	// ErrDataChanged: the Secret's data is not what it was before the
	// takeover.
	ErrDataChanged = errors.New("the Secret's data changed in the takeover")
	// ErrOverwritten: the Secret was changed after the push and before
	// the takeover, and the operator wrote the store's value (the one
	// pushed) over that change.
	ErrOverwritten = errors.New("the Secret was changed after the push, and its ExternalSecret wrote the pushed value over the change")
	// ErrHistoryGone: the API server no longer serves the Secret's
	// changes since the push, so Overwritten could not look at them.
	ErrHistoryGone = errors.New("the API server no longer serves the Secret's changes since the push")
)

// Takeover is the proof WaitTakeover made: the Secret's uid and
// resourceVersion after the takeover, and whether it still carries
// last-applied-configuration (the operator keeps it; finalize removes it).
type Takeover struct {
	UID, ResourceVersion string
	HasLastApplied       bool
}

// WaitTakeover waits until the ExternalSecret namespace/name (its target
// of the same name) is Ready, then proves the takeover in place: the
// Secret has the same uid, the ExternalSecret as its controller, and,
// when before is given, exactly before's data (compared in memory, keys
// named, never values). An ExternalSecret that reports a failure returns
// at once with the operator's reason.
func WaitTakeover(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, namespace, name, uid string, before map[string][]byte) (*Takeover, error) {
	ref := "Secret " + namespace + "/" + name
	es := "ExternalSecret " + namespace + "/" + name
	if _, err := waitFor(ctx, dyn, ExternalSecretGVR, namespace, name, func(u *unstructured.Unstructured) (bool, error) {
		switch st, msg := condition(u.Object, "Ready"); st {
		case "True":
			if !strings.HasPrefix(msg, "SecretSynced") {
				return false, fmt.Errorf("%s is Ready but did not write %s (%s): the store holds nothing at its key; re-run adopt finalize, which pushes before it syncs", es, ref, oneLine(msg))
			}
			return true, nil
		case "False":
			return false, fmt.Errorf("%s did not take %s over: %s", es, ref, oneLine(msg))
		}
		return false, nil
	}); err != nil {
		return nil, err
	}
	s, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s after %s synced: %w", ref, es, err)
	}
	if string(s.UID) != uid {
		return nil, fmt.Errorf("%s: %w (uid %s, not %s as planned): it was deleted and created again; check the workloads that mount it", ref, ErrReplaced, s.UID, uid)
	}
	if c := metav1.GetControllerOf(s); c == nil || c.Kind != KindExternalSecret || c.Name != name {
		return nil, fmt.Errorf("%s: %w %s: check the ExternalSecret's target and creationPolicy (Owner)", ref, ErrNotOwned, es)
	}
	if before != nil {
		if d := Diff(before, liveData(s)); d != "" {
			return nil, fmt.Errorf("%s: %w (%s): the store gave other data than was pushed; restore the Secret from its source, then check %s's store", ref, ErrDataChanged, d, es)
		}
	}
	_, has := s.Annotations[budget.LastAppliedKey]
	return &Takeover{UID: string(s.UID), ResourceVersion: s.ResourceVersion, HasLastApplied: has}, nil
}

// Overwritten reads the Secret namespace/name's changes from
// resourceVersion pushedAt (its version when its data, pushed, was read)
// up to its write at takenAt (after the takeover), and returns
// ErrOverwritten, naming the keys, when one of them held other data than
// pushed, or the Secret was deleted: a change made by hand between the
// push and the takeover, which the operator then wrote the store's value
// over, under any workload mounting the Secret. The data are compared in
// memory; no value is returned. ErrHistoryGone: the API server no longer
// serves those changes (its watch window is minutes), so they are not
// known.
//
// A caller that does not hold the pushed data (the push ran in another
// process: apply --push-secrets, or an earlier finalize run) passes nil
// and the plan's resourceVersion as pushedAt: each change up to the
// ExternalSecret's first write (the first with its controller reference)
// is then compared with the data that write holds, the store's value,
// which the push proved equal to the Secret's data at the plan's
// resourceVersion; the changes after it are the operator's.
func Overwritten(ctx context.Context, kube kubernetes.Interface, namespace, name, pushedAt, takenAt string, pushed map[string][]byte) error {
	if pushedAt == takenAt {
		return nil
	}
	ref := "Secret " + namespace + "/" + name
	w, err := kube.CoreV1().Secrets(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: pushedAt})
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return fmt.Errorf("%s: %w (resourceVersion %s)", ref, ErrHistoryGone, pushedAt)
	}
	if err != nil {
		return fmt.Errorf("read the changes of %s since the push: %w", ref, err)
	}
	defer w.Stop()
	// Without the pushed data, the changes are held until the
	// ExternalSecret's first write (its controller reference on the
	// Secret), and compared with the data it wrote.
	fromTakeover, seen := pushed == nil, []*corev1.Secret(nil)
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("read the changes of %s since the push: %w", ref, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("read the changes of %s since the push: the watch ended before resourceVersion %s", ref, takenAt)
			}
			if ev.Type == watch.Error {
				if st, isStatus := ev.Object.(*metav1.Status); isStatus && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
					return fmt.Errorf("%s: %w (resourceVersion %s)", ref, ErrHistoryGone, pushedAt)
				}
				return fmt.Errorf("read the changes of %s since the push: the watch failed", ref)
			}
			s, isSecret := ev.Object.(*corev1.Secret)
			if !isSecret {
				continue
			}
			if ev.Type == watch.Deleted {
				return fmt.Errorf("%s: %w: it was deleted after the push (resourceVersion %s)", ref, ErrOverwritten, s.ResourceVersion)
			}
			seen = append(seen, s)
			if fromTakeover {
				if c := metav1.GetControllerOf(s); (c == nil || c.Kind != KindExternalSecret || c.Name != name) && s.ResourceVersion != takenAt {
					continue
				}
				pushed = liveData(s)
			}
			for _, c := range seen {
				if d := Diff(pushed, liveData(c)); d != "" {
					return fmt.Errorf("%s: %w (at resourceVersion %s: %s). The change is lost: if it was a rotation, write the new value to the store's key (the Secret now follows its ExternalSecret), then re-run adopt finalize", ref, ErrOverwritten, c.ResourceVersion, d)
				}
			}
			seen = seen[:0]
			if fromTakeover || s.ResourceVersion == takenAt {
				return nil
			}
		}
	}
}
