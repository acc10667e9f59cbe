package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrLocked is another run holding the lock.
var ErrLocked = errors.New("another reconcile run holds the lock")

// Lock is a Lease that stops two runs from overlapping. Every write is
// guarded by the Lease's resourceVersion, so two runs racing for it
// cannot both win.
type Lock struct {
	Kube      kubernetes.Interface
	Namespace string
	Name      string
	// Holder names this run; Duration is how long the hold lasts unless
	// released (a run that dies frees the lock after it).
	Holder   string
	Duration time.Duration
	Now      func() time.Time
}

// Acquire takes the Lease, creating it when missing. A Lease another
// holder renewed less than its duration ago is ErrLocked, naming who and
// until when.
func (l *Lock) Acquire(ctx context.Context) error {
	leases := l.Kube.CoordinationV1().Leases(l.Namespace)
	now := metav1.NewMicroTime(l.Now())
	secs := int32(l.Duration / time.Second)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &l.Holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	cur, err := leases.Get(ctx, l.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.Name, Namespace: l.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "adopt"}}, Spec: spec}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: Lease %s/%s was taken while this run was starting; run again later", ErrLocked, l.Namespace, l.Name)
		}
		return l.explain("create", err)
	}
	if err != nil {
		return l.explain("read", err)
	}
	if h := cur.Spec.HolderIdentity; h != nil && *h != "" && *h != l.Holder && cur.Spec.RenewTime != nil && cur.Spec.LeaseDurationSeconds != nil {
		until := cur.Spec.RenewTime.Add(time.Duration(*cur.Spec.LeaseDurationSeconds) * time.Second)
		if until.After(l.Now()) {
			return fmt.Errorf("%w: Lease %s/%s is held by %s until %s; wait for that run, or delete the Lease if that run is gone", ErrLocked, l.Namespace, l.Name, *h, until.UTC().Format(time.RFC3339))
		}
	}
	cur.Spec = spec
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
		return fmt.Errorf("%w: Lease %s/%s changed while this run took it; run again later", ErrLocked, l.Namespace, l.Name)
	} else if err != nil {
		return l.explain("update", err)
	}
	return nil
}

// Renew moves the Lease's renew time to now while this run holds it. A
// Lease another holder took is ErrLocked.
func (l *Lock) Renew(ctx context.Context) error {
	leases := l.Kube.CoordinationV1().Leases(l.Namespace)
	cur, err := leases.Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return l.explain("read", err)
	}
	if h := cur.Spec.HolderIdentity; h == nil || *h != l.Holder {
		return fmt.Errorf("%w: Lease %s/%s is no longer held by this run (%s)", ErrLocked, l.Namespace, l.Name, l.Holder)
	}
	now := metav1.NewMicroTime(l.Now())
	cur.Spec.RenewTime = &now
	_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
	return l.explain("renew", err)
}

// Hold takes the Lease (Acquire) and renews it every third of its
// duration until the returned release is called, which stops renewing and
// releases it, even when ctx was cancelled (SIGTERM): a long run keeps its
// lock, and a stopped one frees it at once. A renewal that fails is tried
// again at the next tick; renewing stops when another holder took the
// Lease.
func (l *Lock) Hold(ctx context.Context) (release func(), err error) {
	if err := l.Acquire(ctx); err != nil {
		return nil, err
	}
	stop, done := make(chan struct{}), make(chan struct{})
	bg := context.WithoutCancel(ctx)
	go func() {
		defer close(done)
		tick := time.NewTicker(l.Duration / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if err := l.Renew(bg); errors.Is(err, ErrLocked) {
					return
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		_ = l.Release(bg)
	}, nil
}

// Release clears the holder, if it is still this run.
func (l *Lock) Release(ctx context.Context) error {
	leases := l.Kube.CoordinationV1().Leases(l.Namespace)
	cur, err := leases.Get(ctx, l.Name, metav1.GetOptions{})
	if err != nil {
		return l.explain("read", err)
	}
	if h := cur.Spec.HolderIdentity; h == nil || *h != l.Holder {
		return nil
	}
	empty := ""
	cur.Spec.HolderIdentity = &empty
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return l.explain("release", err)
	}
	return nil
}

func (l *Lock) explain(op string, err error) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s Lease %s/%s: %w; grant get, create and update on leases in %s (see deploy/)", op, l.Namespace, l.Name, err, l.Namespace)
	}
	return fmt.Errorf("%s Lease %s/%s: %w", op, l.Namespace, l.Name, err)
}
