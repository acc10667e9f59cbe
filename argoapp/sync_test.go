package argoapp

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/gitops"
)

func TestSyncOptions(t *testing.T) {
	v2, v32, v332 := Version{2, 14, 21}, Version{3, 2, 6}, Version{3, 3, 2}
	cases := []struct {
		name string
		app  []string
		v    Version
		want []string
	}{
		{"none, v2", nil, v2, []string{"ServerSideApply=true"}},
		{"none, unknown version", nil, Version{}, []string{"ServerSideApply=true"}},
		{"the application's options are kept", []string{"CreateNamespace=true", "PruneLast=true"}, v2,
			[]string{"CreateNamespace=true", "PruneLast=true", "ServerSideApply=true"}},
		{"client-side sync is overridden", []string{"ServerSideApply=false", "Validate=false"}, v2,
			[]string{"Validate=false", "ServerSideApply=true"}},
		{"no duplicate", []string{"ServerSideApply=true"}, v2, []string{"ServerSideApply=true"}},
		{"trap version: migration off", nil, v32, []string{"ServerSideApply=true", "ClientSideApplyMigration=false"}},
		{"trap version, the application already decides", []string{"ClientSideApplyMigration=false"}, v32,
			[]string{"ClientSideApplyMigration=false", "ServerSideApply=true"}},
		{"trap version, the application keeps the migration", []string{"ClientSideApplyMigration=true"}, v32,
			[]string{"ClientSideApplyMigration=true", "ServerSideApply=true"}},
		{"fixed in 3.3.2", nil, v332, []string{"ServerSideApply=true"}},
	}
	for _, c := range cases {
		if got := SyncOptions(c.app, c.v); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: SyncOptions(%v, %v) = %v, want %v", c.name, c.app, c.v, got, c.want)
		}
	}
}

func TestRedact(t *testing.T) {
	tok := "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"
	cases := map[string]string{
		"rpc error: token " + tok + " is invalid": "rpc error: token *** is invalid",
		"twice " + tok + tok:                      "twice ******",
		"nothing to hide":                         "nothing to hide",
	}
	for in, want := range cases {
		if got := gitops.Redact(in, tok); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := gitops.Redact("keep", ""); got != "keep" {
		t.Errorf("an empty secret changed the text: %q", got)
	}
	a := &API{server: "127.0.0.1:1", token: tok}
	if err := a.redact(errors.New("bad " + tok)); strings.Contains(err.Error(), tok) {
		t.Errorf("API.redact kept the token: %v", err)
	}
}

// DialAPI refuses to run without a token, and its refusal names the flag
// and the variable; a closed port is a connect error that says where.
func TestDialAPIErrors(t *testing.T) {
	if _, err := DialAPI(APIOptions{Server: "127.0.0.1:1"}, "argocd"); err == nil ||
		!strings.Contains(err.Error(), "--argocd-token") || !strings.Contains(err.Error(), "ARGOCD_AUTH_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
	tok := "s3cr3t-token-value"
	_, err := DialAPI(APIOptions{Server: "http://127.0.0.1:1", Token: tok}, "argocd")
	if err == nil || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "cannot connect to argocd-server at 127.0.0.1:1") {
		t.Fatalf("connect error: %v", err)
	}
}
