package reconcile

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// secretPlan proposes Application adopt-shop in namespace shop: the
// Secret db in form (plan.SecretFormSealed, SecretFormSops or
// SecretFormESO: the form the planner chose from what exists), or, with
// form "", left out with the planner's finding, and, with cm, ConfigMap
// settings beside it.
func secretPlan(t *testing.T, form string, cm bool) *plan.Plan {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind}
	app := plan.Application{Name: "adopt-shop", Namespace: "shop", Project: "default", Source: "export", SourcePath: "adopted/shop"}
	sec := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: "db"}, App: app.Name}
	p.Objects = append(p.Objects, sec)
	app.Objects = append(app.Objects, sec.Ref.String())
	if cm {
		ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "settings"}, App: app.Name}
		p.Objects = append(p.Objects, ob)
		app.Objects = append(app.Objects, ob.Ref.String())
	}
	p.Applications = []plan.Application{app}
	switch form {
	case plan.SecretFormSealed:
		p.SetSecretForm(&p.Objects[0], plan.SecretForm{Form: plan.SecretFormSealed, Controller: "kube-system/sealed-secrets-controller",
			Fingerprint: "SHA256:00", UID: "u1", SealedAt: "7", Why: "the Sealed Secrets controller at kubeseal's default Service"})
	case plan.SecretFormSops:
		p.SetSecretForm(&p.Objects[0], plan.SecretForm{Form: plan.SecretFormSops, UID: "u1", SealedAt: "7", Why: "the repo's .sops.yaml has a rule for its path",
			Sops: &plan.SopsForm{File: "adopted/shop/secret-db.yaml", Config: ".sops.yaml", ConfigSHA256: "00", PathRegex: "/secret-[^/]*\\.yaml$",
				Age: []string{"age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq0xd6sn"}, EncryptedRegex: "^(data|stringData)$"}})
	case plan.SecretFormESO:
		p.SetSecretForm(&p.Objects[0], plan.SecretForm{Form: plan.SecretFormESO, Store: "SecretStore shop/vault", RemoteKey: "adopt-shop-db",
			UID: "u1", SealedAt: "7", Why: "SecretStore shop/vault is Ready and ReadWrite"})
	case "":
		p.SecretLeftOut(&p.Objects[0], plan.Warning, "not adopted: no .sops.yaml rule, no Sealed Secrets controller and no External Secrets store fit")
	default:
		t.Fatalf("no form %q", form)
	}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunSecretGroups (issue 45): the decision over Secrets, from the plan
// alone. A group of a Secret the plan adopts in a form (a SealedSecret, a
// SOPS-encrypted file, an ExternalSecret) is proposed like any other,
// alone or beside other objects, and nothing is left; a Secret no form
// adopts is no group of its own, counted as left and named with why; and
// Secrets adopt.yaml excludes (the chart's secrets.read off) are neither
// counted nor proposed, the report saying why.
func TestRunSecretGroups(t *testing.T) {
	type tc struct {
		name         string
		form         string
		cm           bool
		excluded     string
		groups, left int
		untracked    int
		nothing      bool
		note         []string
	}
	cases := []tc{
		{name: "no form, alone", nothing: true, left: 1, note: []string{"1 untracked Secret(s) left to you", "Secret shop/db", "no External Secrets store fit"}},
		{name: "no form, beside a ConfigMap", cm: true, groups: 1, untracked: 2, left: 1, note: []string{"Secret shop/db", "no Sealed Secrets controller"}},
		{name: "excluded by adopt.yaml", excluded: "exclusions[0]", nothing: true, note: []string{"adopt.yaml exclusions[0] excludes them", "secrets.read", "ExternalSecrets"}},
	}
	for _, form := range []string{plan.SecretFormSealed, plan.SecretFormSops, plan.SecretFormESO} {
		cases = append(cases, tc{name: form + ", alone", form: form, groups: 1, untracked: 1},
			tc{name: form + ", beside a ConfigMap", form: form, cm: true, groups: 1, untracked: 2})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := secretPlan(t, c.form, c.cm)
			if c.excluded != "" {
				p = emptyPlan(t) // the type is never listed: the plan holds no Secret
			}
			w := newWorld(t)
			rep, err := Run(context.Background(), Options{Plan: p, Cluster: "c", Records: maps.Clone(w.records), SecretsExcluded: c.excluded}, w.seams())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Groups) != c.groups || rep.NothingToDo != c.nothing || rep.SecretsLeft != c.left || rep.Untracked != c.untracked {
				t.Fatalf("groups %+v, nothing to do %v, secrets left %d, untracked %d; want %d group(s), %v, %d, %d",
					rep.Groups, rep.NothingToDo, rep.SecretsLeft, rep.Untracked, c.groups, c.nothing, c.left, c.untracked)
			}
			for _, g := range rep.Groups {
				if g.Outcome != Opened {
					t.Errorf("group %s: %s (%s), want opened", g.App, g.Outcome, g.Why)
				}
				if c.form != "" && g.Objects != c.untracked {
					t.Errorf("group %s adopts %d object(s), want %d: the Secret in form %s counts like any other", g.App, g.Objects, c.untracked, c.form)
				}
			}
			if c.form != "" {
				// The group's stored plan carries the form to apply and
				// finalize, and the pushed branch holds the Secret.
				if sub := w.plans[branch]; sub == nil || !sub.Objects[0].InForm() || sub.Objects[0].SecretForm.Form != c.form {
					t.Errorf("the group's plan does not hold the Secret in form %s", c.form)
				}
			}
			if len(c.note) == 0 && rep.SecretsNote != "" {
				t.Errorf("the report says %q of Secrets, want nothing", rep.SecretsNote)
			}
			for _, want := range c.note {
				if !strings.Contains(rep.SecretsNote, want) {
					t.Errorf("the report's note on Secrets %q does not say %q", rep.SecretsNote, want)
				}
			}
			if c.nothing && (w.opens != 0 || w.pushes != 0 || w.asked != 0) {
				t.Errorf("a run with nothing to do wrote or asked: %d opens, %d pushes, %d asked", w.opens, w.pushes, w.asked)
			}
		})
	}
}

// TestRunFormGroupConverges (issue 45): a week of one Secret's group, for
// each form (sealed, sops, eso), over the fakes: opened; unchanged while
// nothing changes; merged, finalize waiting for the first sync (the mark,
// or the push to the store, is finalize's); finalized once the operator
// took it over (or, for sops, Argo CD's plugin applied it); then, the plan
// no longer proposing it (a Secret its SealedSecret or ExternalSecret
// controls is owned, judge.SealedBy and judge.ExternalSecretBy; a sops
// one is tracked), done with 0 untracked. A new resourceVersion of the
// Secret (a value rotated by hand while its pull request is open) is a new
// sealing, encryption or push: the group is written again.
func TestRunFormGroupConverges(t *testing.T) {
	for _, form := range []string{plan.SecretFormSealed, plan.SecretFormSops, plan.SecretFormESO} {
		t.Run(form, func(t *testing.T) {
			w := newWorld(t)
			p := secretPlan(t, form, false)
			w.want(w.run(p), Opened)
			if w.pushes != 1 || w.opens != 1 || w.plans[branch] == nil || w.plans[branch].Objects[0].SecretForm.Form != form {
				t.Fatalf("opened: %d pushes, %d opens; the stored plan must hold the Secret in form %s", w.pushes, w.opens, form)
			}
			w.want(w.run(p), Unchanged)

			// Rotated by hand while open: the planner read a new version.
			rotated := secretPlan(t, form, false)
			rotated.Objects[0].SecretForm.SealedAt = "8"
			if err := rotated.Seal(); err != nil {
				t.Fatal(err)
			}
			w.want(w.run(rotated), Updated, Unchanged)
			if w.records[branch].Plan != PlanDigest(mustSub(t, rotated), "") {
				t.Error("the store does not record the plan of the new version")
			}

			w.merge()
			finalized := false
			seams := w.seams()
			seams.Finalize = func(context.Context, string) (FinalizeResult, error) {
				if !finalized {
					return FinalizeResult{Outcome: Merged, Why: "merged; not finalized yet: adopt-shop: waiting for the first sync"}, nil
				}
				return FinalizeResult{Outcome: Finalized, Finalized: 1, Why: "finalized 1 object(s)"}, nil
			}
			once := func(p *plan.Plan) *Report {
				t.Helper()
				rep, err := Run(context.Background(), Options{Plan: p, Cluster: "c", Records: maps.Clone(w.records)}, seams)
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			if rep := once(rotated); len(rep.Groups) != 1 || rep.Groups[0].Outcome != Merged {
				t.Fatalf("merged, before the first sync: %+v", rep.Groups)
			}
			finalized = true
			if rep := once(rotated); len(rep.Groups) != 1 || rep.Groups[0].Outcome != Finalized {
				t.Fatalf("merged, taken over: %+v", rep.Groups)
			}
			rec := w.records[branch]
			rec.Finalized = true // the store's mark, as FinalizeMerged writes it
			w.records[branch] = rec
			owned := emptyPlan(t) // the Secret is its operator's (or tracked) now: not proposed
			rep := once(owned)
			if rep.Untracked != 0 || rep.SecretsLeft != 0 || !rep.NothingToDo && (len(rep.Groups) != 1 || rep.Groups[0].Outcome != Done) {
				t.Fatalf("after the takeover: untracked %d, secrets left %d, groups %+v; want 0, 0, done", rep.Untracked, rep.SecretsLeft, rep.Groups)
			}
		})
	}
}

// emptyPlan proposes nothing.
func emptyPlan(t *testing.T) *plan.Plan {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind}
	if err := p.Seal(); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustSub(t *testing.T, p *plan.Plan) *plan.Plan {
	t.Helper()
	sub, err := Sub(p, p.Applications...)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}
