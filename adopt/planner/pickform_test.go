package planner

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPickForm is the one rule that chooses a Secret's form: forced
// wins when it fits (and nothing else is chosen when it does not);
// unforced, sealed before eso, the plan saying why and naming the other.
func TestPickForm(t *testing.T) {
	store := esoform.Store{Kind: esoform.KindSecretStore, Namespace: "shop", Name: "vault"}
	none := esoform.Store{}
	for _, c := range []struct {
		name     string
		forced   string
		sealedOK bool
		store    esoform.Store
		want     string
		why      []string
	}{
		{"nothing fits", "", false, none, "", nil},
		{"sealed only", "", true, none, plan.SecretFormSealed, []string{"controller here"}},
		{"eso only", "", false, store, plan.SecretFormESO, []string{"store ready"}},
		{"both: sealed, naming eso", "", true, store, plan.SecretFormSealed, []string{"controller here", "SecretStore shop/vault fits too", "force eso"}},
		{"forced eso over sealed", "eso", true, store, plan.SecretFormESO, []string{"adopt.yaml secrets.forms[0]", "store ready"}},
		{"forced eso, no store", "eso", true, none, "", nil},
		{"forced sealed, no controller", "sealed", false, store, "", nil},
		{"forced sealed", "sealed", true, store, plan.SecretFormSealed, []string{"adopt.yaml secrets.forms[0]"}},
	} {
		form, why := pickForm(c.forced, "secrets.forms[0]", c.sealedOK, "controller here", c.store, "store ready")
		if form != c.want {
			t.Errorf("%s: form %q, want %q", c.name, form, c.want)
		}
		for _, w := range c.why {
			if !strings.Contains(why, w) {
				t.Errorf("%s: why %q lacks %q", c.name, why, w)
			}
		}
	}
}
