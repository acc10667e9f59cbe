package planner

import (
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPickFormChoice is the one rule that chooses a Secret's form: forced
// wins when it fits (and nothing else is chosen when it does not);
// unforced, sops before sealed before eso, the plan saying why and
// naming the others.
func TestPickFormChoice(t *testing.T) {
	sops := formFit{plan.SecretFormSops, "rule here", "rule fits too"}
	sealed := formFit{plan.SecretFormSealed, "controller here", "controller also runs"}
	eso := formFit{plan.SecretFormESO, "store ready", "SecretStore shop/vault fits too (store ready)"}
	for _, c := range []struct {
		name   string
		forced string
		fits   []formFit
		want   string
		why    []string
	}{
		{"nothing fits", "", nil, "", nil},
		{"sealed only", "", []formFit{sealed}, plan.SecretFormSealed, []string{"controller here"}},
		{"eso only", "", []formFit{eso}, plan.SecretFormESO, []string{"store ready"}},
		{"sops only", "", []formFit{sops}, plan.SecretFormSops, []string{"rule here"}},
		{"both: sealed, naming eso", "", []formFit{sealed, eso}, plan.SecretFormSealed, []string{"controller here", "SecretStore shop/vault fits too", "force eso"}},
		{"all three: sops, naming both", "", []formFit{sops, sealed, eso}, plan.SecretFormSops, []string{"rule here", "controller also runs", "SecretStore shop/vault fits too", "repo owners' choice", "force sealed", "force eso"}},
		{"forced eso over sops and sealed", "eso", []formFit{sops, sealed, eso}, plan.SecretFormESO, []string{"adopt.yaml secrets.forms[0]", "store ready"}},
		{"forced eso, no store", "eso", []formFit{sealed}, "", nil},
		{"forced sealed, no controller", "sealed", []formFit{eso}, "", nil},
		{"forced sealed over sops", "sealed", []formFit{sops, sealed, eso}, plan.SecretFormSealed, []string{"adopt.yaml secrets.forms[0]", "controller here"}},
		{"forced sops", "sops", []formFit{sops, sealed}, plan.SecretFormSops, []string{"adopt.yaml secrets.forms[0]", "rule here"}},
	} {
		form, why := pickForm(c.forced, "secrets.forms[0]", c.fits)
		if form != c.want {
			t.Errorf("%s: form %q, want %q", c.name, form, c.want)
		}
		for _, w := range c.why {
			if !strings.Contains(why, w) {
				t.Errorf("%s: why %q lacks %q", c.name, why, w)
			}
		}
		if c.forced != "" && strings.Contains(why, "also") {
			t.Errorf("%s: a forced form's why names the others: %q", c.name, why)
		}
	}
}
