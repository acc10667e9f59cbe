package esoform

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The ways Push and WaitTakeover refuse. Each error wrapping one names
// the Secret (and the store) and what to do.
var (
	// ErrChanged: the live Secret is not the one the plan reviewed (uid
	// or resourceVersion), or it changed during the push.
	ErrChanged = errors.New("the Secret changed since it was planned")
	// ErrKeyTaken: the store already holds other data at the remote key;
	// adopt never overwrites a stored value.
	ErrKeyTaken = errors.New("the store already holds other data at the remote key")
	// ErrNotEqual: read back through the store, the value is not the
	// live one.
	ErrNotEqual = errors.New("the store does not give back the live data")
	// ErrNameTaken: an object adopt would create for the push exists and
	// is not adopt's.
	ErrNameTaken = errors.New("an object the push needs exists and is not adopt's")
)

// managedBy labels the PushSecret and the probe adopt creates.
const managedBy = "app.kubernetes.io/managed-by"

// PushOptions are one Secret's push: the store and remote key the plan
// shows, and the Secret as the plan read it.
type PushOptions struct {
	Store     Store
	RemoteKey string
	Namespace string
	Name      string
	// UID and ResourceVersion are the Secret's when the plan read it:
	// another is refused (ErrChanged).
	UID, ResourceVersion string
}

func (o PushOptions) ref() string { return "Secret " + o.Namespace + "/" + o.Name }

// Pushed is what Push did: the keys now stored (names only), and whether
// the store already held exactly the live data (a re-run).
type Pushed struct {
	Keys    []string
	Already bool
}

// Push stores the live Secret's data once in the store at the remote key,
// and proves it: the store, read back through a probe ExternalSecret of
// the same shape as the one in Git, gives the live data byte for byte
// (compared here, in memory). In order:
//  1. read the Secret; refuse another uid or resourceVersion than the
//     plan's;
//  2. read the remote key back: the live data already there is a re-run
//     (nothing is pushed); other data is ErrKeyTaken, never overwritten;
//  3. create a PushSecret (refreshInterval 0: it pushes once;
//     deletionPolicy None: the store keeps the value when it goes) and,
//     owned by it, a copy of the Secret that holds its type and data and
//     no label or annotation: the kubernetes provider copies a source's
//     labels and annotations into the store, and the live Secret's
//     last-applied-configuration holds its data in plaintext;
//  4. wait until the PushSecret is Ready, read the key back, compare;
//  5. read the Secret again: a change during the push is ErrChanged;
//  6. delete the PushSecret, the copy and the probe (each guarded by its
//     uid). The live Secret is never written.
//
// Every step is safe to re-run: objects adopt created are found by name
// and label and reused.
func Push(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o PushOptions) (*Pushed, error) {
	live, err := kube.CoreV1().Secrets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s to push it to %s: %w", o.ref(), o.Store, err)
	}
	if string(live.UID) != o.UID || live.ResourceVersion != o.ResourceVersion {
		return nil, fmt.Errorf("%s: %w (uid %s resourceVersion %s, now uid %s resourceVersion %s): pushing it now would store values nobody reviewed; re-run adopt plan, then apply",
			o.ref(), ErrChanged, o.UID, o.ResourceVersion, live.UID, live.ResourceVersion)
	}
	want := liveData(live)
	keys := sortedKeys(want)
	got, found, err := readBack(ctx, kube, dyn, o, live)
	if err != nil {
		return nil, err
	}
	if found {
		if d := Diff(want, got); d != "" {
			return nil, fmt.Errorf("%s: %w %s (%s): adopt never overwrites a stored value; free the key (when it holds this Secret's older data, pushed before the Secret changed, e.g. by apply --push-secrets before the merge: delete it from the store), or pick another store in adopt.yaml, then re-run adopt plan", o.ref(), ErrKeyTaken, o.RemoteKey, d)
		}
		return &Pushed{Keys: keys, Already: true}, cleanup(ctx, kube, dyn, o)
	}
	// The copy exists before the PushSecret that reads it, then is
	// owned by it (so a garbage collector removes it with the PushSecret).
	if err := ensureCopy(ctx, kube, o, live); err != nil {
		return nil, err
	}
	live = nil
	ps, err := ensurePushSecret(ctx, dyn, o)
	if err != nil {
		return nil, err
	}
	if err := ownCopy(ctx, kube, o, ps); err != nil {
		return nil, err
	}
	if _, err := waitFor(ctx, dyn, PushSecretGVR, o.Namespace, pushName(o.Name), func(u *unstructured.Unstructured) (bool, error) {
		switch st, msg := condition(u.Object, "Ready"); st {
		case "True":
			return true, nil
		case "False":
			return false, fmt.Errorf("PushSecret %s/%s could not push %s to %s: %s; fix the store, then re-run", o.Namespace, pushName(o.Name), o.ref(), o.Store, oneLine(msg))
		}
		return false, nil
	}); err != nil {
		return nil, err
	}
	again, err := kube.CoreV1().Secrets(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s again after the push: %w", o.ref(), err)
	}
	if again.ResourceVersion != o.ResourceVersion {
		return nil, fmt.Errorf("%s: %w during the push (resourceVersion %s, now %s): the store may hold the older data; re-run adopt plan and apply, then finalize", o.ref(), ErrChanged, o.ResourceVersion, again.ResourceVersion)
	}
	got, found, err = readBack(ctx, kube, dyn, o, again)
	again = nil
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s: %w: PushSecret %s/%s is Ready, but %s holds nothing at %s", o.ref(), ErrNotEqual, o.Namespace, pushName(o.Name), o.Store, o.RemoteKey)
	}
	if d := Diff(want, got); d != "" {
		return nil, fmt.Errorf("%s: %w at %s in %s (%s); the ExternalSecret must not be synced: check the store's provider", o.ref(), ErrNotEqual, o.RemoteKey, o.Store, d)
	}
	return &Pushed{Keys: keys}, cleanup(ctx, kube, dyn, o)
}

// ensurePushSecret creates the PushSecret, or finds adopt's.
func ensurePushSecret(ctx context.Context, dyn dynamic.Interface, o PushOptions) (*unstructured.Unstructured, error) {
	ps := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": PushAPIVersion, "kind": KindPushSecret,
		"metadata": map[string]any{"name": pushName(o.Name), "namespace": o.Namespace, "labels": map[string]any{managedBy: "adopt"}},
		"spec": map[string]any{
			"refreshInterval": "0s",
			"deletionPolicy":  "None",
			"updatePolicy":    "Replace",
			"secretStoreRefs": []any{map[string]any{"kind": o.Store.Kind, "name": o.Store.Name}},
			"selector":        map[string]any{"secret": map[string]any{"name": copyName(o.Name)}},
			"data":            []any{map[string]any{"match": map[string]any{"remoteRef": map[string]any{"remoteKey": o.RemoteKey}}}},
		},
	}}
	r := dyn.Resource(PushSecretGVR).Namespace(o.Namespace)
	out, err := r.Create(ctx, ps, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		out, err = r.Get(ctx, pushName(o.Name), metav1.GetOptions{})
		if err == nil && out.GetLabels()[managedBy] != "adopt" {
			return nil, fmt.Errorf("PushSecret %s/%s: %w: rename or remove it, then re-run", o.Namespace, pushName(o.Name), ErrNameTaken)
		}
		if err == nil {
			key, _, _ := unstructured.NestedSlice(out.Object, "spec", "data")
			refs, _, _ := unstructured.NestedSlice(out.Object, "spec", "secretStoreRefs")
			if fmt.Sprint(key) != fmt.Sprint(ps.Object["spec"].(map[string]any)["data"]) || fmt.Sprint(refs) != fmt.Sprint(ps.Object["spec"].(map[string]any)["secretStoreRefs"]) {
				return nil, fmt.Errorf("PushSecret %s/%s is adopt's from another plan (another store or key): delete it, then re-run", o.Namespace, pushName(o.Name))
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("create PushSecret %s/%s for %s: %w", o.Namespace, pushName(o.Name), o.ref(), err)
	}
	return out, nil
}

// ensureCopy creates the label- and annotation-free copy the PushSecret
// reads. A copy already there is adopt's from an earlier run when it has
// no label or annotation and either no owner and live's data, or adopt's
// PushSecret as its one owner (its data is then set to live's); anything
// else is ErrNameTaken.
func ensureCopy(ctx context.Context, kube kubernetes.Interface, o PushOptions, live *corev1.Secret) error {
	want := liveData(live)
	c := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copyName(o.Name), Namespace: o.Namespace}, Type: live.Type, Data: want}
	sc := kube.CoreV1().Secrets(o.Namespace)
	_, err := sc.Create(ctx, c, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		old, gerr := sc.Get(ctx, c.Name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("read Secret %s/%s: %w", o.Namespace, c.Name, gerr)
		}
		ownedByUs := len(old.OwnerReferences) == 1 && old.OwnerReferences[0].Kind == KindPushSecret && old.OwnerReferences[0].Name == pushName(o.Name)
		unowned := len(old.OwnerReferences) == 0 && Diff(want, liveData(old)) == ""
		if (!ownedByUs && !unowned) || len(old.Labels) > 0 || len(old.Annotations) > 0 || old.Type != live.Type {
			return fmt.Errorf("Secret %s/%s: %w: rename or remove it, then re-run", o.Namespace, c.Name, ErrNameTaken)
		}
		old.Data = want
		_, err = sc.Update(ctx, old, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("create Secret %s/%s, the copy of %s that PushSecret %s/%s pushes: %w", o.Namespace, c.Name, o.ref(), o.Namespace, pushName(o.Name), err)
	}
	return nil
}

// ownCopy makes adopt's PushSecret the copy's one owner, with an update
// guarded by the copy's resourceVersion.
func ownCopy(ctx context.Context, kube kubernetes.Interface, o PushOptions, ps *unstructured.Unstructured) error {
	sc := kube.CoreV1().Secrets(o.Namespace)
	c, err := sc.Get(ctx, copyName(o.Name), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Secret %s/%s: %w", o.Namespace, copyName(o.Name), err)
	}
	owner := metav1.OwnerReference{APIVersion: PushAPIVersion, Kind: KindPushSecret, Name: ps.GetName(), UID: ps.GetUID()}
	if len(c.OwnerReferences) == 1 && c.OwnerReferences[0].UID == owner.UID {
		return nil
	}
	c.OwnerReferences = []metav1.OwnerReference{owner}
	if _, err := sc.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("make PushSecret %s/%s the owner of Secret %s/%s: %w", o.Namespace, ps.GetName(), o.Namespace, c.Name, err)
	}
	return nil
}

// readBack reads the remote key through a fresh probe ExternalSecret of
// the shape of the one in Git (dataFrom extract, creationPolicy Owner)
// into a probe Secret, and returns its data; found is false when the
// store holds nothing at the key (the operator then reports the target
// deleted, deletionPolicy Delete). The probe and its Secret are deleted
// before it returns.
func readBack(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o PushOptions, live *corev1.Secret) (map[string][]byte, bool, error) {
	if err := deleteProbe(ctx, kube, dyn, o); err != nil {
		return nil, false, err
	}
	shape := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: live.Name, Namespace: live.Namespace}, Type: live.Type}
	m, err := manifest(o.Store, o.RemoteKey, probeName(o.Name), shape, "Delete", "0s").object()
	if err != nil {
		return nil, false, err
	}
	probe := &unstructured.Unstructured{Object: m}
	probe.SetLabels(map[string]string{managedBy: "adopt"})
	r := dyn.Resource(ExternalSecretGVR).Namespace(o.Namespace)
	if _, err := r.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return nil, false, fmt.Errorf("create the probe ExternalSecret %s/%s that reads %s back from %s: %w", o.Namespace, probeName(o.Name), o.RemoteKey, o.Store, err)
	}
	var reason string
	_, err = waitFor(ctx, dyn, ExternalSecretGVR, o.Namespace, probeName(o.Name), func(u *unstructured.Unstructured) (bool, error) {
		switch st, msg := condition(u.Object, "Ready"); st {
		case "True":
			reason = msg
			return true, nil
		case "False":
			return false, fmt.Errorf("the probe ExternalSecret %s/%s could not read %s from %s: %s; fix the store, then re-run", o.Namespace, probeName(o.Name), o.RemoteKey, o.Store, oneLine(msg))
		}
		return false, nil
	})
	if err != nil {
		_ = deleteProbe(ctx, kube, dyn, o)
		return nil, false, err
	}
	var data map[string][]byte
	found := len(reason) >= len("SecretSynced") && reason[:len("SecretSynced")] == "SecretSynced"
	if found {
		s, err := kube.CoreV1().Secrets(o.Namespace).Get(ctx, probeName(o.Name), metav1.GetOptions{})
		if err != nil {
			_ = deleteProbe(ctx, kube, dyn, o)
			return nil, false, fmt.Errorf("read the probe Secret %s/%s: %w", o.Namespace, probeName(o.Name), err)
		}
		data = liveData(s)
	}
	return data, found, deleteProbe(ctx, kube, dyn, o)
}

// deleteProbe deletes adopt's probe ExternalSecret and the Secret it
// owns, each guarded by its uid; others' objects of those names are an
// ErrNameTaken.
func deleteProbe(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o PushOptions) error {
	r := dyn.Resource(ExternalSecretGVR).Namespace(o.Namespace)
	es, err := r.Get(ctx, probeName(o.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case es.GetLabels()[managedBy] != "adopt":
		return fmt.Errorf("ExternalSecret %s/%s: %w: rename or remove it, then re-run", o.Namespace, probeName(o.Name), ErrNameTaken)
	default:
		if err := deleteObject(ctx, r, es.GetName(), es.GetUID()); err != nil {
			return err
		}
	}
	s, err := kube.CoreV1().Secrets(o.Namespace).Get(ctx, probeName(o.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if c := metav1.GetControllerOf(s); c == nil || c.Kind != KindExternalSecret || c.Name != probeName(o.Name) {
		return fmt.Errorf("Secret %s/%s: %w: rename or remove it, then re-run", o.Namespace, probeName(o.Name), ErrNameTaken)
	}
	uid := s.UID
	err = kube.CoreV1().Secrets(o.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// cleanup deletes the probe, the PushSecret (deletionPolicy None: the
// store keeps the value) and the copy, each adopt's and guarded by uid.
func cleanup(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, o PushOptions) error {
	if err := deleteProbe(ctx, kube, dyn, o); err != nil {
		return err
	}
	r := dyn.Resource(PushSecretGVR).Namespace(o.Namespace)
	ps, err := r.Get(ctx, pushName(o.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case ps.GetLabels()[managedBy] == "adopt":
		if err := deleteObject(ctx, r, ps.GetName(), ps.GetUID()); err != nil {
			return err
		}
	}
	sc := kube.CoreV1().Secrets(o.Namespace)
	c, err := sc.Get(ctx, copyName(o.Name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].Kind != KindPushSecret || c.OwnerReferences[0].Name != pushName(o.Name) {
		return nil // not adopt's copy: left alone
	}
	uid := c.UID
	err = sc.Delete(ctx, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func deleteObject(ctx context.Context, r dynamic.ResourceInterface, name string, uid types.UID) error {
	err := r.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// waitFor reads the object, then watches it, until done says so or
// fails; a deleted object is an error.
func waitFor(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, done func(*unstructured.Unstructured) (bool, error)) (*unstructured.Unstructured, error) {
	r := dyn.Resource(gvr).Namespace(ns)
	for {
		u, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if ok, err := done(u); ok || err != nil {
			return u, err
		}
		w, err := r.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: u.GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		u, err = watchUntil(ctx, w, done)
		w.Stop()
		if u != nil || err != nil {
			return u, err
		}
		// The watch ended (a timeout of the API server's): read again.
	}
}

func watchUntil(ctx context.Context, w watch.Interface, done func(*unstructured.Unstructured) (bool, error)) (*unstructured.Unstructured, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, nil
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			switch {
			case ev.Type == watch.Deleted && isObj:
				return nil, fmt.Errorf("%s %s/%s was deleted while adopt waited for it", u.GetKind(), u.GetNamespace(), u.GetName())
			case ev.Type == watch.Error:
				return nil, nil
			case isObj:
				if ok, err := done(u); ok || err != nil {
					return u, err
				}
			}
		}
	}
}
