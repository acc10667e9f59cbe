package plan

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/preview"
)

// TestIgnoreDifferencesFollowTheApplication: AddPreview records each
// object's entries with the Application that adopts it, a plan round trip
// keeps them, and TurnOffIgnoreDifferences records the setting that turned
// them off, so apply writes none.
func TestIgnoreDifferencesFollowTheApplication(t *testing.T) {
	p := samplePlan()
	if len(p.Applications) == 0 {
		t.Fatal("sample plan has no Application")
	}
	ob := p.Objects[0]
	entry := preview.IgnoreDifference{Kind: ob.Kind, Name: ob.Name, Namespace: ob.Namespace, ManagedFieldsManagers: []string{"replica-manager"},
		Manager: "replica-manager", Fields: []string{"data.a"}, Reason: "replica-manager owns data.a", Source: preview.SourceManagedFields}
	p.AddPreview(map[string]preview.Result{ob.Ref.String(): {Ref: ob.Ref.String(), Outcome: preview.NoOp, IgnoreDifferences: []preview.IgnoreDifference{entry}}})
	var app *Application
	for i := range p.Applications {
		for _, ref := range p.Applications[i].Objects {
			if ref == ob.Ref.String() {
				app = &p.Applications[i]
			}
		}
	}
	if app == nil || len(app.IgnoreDifferences) != 1 || app.IgnoreDifferences[0].Manager != "replica-manager" {
		t.Fatalf("Application %+v; want the entry of %s", app, ob.Ref.String())
	}
	for _, a := range p.Applications {
		if a.Name != app.Name && len(a.IgnoreDifferences) > 0 {
			t.Errorf("Application %s got entries of another Application's object: %+v", a.Name, a.IgnoreDifferences)
		}
	}
	if got := app.WrittenIgnoreDifferences(); len(got) != 1 || !strings.Contains(app.IgnoreSummary(), "1 ignoreDifferences entry written") {
		t.Errorf("written %+v, summary %q; want the entry written", got, app.IgnoreSummary())
	}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "managedFieldsManagers:\n") || !strings.Contains(string(b), "source: managedFields") {
		t.Errorf("plan YAML lacks the entry:\n%s", b)
	}

	if err := p.TurnOffIgnoreDifferences([]string{"[bad"}, "--no-ignore-differences"); err == nil {
		t.Error("a bad glob was accepted")
	}
	if err := p.TurnOffIgnoreDifferences([]string{app.Name}, "--no-ignore-differences"); err != nil {
		t.Fatal(err)
	}
	if err := p.TurnOffIgnoreDifferences([]string{"*"}, "adopt.yaml noIgnoreDifferences"); err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Applications {
		want := "turned off by adopt.yaml noIgnoreDifferences"
		if a.Name == app.Name {
			want = "turned off by --no-ignore-differences" // the first setting is the one recorded
		}
		if a.IgnoreDifferencesOff != want || len(a.WrittenIgnoreDifferences()) != 0 {
			t.Errorf("Application %s: off %q, written %+v; want off by %s and none written", a.Name, a.IgnoreDifferencesOff, a.WrittenIgnoreDifferences(), want)
		}
	}
	if s := app.IgnoreSummary(); !strings.Contains(s, "NOT written (turned off by --no-ignore-differences)") {
		t.Errorf("summary %q; want it to say the entry is not written and why", s)
	}
}
