package argoapp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apiclient"
	applicationpkg "github.com/argoproj/argo-cd/v2/pkg/apiclient/application"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/gitops"
)

// APIOptions say how to reach argocd-server (Argo CD API mode). They are
// the argocd CLI's flags of the same names.
type APIOptions struct {
	// Server is host:port. A leading http:// implies PlainText; a leading
	// https:// is dropped.
	Server string
	// Token is a bearer token (an Argo CD account token or a session
	// token). It is never logged and is cut out of every error.
	Token     string
	GRPCWeb   bool
	PlainText bool
	Insecure  bool
}

// API reads Applications and starts syncs through argocd-server. It is the
// StatusReader and Syncer of Argo CD API mode.
type API struct {
	// Namespace is where the Applications live.
	Namespace string
	server    string
	token     string
	client    apiclient.Client
	apps      applicationpkg.ApplicationServiceClient
	closer    io.Closer
}

// DialAPI connects to argocd-server. It reads no argocd CLI config file, so
// only o (and the argocd CLI's $ARGOCD_SERVER, which o.Server overrides)
// decides where it connects. Close it when done.
func DialAPI(o APIOptions, namespace string) (*API, error) {
	server := strings.TrimSuffix(o.Server, "/")
	switch {
	case strings.HasPrefix(server, "http://"):
		server, o.PlainText = strings.TrimPrefix(server, "http://"), true
	case strings.HasPrefix(server, "https://"):
		server = strings.TrimPrefix(server, "https://")
	}
	a := &API{Namespace: namespace, server: server, token: o.Token}
	if server == "" {
		return nil, fmt.Errorf("Argo CD API mode needs --argocd-server host:port")
	}
	if strings.TrimSpace(o.Token) == "" {
		return nil, fmt.Errorf("Argo CD API mode needs a token for argocd-server at %s: pass --argocd-token or set $ARGOCD_AUTH_TOKEN", server)
	}
	c, err := apiclient.NewClient(&apiclient.ClientOptions{
		ServerAddr: server,
		AuthToken:  o.Token,
		GRPCWeb:    o.GRPCWeb,
		PlainText:  o.PlainText,
		Insecure:   o.Insecure,
		UserAgent:  "adopt",
		// An empty ConfigPath reads no argocd CLI config: no token or
		// server of the user's argocd login sneaks in, and none is
		// written back.
		ConfigPath: "",
	})
	if err != nil {
		return nil, a.connectError(err)
	}
	closer, apps, err := c.NewApplicationClient()
	if err != nil {
		return nil, a.connectError(err)
	}
	a.client, a.apps, a.closer = c, apps, closer
	return a, nil
}

// Server is the host:port adopt talks to.
func (a *API) Server() string { return a.server }

// Close ends the connection.
func (a *API) Close() error {
	if a.closer == nil {
		return nil
	}
	return a.closer.Close()
}

// Application reads one Application through argocd-server. A missing
// Application is not an error: Found is false.
func (a *API) Application(ctx context.Context, name string) (AppState, error) {
	ns, name := SplitName(name, a.Namespace)
	app, err := a.apps.Get(ctx, &applicationpkg.ApplicationQuery{Name: &name, AppNamespace: &ns})
	if status.Code(err) == codes.NotFound {
		return AppState{Name: name, Namespace: ns}, nil
	}
	if err != nil {
		return AppState{Name: name, Namespace: ns}, a.callError("get", ns+"/"+name, err)
	}
	// The API returns the Application resource itself (without kind and
	// apiVersion); read it the way Kubernetes mode does.
	b, err := json.Marshal(app)
	if err != nil {
		return AppState{}, err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return AppState{}, fmt.Errorf("read Application %s/%s from argocd-server at %s: %v", ns, name, a.server, err)
	}
	s := StateOf(&unstructured.Unstructured{Object: obj})
	if s.Namespace == "" {
		s.Namespace = ns
	}
	return s, nil
}

// Changes watches Application name through argocd-server (the
// application service's Watch) and sends after each event. The channel is
// closed when ctx ends or the stream breaks; Wait then keeps polling.
func (a *API) Changes(ctx context.Context, name string) <-chan struct{} {
	ns, name := SplitName(name, a.Namespace)
	out := make(chan struct{}, 1)
	stream, err := a.apps.Watch(ctx, &applicationpkg.ApplicationQuery{Name: &name, AppNamespace: &ns})
	if err != nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		for {
			if _, err := stream.Recv(); err != nil {
				return
			}
			select {
			case out <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}()
	return out
}

// Sync starts a sync of Application name through argocd-server, at
// revision when set, with server-side apply and no pruning (see
// SyncOptions for the options sent). It refuses while another operation is
// running.
func (a *API) Sync(ctx context.Context, name, revision string, v Version) error {
	s, err := a.Application(ctx, name)
	ns, name := SplitName(name, a.Namespace)
	if err != nil {
		return err
	}
	if !s.Found {
		return fmt.Errorf("Application %s/%s not found on argocd-server at %s; create it (adopt apply writes it), then re-run", ns, name, a.server)
	}
	if s.Operation {
		return fmt.Errorf("Application %s/%s: another operation is running; wait for it to finish, then re-run", ns, name)
	}
	prune := false
	req := &applicationpkg.ApplicationSyncRequest{
		Name:         &name,
		AppNamespace: &ns,
		Prune:        &prune,
		SyncOptions:  &applicationpkg.SyncOptions{Items: SyncOptions(s.SyncOptions, v)},
	}
	if revision != "" {
		req.Revision = &revision
	}
	if _, err := a.apps.Sync(ctx, req); err != nil {
		return a.callError("sync", ns+"/"+name, err)
	}
	return nil
}

// Version asks argocd-server for its version (the version service).
func (a *API) Version(ctx context.Context) (DetectedVersion, error) {
	closer, vc, err := a.client.NewVersionClient()
	if err != nil {
		return DetectedVersion{}, a.connectError(err)
	}
	defer closer.Close()
	m, err := vc.Version(ctx, &emptypb.Empty{})
	if err != nil {
		return DetectedVersion{}, a.redact(fmt.Errorf("ask argocd-server at %s for its version: %v", a.server, err))
	}
	src := "argocd-server at " + a.server + " (version API)"
	v, err := ParseVersion(m.Version)
	if err != nil {
		return DetectedVersion{Raw: m.Version, Source: src + ": " + err.Error() + "; pass --argocd-version"}, nil
	}
	return DetectedVersion{Version: v, Raw: m.Version, Source: src}, nil
}

// connectError explains a failure to connect, without the token.
func (a *API) connectError(err error) error {
	return a.redact(fmt.Errorf("cannot connect to argocd-server at %s: %v. Check --argocd-server, and --plaintext, --grpc-web or --insecure to match how it is served", a.server, err))
}

// callError explains a failed call on Application name, without the token.
func (a *API) callError(verb, name string, err error) error {
	ref := name
	if !strings.Contains(name, "/") {
		ref = a.Namespace + "/" + name
	}
	st, _ := status.FromError(err)
	var e error
	switch st.Code() {
	case codes.Unauthenticated:
		e = fmt.Errorf("argocd-server at %s rejected the token (%s) to %s Application %s. Pass a valid token in --argocd-token or $ARGOCD_AUTH_TOKEN (argocd account generate-token)", a.server, st.Message(), verb, ref)
	case codes.PermissionDenied:
		e = fmt.Errorf("argocd-server at %s: the token may not %s Application %s (%s). Grant applications, %s on its project in argocd-rbac-cm, or check that it exists", a.server, verb, ref, st.Message(), verb)
	case codes.Unavailable:
		e = fmt.Errorf("cannot reach argocd-server at %s to %s Application %s: %s. Check --argocd-server, and --plaintext, --grpc-web or --insecure to match how it is served", a.server, verb, ref, st.Message())
	case codes.FailedPrecondition:
		e = fmt.Errorf("argocd-server at %s refused to %s Application %s: %s. Wait for the running operation to finish, then re-run", a.server, verb, ref, st.Message())
	default:
		e = fmt.Errorf("argocd-server at %s: %s Application %s: %v", a.server, verb, ref, err)
	}
	return a.redact(e)
}

// redact cuts the token out of err's text. The result no longer wraps err.
func (a *API) redact(err error) error {
	if err == nil || a.token == "" {
		return err
	}
	return fmt.Errorf("%s", gitops.Redact(err.Error(), a.token))
}
