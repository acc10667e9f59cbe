package judge

import (
	"testing"

	"github.com/adopt-dev/adopt/adopt/discover"
)

// TestTakenOverBy: a Secret whose one owner is a SealedSecret or an
// ExternalSecret names it; any other owner, several owners, or another
// kind names none.
func TestTakenOverBy(t *testing.T) {
	secret := func(owners ...string) *discover.Object {
		return &discover.Object{Type: discover.Type{Version: "v1", Kind: "Secret"}, Namespace: "shop", Name: "db", Owners: owners}
	}
	cm := secret("ExternalSecret/db")
	cm.Type.Kind = "ConfigMap"
	for _, c := range []struct {
		name           string
		o              *discover.Object
		sealed, extern string
	}{
		{"sealed", secret("SealedSecret/db"), "db", ""},
		{"external", secret("ExternalSecret/db"), "", "db"},
		{"two owners", secret("ExternalSecret/db", "SealedSecret/db"), "", ""},
		{"other owner", secret("Deployment/web"), "", ""},
		{"not a Secret", cm, "", ""},
	} {
		if got := SealedBy(c.o); got != c.sealed {
			t.Errorf("%s: SealedBy = %q, want %q", c.name, got, c.sealed)
		}
		if got := ExternalSecretBy(c.o); got != c.extern {
			t.Errorf("%s: ExternalSecretBy = %q, want %q", c.name, got, c.extern)
		}
	}
}
