package apply

import (
	"slices"
	"testing"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/preview"
	"github.com/adopt-dev/adopt/argoapp"
)

// TestWritesThePlansIgnoreDifferences: apply writes exactly the entries the
// plan records into the Application, with RespectIgnoreDifferences=true;
// an Application whose entries are turned off, and one without entries,
// get neither.
func TestWritesThePlansIgnoreDifferences(t *testing.T) {
	p := includePlan()
	byManager := preview.IgnoreDifference{Kind: "ConfigMap", Namespace: "ns", Name: "b1", ManagedFieldsManagers: []string{"replica-manager"},
		Manager: "replica-manager", Fields: []string{"data.a"}, Reason: "replica-manager owns data.a", Source: preview.SourceManagedFields}
	byPointer := preview.IgnoreDifference{Kind: "ConfigMap", Namespace: "ns", Name: "b2", JSONPointers: []string{"/data/b"},
		Manager: "some-controller", Fields: []string{"data.b"}, Reason: "known", Source: "test table"}
	p.Applications[1].IgnoreDifferences = []preview.IgnoreDifference{byManager, byPointer} // tree-yml
	p.Applications[2].IgnoreDifferences = []preview.IgnoreDifference{byManager}            // tree-json
	p.Applications[2].IgnoreDifferencesOff = "turned off by --no-ignore-differences"
	a := newApplier(t, p, func(o *Options) { o.Fetch, o.Secrets = fetchAny, export.SecretsPlaceholder })
	c, err := a.Build(includeTree)
	if err != nil {
		t.Fatal(err)
	}
	for _, as := range a.Summary().Applications {
		app, err := argoapp.DecodeApplication(c.Files[as.File])
		if err != nil {
			t.Fatalf("%s: %v", as.Name, err)
		}
		respect := app.Spec.SyncPolicy.SyncOptions.HasOption(argoapp.SyncOptionRespectIgnoreDifferences)
		got := app.Spec.IgnoreDifferences
		switch as.Name {
		case "tree-yml":
			if len(got) != 2 || !respect {
				t.Fatalf("%s: ignoreDifferences %+v, RespectIgnoreDifferences %v; want the plan's two entries and the option", as.Name, got, respect)
			}
			if got[0].Name != "b1" || !slices.Equal(got[0].ManagedFieldsManagers, []string{"replica-manager"}) || len(got[0].JSONPointers) != 0 ||
				got[1].Name != "b2" || !slices.Equal(got[1].JSONPointers, []string{"/data/b"}) || len(got[1].ManagedFieldsManagers) != 0 ||
				got[0].Kind != "ConfigMap" || got[0].Namespace != "ns" || got[0].Group != "" {
				t.Errorf("%s: ignoreDifferences %+v; want exactly the plan's entries", as.Name, got)
			}
		default:
			if len(got) != 0 || respect {
				t.Errorf("%s: ignoreDifferences %+v, RespectIgnoreDifferences %v; want none", as.Name, got, respect)
			}
		}
	}
}
