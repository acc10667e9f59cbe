package planner

import (
	"context"
	"crypto/rsa"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
)

// secretForms chooses the form of each Secret the plan could adopt
// (plan.SecretCandidates) by one rule (pickForm): the form adopt.yaml
// forces for its namespace; else a SealedSecret when the Sealed Secrets
// controller answers with its certificate; else an ExternalSecret when an
// External Secrets store fits the namespace (esoform.FindStores); else
// none, as it always was. It reads the controller's Service and
// certificate, the stores, and each Secret's metadata (uid and
// resourceVersion: never a value).
func secretForms(ctx context.Context, o Options, cfg *config.Config, p *plan.Plan) {
	var want []*plan.Object
	forced := map[*plan.Object]string{} // the adopt.yaml entry forcing a form
	for _, ob := range p.SecretCandidates() {
		switch form, entry := cfg.SecretForm(ob.Namespace); form {
		case config.SecretFormNone:
			p.SecretLeftOut(ob, plan.Info, fmt.Sprintf("adopt.yaml %s forces form none for namespace %s: the Secret is left out of Git", entry, ob.Namespace))
		case config.SecretFormSealed, config.SecretFormESO:
			forced[ob] = entry
			want = append(want, ob)
		default:
			want = append(want, ob)
		}
	}
	if len(want) == 0 || o.Kube == nil {
		return
	}
	ctrl, why, pub, err := findController(ctx, o, cfg)
	stores := esoStores{o: o, cfg: cfg}
	for _, ob := range want {
		forcedForm, _ := cfg.SecretForm(ob.Namespace)
		sealedOK := err == nil && pub != nil
		store, storeWhy, storeErr := stores.pick(ctx, ob.Namespace)
		form, chosen := pickForm(forcedForm, forced[ob], sealedOK, why, store, storeWhy)
		switch form {
		case "":
			switch {
			case forcedForm == config.SecretFormSealed:
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form sealed for namespace %s, but %s: the Secret is left out of Git until the controller answers", forced[ob], ob.Namespace, notFound(err)))
			case forcedForm == config.SecretFormESO:
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form eso for namespace %s, but %s: the Secret is left out of Git until a store fits", forced[ob], ob.Namespace, noStore(storeWhy, storeErr)))
			case err != nil:
				// A controller named or found that does not answer is
				// worth saying; none at all is today's plain case.
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("not sealed: %v; the Secret is left out of Git", err))
			case storeErr != nil:
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("no ExternalSecret: %v; the Secret is left out of Git", storeErr))
			}
			continue
		}
		uid, rv, merr := secretMeta(ctx, o, ob.Namespace, ob.Name)
		if merr != nil {
			if apierrors.IsForbidden(merr) {
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("not adopted as %s: not allowed to get Secrets in namespace %s, and the form reads the Secret (in memory, never written out); grant get on secrets there, then plan again. The Secret is left out of Git", form, ob.Namespace))
				continue
			}
			p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("not adopted as %s: reading its metadata failed (%s); the Secret is left out of Git", form, explained(o, merr)))
			continue
		}
		if form == plan.SecretFormESO {
			p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormESO, Store: store.String(), RemoteKey: esoform.RemoteKey(ob.Namespace, ob.Name), UID: uid, SealedAt: rv, Why: chosen})
			continue
		}
		p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormSealed, Controller: ctrl.Namespace + "/" + ctrl.Name, Fingerprint: sealed.Fingerprint(pub), UID: uid, SealedAt: rv, Why: chosen})
	}
}

// pickForm is the one rule that chooses a Secret's form, and says why:
// the form adopt.yaml forces (entry), when it fits; else sealed when the
// controller answers (sealedWhy), since it writes nothing outside Git
// before the merge and keeps no copy of the value in another system;
// else eso when a store fits (store, storeWhy). Where both fit, why
// names the other one and how to force it. "" is no form.
func pickForm(forced, entry string, sealedOK bool, sealedWhy string, store esoform.Store, storeWhy string) (form, why string) {
	esoOK := store.Name != ""
	switch forced {
	case config.SecretFormSealed:
		if sealedOK {
			return plan.SecretFormSealed, "adopt.yaml " + entry + "; " + sealedWhy
		}
		return "", ""
	case config.SecretFormESO:
		if esoOK {
			return plan.SecretFormESO, "adopt.yaml " + entry + "; " + storeWhy
		}
		return "", ""
	}
	switch {
	case sealedOK && esoOK:
		return plan.SecretFormSealed, sealedWhy + "; " + store.String() + " fits too (" + storeWhy + "): sealed is chosen where both fit, as it stores no copy outside Git; adopt.yaml secrets.forms can force eso for the namespace"
	case sealedOK:
		return plan.SecretFormSealed, sealedWhy
	case esoOK:
		return plan.SecretFormESO, storeWhy
	}
	return "", ""
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
