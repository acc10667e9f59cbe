package sealed

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const canary = "adopt-canary-Zr81q"

// open is the controller's side of the format, written here from the
// format alone, so that a change to Seal that the controller would not
// read fails without a cluster (TestTakeoverInPlace proves it against the
// real controller).
func open(t *testing.T, key *rsa.PrivateKey, sealed string, label string) ([]byte, error) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || len(b) < 2+int(binary.BigEndian.Uint16(b)) {
		return nil, errors.New("too short")
	}
	n := int(binary.BigEndian.Uint16(b))
	sessionKey, err := rsa.DecryptOAEP(sha256.New(), nil, key, b[2:2+n], []byte(label))
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(sessionKey)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return gcm.Open(nil, make([]byte, gcm.NonceSize()), b[2+n:], nil)
}

func TestSealStrictScope(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	binaryValue := []byte{0x00, 0xff, 0xfe, 0x80, 0x0a}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "u-1", ResourceVersion: "7",
			Labels:      map[string]string{"app": "db"},
			Annotations: map[string]string{"team": "payments", "kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + canary + `"}}`}},
		Data:       map[string][]byte{"blob": binaryValue, "password": []byte("overridden")},
		StringData: map[string]string{"password": canary},
	}
	ss, err := Seal(&key.PublicKey, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"blob": binaryValue, "password": []byte(canary)}
	if len(ss.Spec.EncryptedData) != len(want) {
		t.Fatalf("sealed keys %v; want blob and password", slices.Sorted(maps.Keys(ss.Spec.EncryptedData)))
	}
	for k, v := range want {
		got, err := open(t, key, ss.Spec.EncryptedData[k], "shop/db")
		if err != nil {
			t.Fatalf("key %s does not open with label shop/db: %v", k, err)
		}
		if !bytes.Equal(got, v) {
			t.Errorf("key %s opens to %d bytes that differ from the value (%d bytes)", k, len(got), len(v))
		}
		for _, other := range []string{"shop/other", "shop", ""} {
			if _, err := open(t, key, ss.Spec.EncryptedData[k], other); err == nil {
				t.Errorf("key %s opens with label %q: the scope is not strict", k, other)
			}
		}
	}
	if ss.APIVersion != "bitnami.com/v1alpha1" || ss.Kind != "SealedSecret" || ss.Metadata.Name != "db" || ss.Metadata.Namespace != "shop" || ss.Metadata.Labels != nil || ss.Metadata.Annotations != nil {
		t.Errorf("header %s %s %+v", ss.APIVersion, ss.Kind, ss.Metadata)
	}
	tm := ss.Spec.Template
	if tm.Type != corev1.SecretTypeOpaque || tm.Metadata.Name != "db" || tm.Metadata.Namespace != "shop" ||
		!maps.Equal(tm.Metadata.Labels, map[string]string{"app": "db"}) || !maps.Equal(tm.Metadata.Annotations, map[string]string{"team": "payments"}) {
		t.Errorf("template: type %s, %s/%s, labels %v, annotation keys %v; want Opaque, shop/db, labels app=db, annotations team=payments only (values not shown)",
			tm.Type, tm.Metadata.Namespace, tm.Metadata.Name, tm.Metadata.Labels, slices.Sorted(maps.Keys(tm.Metadata.Annotations)))
	}
	y, err := ss.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for name, form := range map[string]string{
		"the value": canary, "its base64": base64.StdEncoding.EncodeToString([]byte(canary)), "its hex": hex.EncodeToString([]byte(canary)),
		"the binary value's base64": base64.StdEncoding.EncodeToString(binaryValue), "the uid": "u-1", "a resourceVersion": "resourceVersion",
	} {
		if bytes.Contains(y, []byte(form)) {
			t.Errorf("the manifest holds %s", name)
		}
	}
	// Two seals of the same value differ: each has its own session key.
	again, err := Seal(&key.PublicKey, s)
	if err != nil {
		t.Fatal(err)
	}
	if again.Spec.EncryptedData["blob"] == ss.Spec.EncryptedData["blob"] {
		t.Error("two seals of one value are equal")
	}
}

func TestTemplateMetaDrops(t *testing.T) {
	kept := map[string]string{"team": "payments", "sealedsecrets.bitnami.com/patch": "true", "kubernetes.io/description": "x"}
	drop := []string{"kubectl.kubernetes.io/last-applied-configuration", "kubecfg.ksonnet.io/last-applied-configuration",
		ManagedAnnotation, "sealedsecrets.bitnami.com/cluster-wide", "sealedsecrets.bitnami.com/namespace-wide", "argocd.argoproj.io/tracking-id"}
	all := maps.Clone(kept)
	for _, k := range drop {
		all[k] = "true"
	}
	got := TemplateMeta(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns", Annotations: all}})
	if !maps.Equal(got.Annotations, kept) {
		t.Errorf("annotations %v; want %v", got.Annotations, kept)
	}
	if got := TemplateMeta(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "ns",
		Annotations: map[string]string{ManagedAnnotation: "true"}}}); got.Annotations != nil {
		t.Errorf("annotations %v; want none", got.Annotations)
	}
}

func TestSealRefusesNoNamespace(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Seal(&key.PublicKey, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"k": canary}})
	if err == nil || bytes.Contains([]byte(err.Error()), []byte(canary)) {
		t.Fatalf("err %v; want a refusal without the value", err)
	}
}

// TestSealRefusesAValueInTheTemplate: a label or annotation the template
// would carry to Git in plaintext that holds one of the Secret's values
// (raw, JSON-escaped inside another tool's copy of the object, or base64
// as that copy's data holds it) stops the seal, naming the annotation or
// label, the key and the kubectl command that removes it, never the
// value. Short values ("true") are not looked for: ordinary metadata
// holds them by chance.
func TestSealRefusesAValueInTheTemplate(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	multi := "multi-line-value-Qx81bz\nline-two-of-it\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(canary))
	for _, c := range []struct {
		name                string
		labels, annotations map[string]string
		want                string
	}{
		{"raw in an annotation", nil, map[string]string{"note": "pw is " + canary}, `annotation note holds the value of key password`},
		{"base64 in another tool's copy", nil, map[string]string{"kapp.k14s.io/original": `{"data":{"password":"` + b64 + `"}}`}, "annotate secret -n shop db kapp.k14s.io/original-"},
		{"JSON-escaped multi-line", nil, map[string]string{"z-copy": `{"stringData":{"tls.key":` + string(must(t, multi)) + `}}`}, "annotation z-copy holds the value of key tls.key"},
		{"raw in a label", map[string]string{"pw": canary}, nil, "label secret -n shop db pw-"},
	} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Labels: c.labels, Annotations: c.annotations},
			Data: map[string][]byte{"password": []byte(canary), "tls.key": []byte(multi), "flag": []byte("true")}}
		_, err := Seal(&key.PublicKey, s)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v; want a refusal saying %q", c.name, err, c.want)
		}
		if err != nil && (bytes.Contains([]byte(err.Error()), []byte(canary)) || bytes.Contains([]byte(err.Error()), []byte(b64))) {
			t.Errorf("%s: the refusal holds the value", c.name)
		}
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", Annotations: map[string]string{"enabled": "true"}},
		Data: map[string][]byte{"flag": []byte("true"), "password": []byte(canary)}}
	if _, err := Seal(&key.PublicKey, s); err != nil {
		t.Errorf("a short value in ordinary metadata: %v; want it sealed", err)
	}
}

func must(t *testing.T, s string) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
