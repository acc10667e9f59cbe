package esoform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
