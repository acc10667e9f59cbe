package printer

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/finalize"
)

// TestFinalizeHelmRecords: the table lists each Helm record by name with
// its release, Application and status, then one line per release saying
// what helm now sees and the reasons of records not retired; -o json
// carries the same and the totals count the records.
func TestFinalizeHelmRecords(t *testing.T) {
	rep := &finalize.Report{}
	rel := finalize.HelmRelease{App: "web", Name: "web", Namespace: "shop", Storage: "Secret"}
	rep.AddRelease(finalize.ReleaseReport{HelmRelease: rel, Status: finalize.StatusRetired, Records: []finalize.RecordResult{
		{Object: "Secret shop/sh.helm.release.v1.web.v2", App: "web", Status: finalize.StatusRetired},
		{Object: "Secret shop/sh.helm.release.v1.web.v1", App: "web", Status: finalize.StatusRetired},
	}})
	other := finalize.HelmRelease{App: "api", Name: "api", Namespace: "shop", Storage: "ConfigMap"}
	rep.AddRelease(finalize.ReleaseReport{HelmRelease: other, Status: finalize.StatusRefused, Reason: "Helm release shop/api has revision 3", Records: []finalize.RecordResult{
		{Object: "ConfigMap shop/sh.helm.release.v1.api.v3", App: "api", Status: finalize.StatusKept},
	}})
	var b bytes.Buffer
	if err := Finalize(&b, rep, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"HELM RECORD",
		"Helm release shop/web: retired (2 records): `helm list -n shop` no longer shows it",
		"Helm release shop/api: refused: Helm release shop/api has revision 3",
		"2 Helm records retired",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`Secret shop/sh\.helm\.release\.v1\.web\.v2\s+shop/web\s+web\s+retired\n`).MatchString(out) {
		t.Errorf("no row for the record:\n%s", out)
	}
	if got := rep.ReleasesIncomplete(); len(got) != 1 || got[0] != "Helm release shop/api" {
		t.Errorf("incomplete releases %v", got)
	}
	b.Reset()
	if err := Finalize(&b, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var back finalize.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Releases) != 2 || back.Releases[0].Name != "web" || back.Total.RecordsRetired != 2 {
		t.Fatalf("json: %v %+v\n%s", err, back.Releases, b.String())
	}
}
