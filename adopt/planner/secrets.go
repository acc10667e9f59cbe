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
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/adopt/sopsform"
)

// secretForms chooses the form of each Secret the plan could adopt
// (plan.SecretCandidates), by one rule (docs/secrets.md):
//  1. the form adopt.yaml forces for its namespace (none, sealed, sops);
//  2. else sops, when the repo's .sops.yaml has a creation rule, with
//     age recipients, for the path apply writes the Secret to;
//  3. else sealed, when the Sealed Secrets controller answers with its
//     certificate;
//  4. else none: the Secret stays left out, as it always was.
//
// A path rule in the repo the pull request goes into is the repo owners'
// choice for that very file, where a running controller may serve other
// teams; the plan says which won when both fit. It reads the
// controller's Service and certificate, the repo's .sops.yaml files (from
// the index) and each Secret's metadata (uid and resourceVersion: never
// a value).
func secretForms(ctx context.Context, o Options, cfg *config.Config, p *plan.Plan, ix *gitindex.Index) {
	var want, sopsWant []*plan.Object
	forced := map[*plan.Object]string{} // the adopt.yaml entry forcing a form
	rules := map[*plan.Object]*sopsform.Rule{}
	sopsErr := map[*plan.Object]string{} // why the .sops.yaml does not serve it
	for _, ob := range p.SecretCandidates() {
		form, entry := cfg.SecretForm(ob.Namespace)
		if form == config.SecretFormNone {
			p.SecretLeftOut(ob, plan.Info, fmt.Sprintf("adopt.yaml %s forces form none for namespace %s: the Secret is left out of Git", entry, ob.Namespace))
			continue
		}
		if form != config.SecretFormSealed {
			rules[ob], sopsErr[ob] = sopsRule(p, ix, ob)
		}
		switch {
		case form == config.SecretFormSops && rules[ob] == nil:
			if sopsErr[ob] == "" {
				sopsErr[ob] = "no " + sopsform.ConfigName + " was found at or above the Secret's path in the repo (or no repo was read: --repo)"
			}
			p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form sops for namespace %s, but %s: the Secret is left out of Git until a creation rule with age recipients matches its path", entry, ob.Namespace, sopsErr[ob]))
		case rules[ob] != nil:
			forced[ob] = entry
			sopsWant = append(sopsWant, ob)
		default:
			forced[ob] = entry
			want = append(want, ob)
		}
	}
	if len(want)+len(sopsWant) == 0 || o.Kube == nil {
		return
	}
	ctrl, why, pub, err := findController(ctx, o, cfg)
	for _, ob := range sopsWant {
		uid, rv, ok := readMeta(ctx, o, p, ob, "not encrypted")
		if !ok {
			continue
		}
		r := rules[ob]
		chosen := fmt.Sprintf("%s creation_rules[%d] matches %s", r.Config, r.Index, r.File)
		switch {
		case forced[ob] != "":
			chosen = "adopt.yaml " + forced[ob] + "; " + chosen
		case err == nil && pub != nil:
			chosen += fmt.Sprintf("; the Sealed Secrets controller at Service %s/%s also runs, and a .sops.yaml rule for the Secret's own path wins over it (force sealed with adopt.yaml secrets.forms)", ctrl.Namespace, ctrl.Name)
		}
		p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormSops, UID: uid, SealedAt: rv, Why: chosen, Sops: &plan.SopsForm{
			File: r.File, Config: r.Config, ConfigSHA256: r.ConfigSHA256, Rule: r.Index, PathRegex: r.PathRegex, Age: r.Age, EncryptedRegex: r.EncryptedRegex,
		}})
	}
	if len(want) == 0 {
		return
	}
	if err != nil || pub == nil {
		for _, ob := range want {
			sops := ""
			if sopsErr[ob] != "" {
				sops = "; SOPS: " + sopsErr[ob]
			}
			switch {
			case forced[ob] != "":
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("adopt.yaml %s forces form sealed for namespace %s, but %s: the Secret is left out of Git until the controller answers", forced[ob], ob.Namespace, notFound(err)))
			case err != nil:
				// A controller named or found that does not answer is
				// worth saying; none at all is today's plain case.
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("not sealed: %v%s; the Secret is left out of Git", err, sops))
			case sopsErr[ob] != "":
				p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("not encrypted with SOPS: %s; no Sealed Secrets controller was found either: the Secret is left out of Git", sopsErr[ob]))
			}
		}
		return
	}
	fp := sealed.Fingerprint(pub)
	for _, ob := range want {
		uid, rv, ok := readMeta(ctx, o, p, ob, "not sealed")
		if !ok {
			continue
		}
		chosen := why
		if forced[ob] != "" {
			chosen = "adopt.yaml " + forced[ob] + "; " + why
		}
		p.SetSecretForm(ob, plan.SecretForm{Form: plan.SecretFormSealed, Controller: ctrl.Namespace + "/" + ctrl.Name, Fingerprint: fp, UID: uid, SealedAt: rv, Why: chosen})
	}
}

// readMeta reads the Secret's uid and resourceVersion (secretMeta); when
// it cannot, it says so on the Secret, which stays left out.
func readMeta(ctx context.Context, o Options, p *plan.Plan, ob *plan.Object, not string) (uid, rv string, ok bool) {
	uid, rv, err := secretMeta(ctx, o, ob.Namespace, ob.Name)
	if err == nil {
		return uid, rv, true
	}
	if apierrors.IsForbidden(err) {
		p.SecretLeftOut(ob, plan.Warning, fmt.Sprintf("%s: not allowed to get Secrets in namespace %s, and apply reads the Secret (in memory, never written out); grant get on secrets there, then plan again. The Secret is left out of Git", not, ob.Namespace))
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
