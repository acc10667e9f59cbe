package esoform_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
)

// TestManifestKeepsMetadataButTheCopies: the ExternalSecret carries the
// Secret's type, labels and annotations, but not the last-applied copies,
// Argo CD's tracking or the operator's own marks, and never a value.
func TestManifestKeepsMetadataButTheCopies(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop",
		Labels:      map[string]string{"app": "db", "app.kubernetes.io/instance": "shop"},
		Annotations: map[string]string{"team": "payments", budget.LastAppliedKey: `{"stringData":{"password":"` + canary + `"}}`, "argocd.argoproj.io/tracking-id": "x"}},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"password": []byte(canary)}}
	es, err := esoform.Manifest(esoform.Store{Kind: esoform.KindSecretStore, Namespace: "shop", Name: "vault"}, esoform.RemoteKey("shop", "db"), s)
	if err != nil {
		t.Fatal(err)
	}
	y, err := es.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if leaks(y) {
		t.Fatal("the manifest holds the canary")
	}
	for _, want := range []string{"creationPolicy: Owner", "deletionPolicy: Retain", "type: kubernetes.io/basic-auth", "team: payments", "app: db", "key: adopt-shop-db", "kind: SecretStore", "name: vault"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("manifest lacks %q:\n%s", want, y)
		}
	}
	for _, not := range []string{"last-applied", "tracking-id", "app.kubernetes.io/instance"} {
		if strings.Contains(string(y), not) {
			t.Errorf("manifest carries %q", not)
		}
	}
	s.Annotations["note"] = "{{ .password }}"
	if _, err := esoform.Manifest(esoform.Store{Kind: esoform.KindSecretStore, Name: "vault"}, "k", s); err == nil || leaks([]byte(err.Error())) {
		t.Fatalf("a template-looking annotation: err = %v, want a refusal naming it", err)
	}
}

// TestChoose: the named store, else the namespace's one SecretStore,
// else the one ClusterSecretStore; several ask to name one; none says
// why each does not fit.
func TestChoose(t *testing.T) {
	ss := func(name string, fits bool) esoform.Candidate {
		return esoform.Candidate{Store: esoform.Store{Kind: esoform.KindSecretStore, Namespace: "shop", Name: name}, Fits: fits, Why: name + " why"}
	}
	css := func(name string, fits bool) esoform.Candidate {
		return esoform.Candidate{Store: esoform.Store{Kind: esoform.KindClusterSecretStore, Name: name}, Fits: fits, Why: name + " why"}
	}
	for _, c := range []struct {
		name    string
		cs      []esoform.Candidate
		named   string
		want    string
		wantErr string
	}{
		{"one SecretStore", []esoform.Candidate{ss("a", true), css("c", true)}, "", "SecretStore shop/a", ""},
		{"a SecretStore that does not fit gives way", []esoform.Candidate{ss("a", false), css("c", true)}, "", "ClusterSecretStore c", ""},
		{"two fit", []esoform.Candidate{ss("a", true), ss("b", true)}, "", "", "2 SecretStores fit"},
		{"named", []esoform.Candidate{ss("a", true), ss("b", true)}, "SecretStore shop/b", "SecretStore shop/b", ""},
		{"named without namespace", []esoform.Candidate{ss("a", true)}, "SecretStore a", "SecretStore shop/a", ""},
		{"named, not fitting", []esoform.Candidate{ss("a", false)}, "SecretStore shop/a", "", "a why"},
		{"named, absent", nil, "ClusterSecretStore z", "", "not among"},
		{"none fits", []esoform.Candidate{ss("a", false)}, "", "", ""},
	} {
		got, _, err := esoform.Choose(c.cs, c.named)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if g := got.String(); (c.want == "" && got.Name != "") || (c.want != "" && g != c.want) {
			t.Errorf("%s: chose %q, want %q", c.name, g, c.want)
		}
	}
}

func TestParseStore(t *testing.T) {
	for _, s := range []esoform.Store{{Kind: esoform.KindSecretStore, Namespace: "a", Name: "b"}, {Kind: esoform.KindClusterSecretStore, Name: "c"}} {
		got, err := esoform.ParseStore(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStore(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := esoform.ParseStore("Vault x"); err == nil {
		t.Error("ParseStore(Vault x) passed")
	}
}
