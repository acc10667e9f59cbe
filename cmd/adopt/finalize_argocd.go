package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/spf13/pflag"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/argoapp"
)

// argoAPIFlags are Argo CD API mode's flags: where argocd-server is, its
// token and how to reach it.
type argoAPIFlags struct {
	Server    string
	Token     string
	GRPCWeb   bool
	Plaintext bool
	Insecure  bool
	// envServer is $ARGOCD_SERVER: API mode's fallback when the
	// Application resources may not be read through the Kubernetes API.
	envServer string
}

// AddFlags registers --argocd-server, --argocd-token, --grpc-web,
// --plaintext and --insecure.
func (a *argoAPIFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&a.Server, "argocd-server", "", "read Applications through argocd-server at this address (Argo CD API mode)")
	f.StringVar(&a.Token, "argocd-token", "", "Argo CD API token (default $ARGOCD_AUTH_TOKEN)")
	f.BoolVar(&a.GRPCWeb, "grpc-web", false, "Argo CD API mode: use gRPC-Web")
	f.BoolVar(&a.Plaintext, "plaintext", false, "Argo CD API mode: no TLS")
	f.BoolVar(&a.Insecure, "insecure", false, "Argo CD API mode: skip TLS verification")
}

// Complete takes the token, and the fallback server, from the environment.
func (a *argoAPIFlags) Complete() {
	if a.Token == "" {
		a.Token = os.Getenv("ARGOCD_AUTH_TOKEN")
	}
	if a.Server == "" {
		a.envServer = os.Getenv("ARGOCD_SERVER")
	}
}

// Validate refuses API mode without a token (when one is needed) and the
// connection flags without API mode.
func (a *argoAPIFlags) Validate(needToken bool) error {
	for _, s := range []struct{ from, v string }{{"--argocd-server", a.Server}, {"$ARGOCD_SERVER", a.envServer}} {
		if strings.Contains(s.v, "@") {
			return usageErrorf("%s carries credentials (user:password@, not shown): refused, so that they reach no message or log; give host:port, and the token with --argocd-token or $ARGOCD_AUTH_TOKEN", s.from)
		}
	}
	if a.Server != "" && strings.TrimSpace(a.Token) == "" && needToken {
		return usageErrorf("--argocd-server %s needs a token: pass --argocd-token or set $ARGOCD_AUTH_TOKEN", a.Server)
	}
	if !a.Possible() && (a.GRPCWeb || a.Plaintext || a.Insecure) {
		return usageErrorf("--grpc-web, --plaintext and --insecure apply to Argo CD API mode only: add --argocd-server host:port, or drop them")
	}
	return nil
}

// Possible reports whether API mode was asked for or may be fallen back on.
func (a *argoAPIFlags) Possible() bool { return a.Server != "" || a.envServer != "" }

// FallBack switches to $ARGOCD_SERVER when it and a token are set, and
// says whether it did.
func (a *argoAPIFlags) FallBack() bool {
	if a.envServer == "" || strings.TrimSpace(a.Token) == "" {
		return false
	}
	a.Server = a.envServer
	return true
}

// Options are the apiclient's options in API mode, else nil.
func (a *argoAPIFlags) Options() *argoapp.APIOptions {
	if a.Server == "" {
		return nil
	}
	return &argoapp.APIOptions{Server: a.Server, Token: a.Token, GRPCWeb: a.GRPCWeb, PlainText: a.Plaintext, Insecure: a.Insecure}
}

// checkAccess asks SelfSubjectAccessReview for everything the run will do,
// before it does anything.
func (o *FinalizeOptions) checkAccess(ctx context.Context, kube kubernetes.Interface) error {
	// Syncs started through argocd-server need no patch of Applications;
	// with APISyncOnly they are still read through the Kubernetes API.
	apiSync := o.API.Server != ""
	q := finalize.AccessQuery{Workload: kube, ExplainWorkload: o.cluster.explain, Targets: o.sel.All(), Namespace: o.ArgoCDNamespace,
		DryRun: o.DryRun, Undo: o.Undo, API: apiSync && !o.APISyncOnly, Sync: o.Sync && !apiSync}
	if o.RetireHelmRecords {
		q.Records = finalize.RetireNeeds(finalize.HelmReleases(o.sel), o.DryRun)
	}
	if o.hub != nil {
		q.Hub, q.ExplainHub = o.hub.kube, o.hub.explain
	}
	missing, err := finalize.MissingAccess(ctx, q)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	// Kubernetes mode is the default when the Application resources may be
	// read; otherwise $ARGOCD_SERVER, when set, selects API mode.
	if finalize.OnlyApplications(missing) && o.API.FallBack() {
		if !o.Quiet {
			fmt.Fprintf(o.ErrOut, "may not %s through the Kubernetes API; using Argo CD API mode with $ARGOCD_SERVER %s\n", missing[0], o.API.Server)
		}
		return nil
	}
	return finalize.DeniedError(missing)
}

// connectArgoCD connects to Argo CD where the Applications live (the hub,
// or argocd-server in API mode) and says which version it found; its
// explain words a read or sync error for that place.
func (o *FinalizeOptions) connectArgoCD(ctx context.Context) (*finalize.ArgoCDConn, func(error) error, error) {
	on := o.cluster
	if o.hub != nil {
		on = o.hub
	}
	opts := finalize.ArgoCDOptions{Kube: on.kube, Dynamic: on.clients.Dynamic, Namespace: o.ArgoCDNamespace, Version: o.ArgoCDVersion, Plan: o.plan, API: o.API.Options(),
		SyncOnly: o.APISyncOnly}
	argo, err := finalize.ConnectArgoCD(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if !o.Quiet {
		fmt.Fprintln(o.ErrOut, argo.Info.String())
	}
	if argo.API {
		return argo, func(err error) error { return err }, nil
	}
	return argo, func(err error) error {
		if se := (*finalize.ServerError)(nil); errors.As(err, &se) {
			return err // argocd-server's, starting a sync: it says where
		}
		return on.explain(err)
	}, nil
}

// session checks permissions and connects to Argo CD (unless --undo), and
// returns the run as a finalize.Session, with what closes its connections.
func (o *FinalizeOptions) session(ctx context.Context) (*finalize.Session, func(), error) {
	kube := o.cluster.kube
	if err := o.checkAccess(ctx, kube); err != nil {
		return nil, nil, err
	}
	objects, err := o.cluster.dynamicFor(o.Parallel)
	if err != nil {
		return nil, nil, err
	}
	f := &finalize.Finalizer{
		Client:   func(t finalize.Target) finalize.Client { return objects.Resource(t.GVR()).Namespace(t.Namespace) },
		Tracking: &o.plan.Tracking,
		DryRun:   o.DryRun,
	}
	records := &finalize.Retirer{
		Client: func(t finalize.Target) finalize.RecordClient { return objects.Resource(t.GVR()).Namespace(t.Namespace) },
		DryRun: o.DryRun,
	}
	r := &finalize.Runner{Plan: o.plan, Selection: o.sel, Finalizer: f, Parallel: o.Parallel, Retire: o.RetireHelmRecords, Retirer: records}
	s := &finalize.Session{Runner: r, JournalFile: o.JournalFile, DryRun: o.DryRun, Undo: o.Undo}
	if o.Undo {
		s.Access = func(ctx context.Context, needs []finalize.Access) error {
			missing, err := finalize.Missing(ctx, kube, needs)
			switch {
			case err != nil:
				return o.cluster.explain(err)
			case len(missing) > 0:
				return finalize.DeniedError(missing)
			}
			return nil
		}
		return s, func() {}, nil
	}
	argo, explain, err := o.connectArgoCD(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.ArgoCD, s.Explain = argo.Info, explain
	r.Reader, r.Syncer, r.Find, r.Kube, r.Version = argo.Reader, argo.Syncer, argo.Find, kube, argo.Version.Version
	r.Sync, r.DryRun, r.Revision, r.AllowHealth = o.Sync, o.DryRun, o.Revision, o.AllowHealth
	r.Timeout, r.PollInterval, r.Settle = o.Timeout, o.PollInterval, o.Settle
	if !o.Quiet {
		r.Progress = o.progress
	}
	return s, argo.Close, nil
}
