package planner

import (
	"context"
	"crypto/rsa"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/adopt/sopsform"
)

// secretForms chooses the form of each Secret the plan could adopt
// (plan.SecretCandidates), by one rule (pickForm, docs/secrets.md):
//  1. the form adopt.yaml forces for its namespace (none, sealed, sops,
//     eso), when it fits;
//  2. else sops, when the repo's .sops.yaml has a creation rule, with
//     age recipients, for the path apply writes the Secret to;
//  3. else sealed, when the Sealed Secrets controller answers with its
//     certificate;
//  4. else eso, when an External Secrets store fits the namespace
//     (esoform.FindStores);
//  5. else none: the Secret stays left out, as it always was.
//
// A path rule in the repo the pull request goes into is the repo owners'
// choice for that very file, where a running controller or a store may
// serve other teams; sealed goes before eso as it keeps no copy of the
// value outside Git. When several fit, the plan names the others and why
// the chosen one won. It reads the controller's Service and certificate,
// the repo's .sops.yaml files (from the index), the stores, and each
// Secret's metadata (uid and resourceVersion: never a value).
func secretForms(ctx context.Context, o Options, cfg *config.Config, p *plan.Plan, ix *gitindex.Index) {
	var want []*plan.Object
	forcedForm := map[*plan.Object]string{} // the form adopt.yaml forces
	forced := map[*plan.Object]string{}     // the adopt.yaml entry forcing it
	rules := map[*plan.Object]*sopsform.Rule{}
	sopsErr := map[*plan.Object]string{} // why the .sops.yaml does not serve it
	for _, ob := range p.SecretCandidates() {
		form, entry := cfg.SecretForm(ob.Namespace)
		if form == config.SecretFormNone {
			p.SecretLeftOut(ob, plan.Info, fmt.Sprintf("adopt.yaml %s forces form none for namespace %s: the Secret is left out of Git", entry, ob.Namespace))
			continue
		}
		if form == "" || form == config.SecretFormSops {
			rules[ob], sopsErr[ob] = sopsRule(p, ix, ob)
		}
		if form == config.SecretFormSops && rules[ob] == nil {
			if sopsErr[ob] == "" {
				sopsErr[ob] = "no " + sopsform.ConfigName + " was found at or above the Secret's path in the repo (or no repo was read: --repo)"
			}
			p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form sops for namespace %s, but %s: the Secret is left out of Git until a creation rule with age recipients matches its path", entry, ob.Namespace, sopsErr[ob]))
			continue
		}
		forcedForm[ob], forced[ob] = form, entry
		want = append(want, ob)
	}
	if len(want) == 0 || o.Kube == nil {
		return
	}
	ctrl, why, pub, err := findController(ctx, o, cfg)
	sealedOK := err == nil && pub != nil
	stores := esoStores{o: o, cfg: cfg}
	for _, ob := range want {
		var fits []formFit
		if r := rules[ob]; r != nil {
			fits = append(fits, formFit{form: plan.SecretFormSops,
				why:  fmt.Sprintf("%s creation_rules[%d] matches %s", r.Config, r.Index, r.File),
				also: fmt.Sprintf("%s creation_rules[%d] matches %s too", r.Config, r.Index, r.File)})
		}
		if sealedOK {
			fits = append(fits, formFit{form: plan.SecretFormSealed, why: why,
				also: fmt.Sprintf("the Sealed Secrets controller at Service %s/%s also runs", ctrl.Namespace, ctrl.Name)})
		}
		var (
			store    esoform.Store
			storeWhy string
			storeErr error
		)
		if f := forcedForm[ob]; f == "" || f == config.SecretFormESO {
			store, storeWhy, storeErr = stores.pick(ctx, ob.Namespace)
			if store.Name != "" {
				fits = append(fits, formFit{form: plan.SecretFormESO, why: storeWhy,
					also: store.String() + " fits too (" + storeWhy + ")"})
			}
		}
		form, chosen := pickForm(forcedForm[ob], forced[ob], fits)
		if form == "" {
			switch forcedForm[ob] {
			case config.SecretFormSealed:
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form sealed for namespace %s, but %s: the Secret is left out of Git until the controller answers", forced[ob], ob.Namespace, notFound(err)))
			case config.SecretFormESO:
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form eso for namespace %s, but %s: the Secret is left out of Git until a store fits", forced[ob], ob.Namespace, noStore(storeWhy, storeErr)))
			default:
				// A controller named or found that does not answer, a
				// .sops.yaml without a rule for the path, or a store that
				// failed is worth saying; none at all is today's plain
				// case.
				var not []string
				if err != nil {
					not = append(not, fmt.Sprintf("not sealed: %v", err))
				}
				if sopsErr[ob] != "" {
					not = append(not, "not encrypted with SOPS: "+sopsErr[ob])
				}
				if storeErr != nil {
					not = append(not, fmt.Sprintf("no ExternalSecret: %v", storeErr))
				}
				if len(not) > 0 {
					p.SecretLeftOut(ob, plan.Warning, strings.Join(not, "; ")+"; no other form fits: the Secret is left out of Git")
				}
			}
			continue
		}
		uid, rv, ok := readMeta(ctx, o, p, ob, "not adopted as "+form)
		if !ok {
			continue
		}
		switch form {
		case plan.SecretFormSops:
			r := rules[ob]
			p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormSops, UID: uid, SealedAt: rv, Why: chosen, Sops: &plan.SopsForm{
				File: r.File, Config: r.Config, ConfigSHA256: r.ConfigSHA256, Rule: r.Index, PathRegex: r.PathRegex, Age: r.Age, EncryptedRegex: r.EncryptedRegex,
			}})
		case plan.SecretFormESO:
			p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormESO, Store: store.String(), RemoteKey: esoform.RemoteKey(ob.Namespace, ob.Name), UID: uid, SealedAt: rv, Why: chosen})
		default:
			p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormSealed, Controller: ctrl.Namespace + "/" + ctrl.Name, Fingerprint: sealed.Fingerprint(pub), UID: uid, SealedAt: rv, Why: chosen})
		}
	}
}

// formFit is a form that fits a Secret: why it fits, and how the plan
// names it when another form wins (also).
type formFit struct{ form, why, also string }

// pickForm is the one rule that chooses a Secret's form, and says why.
// fits are the forms that fit, in the rule's order: sops (a .sops.yaml
// rule for the Secret's own path), sealed (a controller that answers),
// eso (a store that fits). The form adopt.yaml forces (entry) wins when
// it fits, and nothing else is chosen when it does not; else the first
// that fits, its why naming each other one that fits and why it lost.
// "" is no form.
func pickForm(forced, entry string, fits []formFit) (form, why string) {
	if forced != "" {
		for _, f := range fits {
			if f.form == forced {
				return f.form, "adopt.yaml " + entry + "; " + f.why
			}
		}
		return "", ""
	}
	if len(fits) == 0 {
		return "", ""
	}
	won := fits[0]
	why = won.why
	for _, f := range fits[1:] {
		why += "; " + f.also + ", and " + beats(won.form, f.form)
	}
	return won.form, why
}

// beats says why form won over other, and how to force other.
func beats(form, other string) string {
	force := "; adopt.yaml secrets.forms can force " + other + " for the namespace"
	if form == plan.SecretFormSops {
		return "a .sops.yaml rule for the Secret's own path wins over it, as the repo owners' choice for that file" + force
	}
	return "sealed is chosen where both fit, as it stores no copy outside Git" + force
}

// readMeta reads the Secret's uid and resourceVersion (secretMeta); when
// it cannot, it says so on the Secret, which stays left out.
func readMeta(ctx context.Context, o Options, p *plan.Plan, ob *plan.Object, not string) (uid, rv string, ok bool) {
	uid, rv, err := secretMeta(ctx, o, ob.Namespace, ob.Name)
	if err == nil {
		return uid, rv, true
	}
	if apierrors.IsForbidden(err) {
		p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("%s: not allowed to get Secrets in namespace %s, and the form reads the Secret (in memory, never written out); grant get on secrets there, then plan again. The Secret is left out of Git", not, ob.Namespace))
		return "", "", false
	}
	p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("%s: reading its metadata failed (%s); the Secret is left out of Git", not, explained(o, err)))
	return "", "", false
}

// sopsRule is the .sops.yaml creation rule for the file apply would write
// Secret ob to, in its Application's source path: the first of
// sopsform.FileCandidates a rule with age recipients matches. nil and
// why not otherwise ("" when no repo was read or it has no .sops.yaml
// there: today's case, which says nothing more).
func sopsRule(p *plan.Plan, ix *gitindex.Index, ob *plan.Object) (*sopsform.Rule, string) {
	if ix == nil {
		return nil, ""
	}
	dir := ""
	for _, a := range p.Applications {
		if a.Name == ob.App {
			dir = strings.TrimSuffix(a.SourcePath, "/")
		}
	}
	if dir == "" || dir == "." {
		return nil, "its Application has no source path"
	}
	read := func(f string) ([]byte, bool, error) {
		m, err := ix.Files(f)
		if err != nil {
			return nil, false, err
		}
		b, ok := m[f]
		return b, ok, nil
	}
	var files []string
	for _, name := range sopsform.FileCandidates(ob.Name) {
		f := path.Join(dir, name)
		files = append(files, f)
		r, err := sopsform.Match(read, f)
		if err != nil {
			return nil, err.Error()
		}
		if r != nil {
			return r, ""
		}
	}
	cfg, _, found, _ := sopsform.Config(read, files[0])
	if !found {
		return nil, ""
	}
	return nil, fmt.Sprintf("no creation rule of %s matches %s", cfg, strings.Join(files, ", "))
}

func notFound(err error) string {
	if err == nil {
		return "no Sealed Secrets controller was found (neither kubeseal's default Service kube-system/sealed-secrets-controller nor one labelled app.kubernetes.io/name=sealed-secrets; name it in adopt.yaml secrets.sealedSecretsController)"
	}
	return err.Error()
}

// sealedLabel is the label of the Sealed Secrets chart's Service.
const sealedLabel = "app.kubernetes.io/name=sealed-secrets"

// findController finds the Sealed Secrets controller and fetches its
// certificate: the Service adopt.yaml names; else kubeseal's default;
// else the one Service labelled app.kubernetes.io/name=sealed-secrets.
// It returns why that one; no controller is (zero, "", nil, nil); one
// found that does not answer is an error.
func findController(ctx context.Context, o Options, cfg *config.Config) (sealed.Controller, string, *rsa.PublicKey, error) {
	fetch := func(c sealed.Controller, why string) (sealed.Controller, string, *rsa.PublicKey, error) {
		pub, err := sealed.Cert(ctx, o.Kube, c)
		return c, why, pub, err
	}
	if ns, name := cfg.SealedSecretsService(); ns != "" {
		return fetch(sealed.Controller{Namespace: ns, Name: name}, "the controller adopt.yaml secrets.sealedSecretsController names")
	}
	def := sealed.Controller{Namespace: sealed.DefaultControllerNamespace, Name: sealed.DefaultControllerName}
	if _, err := o.Kube.CoreV1().Services(def.Namespace).Get(ctx, def.Name, metav1.GetOptions{}); err == nil {
		return fetch(def, "the Sealed Secrets controller at kubeseal's default Service")
	}
	l, err := o.Kube.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: sealedLabel})
	if err != nil || len(l.Items) == 0 {
		// Not allowed to list Services, or none: no controller known.
		return sealed.Controller{}, "", nil, nil
	}
	if len(l.Items) > 1 {
		var names []string
		for _, s := range l.Items {
			names = append(names, s.Namespace+"/"+s.Name)
		}
		return sealed.Controller{}, "", nil, fmt.Errorf("%d Services are labelled %s (%v): name the controller in adopt.yaml secrets.sealedSecretsController", len(l.Items), sealedLabel, names)
	}
	s := l.Items[0]
	return fetch(sealed.Controller{Namespace: s.Namespace, Name: s.Name}, "the Sealed Secrets controller at the one Service labelled "+sealedLabel)
}

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// secretMeta reads a Secret's uid and resourceVersion: its metadata only
// when a metadata client is at hand, so no value crosses the wire.
func secretMeta(ctx context.Context, o Options, ns, name string) (uid, rv string, err error) {
	if o.Clients.Metadata != nil {
		m, err := o.Clients.Metadata.Resource(secretsGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", "", err
		}
		return string(m.UID), m.ResourceVersion, nil
	}
	s, err := o.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	return string(s.UID), s.ResourceVersion, nil
}

func explained(o Options, err error) error {
	if o.Explain == nil {
		return err
	}
	return o.Explain(err)
}
