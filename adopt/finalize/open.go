package finalize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/kubeconn"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// Options are one run's inputs, plain values: Open checks access, chooses
// how Argo CD is reached and wires the Session from them.
type Options struct {
	Plan        *plan.Plan
	Selection   Selection
	JournalFile string
	// Workload holds the plan's objects (read and patched with a client
	// of its Config at Parallel's rate); Hub, when set, is the management
	// cluster Argo CD runs on (else Workload).
	Workload *kubeconn.Cluster
	Hub      *kubeconn.Cluster
	// Namespace is the Applications' ("": Plan.ArgoCDNamespace).
	Namespace string
	// Version is --argocd-version ("": resolved when connecting).
	Version string
	// API is Argo CD API mode: Applications read, watched and synced
	// through argocd-server (nil: the Kubernetes API). SyncOnly, with API,
	// reads them through the Kubernetes API and uses argocd-server only to
	// start syncs.
	API      *argoapp.APIOptions
	SyncOnly bool
	// Fallback ($ARGOCD_SERVER) is API mode's fallback: used when every
	// permission the Kubernetes API denies is on Application resources
	// and it has a token.
	Fallback          *argoapp.APIOptions
	DryRun, Undo      bool
	Sync              bool
	RetireHelmRecords bool
	Revision          string
	AllowHealth       []string
	Timeout           time.Duration
	PollInterval      time.Duration
	Settle            time.Duration
	// Parallel bounds the objects read and patched at once (0:
	// DefaultParallel).
	Parallel int
	// Progress, when set, hears each Application's wait (Runner.Progress);
	// Note, when set, one line each on what Open chose: API mode's
	// fallback, and the Argo CD it reached.
	Progress func(app string, s argoapp.AppState, waiting string)
	Note     func(string)
}

// Open checks, before any change, that the run may do all it will
// (SelfSubjectAccessReview on each cluster), chooses how Argo CD is
// reached (the Kubernetes API; Argo CD API mode when asked, or as the
// fallback when only the Application resources are denied), connects and
// resolves the version (not for Undo, which needs no Application), and
// returns the Session with its Finalizer, Retirer and Runner, and what
// closes its connections. An InputError is a configuration it cannot use.
func Open(ctx context.Context, o Options) (*Session, func(), error) {
	if o.Parallel < 1 {
		o.Parallel = DefaultParallel
	}
	if o.Namespace == "" {
		o.Namespace = o.Plan.ArgoCDNamespace()
	}
	if err := o.checkAccess(ctx); err != nil {
		return nil, nil, err
	}
	objects, err := objectsClient(o.Workload.Config, o.Parallel)
	if err != nil {
		return nil, nil, err
	}
	f := &Finalizer{
		Client:   func(t Target) Client { return objects.Resource(t.GVR()).Namespace(t.Namespace) },
		Tracking: &o.Plan.Tracking,
		DryRun:   o.DryRun,
	}
	records := &Retirer{
		Client: func(t Target) RecordClient { return objects.Resource(t.GVR()).Namespace(t.Namespace) },
		DryRun: o.DryRun,
	}
	r := &Runner{Plan: o.Plan, Selection: o.Selection, Finalizer: f, Parallel: o.Parallel, Retire: o.RetireHelmRecords, Retirer: records}
	if len(o.Selection.SealedTargets()) > 0 {
		r.Sealer = &Sealer{Kube: o.Workload.Kube, Dynamic: o.Workload.Clients.Dynamic, DryRun: o.DryRun, Journal: func() *Journal { return f.Journal }}
	}
	s := &Session{Runner: r, JournalFile: o.JournalFile, DryRun: o.DryRun, Undo: o.Undo}
	if o.Undo {
		s.Access = func(ctx context.Context, needs []Access) error {
			missing, err := Missing(ctx, o.Workload.Kube, needs)
			switch {
			case err != nil:
				return o.Workload.Explain(err)
			case len(missing) > 0:
				return DeniedError(missing)
			}
			return nil
		}
		return s, func() {}, nil
	}
	on := o.Workload
	if o.Hub != nil {
		on = o.Hub
	}
	argo, err := connectArgoCD(ctx, argoCDOptions{Kube: on.Kube, Dynamic: on.Clients.Dynamic, Namespace: o.Namespace, Version: o.Version, Plan: o.Plan, API: o.API,
		SyncOnly: o.SyncOnly})
	if err != nil {
		return nil, nil, err
	}
	o.note(argo.Info.String())
	s.ArgoCD, s.Explain = argo.Info, func(err error) error {
		if se := (*ServerError)(nil); argo.API || errors.As(err, &se) {
			return err // argocd-server's: it says where
		}
		return on.Explain(err)
	}
	r.Reader, r.Syncer, r.Find, r.Kube, r.Version = argo.Reader, argo.Syncer, argo.Find, o.Workload.Kube, argo.Version.Version
	r.Sync, r.DryRun, r.Revision, r.AllowHealth = o.Sync, o.DryRun, o.Revision, o.AllowHealth
	r.Timeout, r.PollInterval, r.Settle, r.Progress = o.Timeout, o.PollInterval, o.Settle, o.Progress
	return s, argo.Close, nil
}

// checkAccess asks each cluster's SelfSubjectAccessReview about
// everything the run will do there. When only the Application resources
// are denied and the fallback has a token, it switches o to API mode
// through the fallback instead.
func (o *Options) checkAccess(ctx context.Context) error {
	// Syncs started through argocd-server need no patch of Applications;
	// with SyncOnly they are still read through the Kubernetes API.
	apiSync := o.API != nil
	targets := o.Selection.All()
	sealedTs := o.Selection.SealedTargets()
	for _, t := range sealedTs {
		targets = append(targets, t.Target) // get and patch: the managed mark
	}
	q := accessQuery{Workload: o.Workload.Kube, ExplainWorkload: o.Workload.Explain, Targets: targets, Namespace: o.Namespace,
		DryRun: o.DryRun, Undo: o.Undo, API: apiSync && !o.SyncOnly, Sync: o.Sync && !apiSync,
		Sealed: SealedNeeds(sealedTs, o.DryRun, o.Undo)}
	if o.RetireHelmRecords {
		q.Records = RetireNeeds(HelmReleases(o.Selection), o.DryRun)
	}
	if !o.Undo {
		q.Records = append(q.Records, ESONeeds(o.Selection.SealedTargets(), o.DryRun)...)
	}
	if o.Hub != nil {
		q.Hub, q.ExplainHub = o.Hub.Kube, o.Hub.Explain
	}
	missing, err := missingAccess(ctx, q)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	// Kubernetes mode is the default when the Application resources may be
	// read; otherwise the fallback, when set, selects API mode.
	if OnlyApplications(missing) && o.API == nil && o.Fallback != nil && strings.TrimSpace(o.Fallback.Token) != "" {
		o.API = o.Fallback
		o.note(fmt.Sprintf("may not %s through the Kubernetes API; using Argo CD API mode with $ARGOCD_SERVER %s", missing[0], o.API.Server))
		return nil
	}
	return DeniedError(missing)
}

func (o *Options) note(line string) {
	if o.Note != nil {
		o.Note(line)
	}
}

// objectsClient is a dynamic client for parallel requests at once:
// client-go's token bucket allows 100 requests a second per parallel
// request (1,600 at the default 16; at least cfg's own), with a burst of
// twice that, so the bound is what is in flight, and the API server's
// priority and fairness (429 with Retry-After, which client-go waits out
// and retries, up to 10 times) what slows it.
func objectsClient(cfg *rest.Config, parallel int) (dynamic.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	if q := float32(100 * parallel); q > cfg.QPS {
		cfg.QPS, cfg.Burst = q, 200*parallel
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, &InputError{fmt.Errorf("bad cluster configuration: %v", err)}
	}
	return dyn, nil
}
