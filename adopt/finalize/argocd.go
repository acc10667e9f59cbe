package finalize

import (
	"context"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// argoCDOptions say how a run reaches Argo CD: through the Kubernetes API
// of the cluster it runs on (Kube, Dynamic), or through argocd-server when
// API is set (Argo CD API mode).
type argoCDOptions struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Namespace string
	API       *argoapp.APIOptions
	// SyncOnly, with API, reads the Applications through the Kubernetes
	// API and uses argocd-server only to start syncs: the Argo CD account
	// then needs nothing but get and sync on Applications, and the
	// Kubernetes credentials no write on them.
	SyncOnly bool
	// Version is --argocd-version; Plan's recorded version is the last
	// resort.
	Version string
	Plan    *plan.Plan
}

// argoCDConn is a connected Argo CD: how Applications are read and
// synced, its version, and what the report says of it.
type argoCDConn struct {
	Reader argoapp.StatusReader
	Syncer argoapp.Syncer
	// Find finds a renamed Application by its source (Runner.Find); nil
	// in API mode, which reads no Application list.
	Find    func(ctx context.Context, a plan.Application) (string, error)
	Version argoapp.DetectedVersion
	Info    *ArgoCD
	// API is true in Argo CD API mode, whose errors already say where.
	API   bool
	Close func()
}

// connectArgoCD picks the mode, connects, and resolves the Argo CD version
// (the flag, else argocd-server's version API in API mode, else the
// application controller's image tag, else the plan's).
func connectArgoCD(ctx context.Context, o argoCDOptions) (*argoCDConn, error) {
	c := &argoCDConn{Close: func() {}}
	q := argoapp.VersionQuery{Flag: o.Version, Kube: o.Kube, Namespace: o.Namespace,
		Recorded: o.Plan.Tracking.Version, RecordedSource: o.Plan.Tracking.VersionSource, RecordedBy: o.Plan.ID}
	if o.API != nil && o.SyncOnly {
		api, err := argoapp.DialAPI(*o.API, o.Namespace)
		if err != nil {
			return nil, err
		}
		k := argoapp.KubeStatus{Client: o.Dynamic, Namespace: o.Namespace}
		c.Reader, c.Syncer, c.Find, c.Close = k, serverSyncer{api}, bySource(k, o.Plan), func() { _ = api.Close() }
		c.Info = &ArgoCD{Mode: "kubernetes", Server: api.Server()}
	} else if o.API != nil {
		api, err := argoapp.DialAPI(*o.API, o.Namespace)
		if err != nil {
			return nil, err
		}
		c.Reader, c.Syncer, c.API, c.Close = api, api, true, func() { _ = api.Close() }
		c.Info = &ArgoCD{Mode: "api", Server: api.Server()}
		q.API, q.Kube = api, nil
	} else {
		k := argoapp.KubeStatus{Client: o.Dynamic, Namespace: o.Namespace}
		c.Reader, c.Syncer, c.Find = k, k, bySource(k, o.Plan)
		c.Info = &ArgoCD{Mode: "kubernetes"}
	}
	ver, err := argoapp.ResolveVersion(ctx, q)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Version, c.Info.VersionSource = ver, ver.Source
	if ver.Version.Known() {
		c.Info.Version = ver.Version.String()
	}
	return c, nil
}

// bySource is Runner.Find through k: the Application syncing a's source
// path of its repository (the plan's, unless a names one) to a's
// namespace.
func bySource(k argoapp.KubeStatus, p *plan.Plan) func(ctx context.Context, a plan.Application) (string, error) {
	return func(ctx context.Context, a plan.Application) (string, error) {
		repo := a.RepoURL
		if repo == "" {
			repo = p.Settings.RepoURL
		}
		return k.BySource(ctx, repo, a.SourcePath, a.Namespace)
	}
}

// ServerError is an error of argocd-server's, met starting a sync in
// Kubernetes mode (Options.SyncOnly): it already says where, so it
// is not worded as the Kubernetes API server's.
type ServerError struct{ Err error }

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }

// serverSyncer starts syncs through argocd-server, its errors marked.
type serverSyncer struct{ api *argoapp.API }

func (s serverSyncer) Sync(ctx context.Context, name, revision string, v argoapp.Version) error {
	if err := s.api.Sync(ctx, name, revision, v); err != nil {
		return &ServerError{Err: err}
	}
	return nil
}
