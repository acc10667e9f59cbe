package argoapp

import (
	"strings"
	"testing"
)

// TestRenderedApplicationWithoutCSAMigration renders the embedded template
// with ClientSideApplyMigration=false, as apply does for an Application whose
// objects Argo CD 3.1.0-3.3.1 would fail to migrate: the option reaches
// spec.syncPolicy.syncOptions next to ServerSideApply=true, and the result
// passes the strict v1alpha1 decoding.
func TestRenderedApplicationWithoutCSAMigration(t *testing.T) {
	d := sample()
	d.SyncOptions = []string{SyncOptionServerSideApply, SyncOptionNoCSAMigration}
	out, err := render(t, loadTemplate(t, ""), d)
	if err != nil {
		t.Fatal(err)
	}
	app, err := DecodeApplication(out)
	if err != nil {
		t.Fatal(err)
	}
	opts := app.Spec.SyncPolicy.SyncOptions
	if !opts.HasOption("ServerSideApply=true") || !opts.HasOption("ClientSideApplyMigration=false") || len(opts) != 2 {
		t.Errorf("sync options %v", opts)
	}
	if !strings.Contains(string(out), "    - \"ClientSideApplyMigration=false\"\n") {
		t.Errorf("rendered:\n%s", out)
	}
}
