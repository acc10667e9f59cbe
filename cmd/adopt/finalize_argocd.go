package main

import (
	"context"
	"fmt"
	"strings"

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

// Complete takes the token, and the fallback server, from the environment
// (getenv).
func (a *argoAPIFlags) Complete(getenv func(string) string) {
	if a.Token == "" {
		a.Token = getenv("ARGOCD_AUTH_TOKEN")
	}
	if a.Server == "" {
		a.envServer = getenv("ARGOCD_SERVER")
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

// Options are the apiclient's options in API mode, else nil.
func (a *argoAPIFlags) Options() *argoapp.APIOptions {
	if a.Server == "" {
		return nil
	}
	return &argoapp.APIOptions{Server: a.Server, Token: a.Token, GRPCWeb: a.GRPCWeb, PlainText: a.Plaintext, Insecure: a.Insecure}
}

// Fallback is API mode through $ARGOCD_SERVER, which finalize falls back
// on when the Application resources may not be read (nil without it).
func (a *argoAPIFlags) Fallback() *argoapp.APIOptions {
	if a.envServer == "" {
		return nil
	}
	return &argoapp.APIOptions{Server: a.envServer, Token: a.Token, GRPCWeb: a.GRPCWeb, PlainText: a.Plaintext, Insecure: a.Insecure}
}

// open is the run as the flags say: finalize.Open checks permissions,
// chooses the mode and connects (unless --undo).
func (o *FinalizeOptions) open(ctx context.Context) (*finalize.Session, func(), error) {
	fo := finalize.Options{Plan: o.plan, Selection: o.sel, JournalFile: o.JournalFile, Workload: o.cluster,
		Namespace: o.ArgoCDNamespace, Version: o.ArgoCDVersion, API: o.API.Options(), Fallback: o.API.Fallback(),
		DryRun: o.DryRun, Undo: o.Undo, Sync: o.Sync, RetireHelmRecords: o.RetireHelmRecords, Revision: o.Revision, AllowHealth: o.AllowHealth,
		Timeout: o.Timeout, PollInterval: o.PollInterval, Settle: o.Settle, Parallel: o.Parallel, Hub: o.hub}
	if !o.Quiet {
		fo.Progress = o.progress
		fo.Note = func(line string) { fmt.Fprintln(o.ErrOut, line) }
	}
	return finalize.Open(ctx, fo)
}
