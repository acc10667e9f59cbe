package sopsform_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/sopsform"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const canary = "canary-Wm4sQ9-sops-pw"

var binary = []byte{0, 1, 0xfe, 0xff, 'k', 'e', 'y', 0x80}

// liveSecret is a Secret as the API server returns one that was
// hand-applied: server fields, the last-applied copy (the canary in
// clear), Argo CD's marks.
func liveSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "u-1", ResourceVersion: "42",
			Labels:        map[string]string{"app": "shop", "app.kubernetes.io/instance": "old"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + canary + `"}}`, "argocd.argoproj.io/tracking-id": "x:/Secret:shop/db", "team": "pay"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"password": []byte(canary), "cert.bin": binary, "pin": []byte("7")},
	}
}

// identity writes a fresh age identity to a file and returns its path and
// recipient.
func identity(t *testing.T) (file, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(file, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, id.Recipient().String()
}

func sopsBin(t *testing.T) string {
	t.Helper()
	dir, err := testenv.SopsBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "sops")
}

// leaks fails when b holds a value of the Secret in plaintext or base64.
func leaks(t *testing.T, where string, b []byte) {
	t.Helper()
	for _, v := range [][]byte{[]byte(canary), binary} {
		if bytes.Contains(b, v) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(v))) {
			t.Errorf("%s holds a value of the Secret (%d bytes) in plaintext or base64", where, len(v))
		}
	}
}

// TestEncryptDecryptsToTheLiveSecret runs the real sops CLI (v3.13.3)
// with age: the manifest carries no last-applied copy, tracking mark or
// server field; sops encrypts it as the repo's .sops.yaml rule says,
// reading the plaintext from stdin (nothing but the config is written to
// disk); Check accepts the result (every key encrypted to exactly the
// rule's two recipients, no value in clear); the real sops CLI, with
// either recipient's identity, decrypts it to the live values byte for
// byte (a binary value and a one-byte value included, compared in
// memory); Prove does the same with an identity and proves nothing
// without one.
func TestEncryptDecryptsToTheLiveSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := sopsBin(t)
	key1, rcp1 := identity(t)
	key2, rcp2 := identity(t)
	config := []byte("creation_rules:\n- path_regex: apps/.*/secret-[^/]*\\.yaml$\n  encrypted_regex: ^(data|stringData)$\n  age: " + rcp1 + "," + rcp2 + "\n")
	rule, err := sopsform.Match(func(p string) ([]byte, bool, error) { return config, p == ".sops.yaml", nil }, "apps/shop/secret-db.yaml")
	if err != nil || rule == nil {
		t.Fatalf("rule %v, %v", rule, err)
	}
	s := liveSecret()
	plain, err := sopsform.Manifest(s, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"last-applied-configuration", "tracking-id", "uid", "resourceVersion", "managedFields", "app.kubernetes.io/instance"} {
		if bytes.Contains(plain, []byte(gone)) {
			t.Errorf("the manifest carries %s:\n(withheld: it holds values)", gone)
		}
	}
	values := sopsform.Values(s)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cli := sopsform.CLI{Bin: bin, Env: []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}}
	enc, err := cli.Encrypt(ctx, rule, config, plain, values)
	if err != nil {
		t.Fatal(err)
	}
	leaks(t, "sops's output", enc)
	if err := sopsform.Check("Secret shop/db", enc, rule, values); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: db", "namespace: shop", "team: pay", "app: shop"} {
		if !bytes.Contains(enc, []byte(want)) {
			t.Errorf("the encrypted file lacks %q in clear (encrypted_regex keeps metadata readable)", want)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Encrypt left %d entries in TMPDIR", len(left))
	}
	for _, key := range []string{key1, key2} {
		dec, err := testenv.SopsDecrypt(ctx, key, enc)
		if err != nil {
			t.Fatal(err)
		}
		if err := sopsform.Same(dec, values); err != nil {
			t.Errorf("decrypted with the real sops: %v", err)
		}
	}
	if ok, err := cli.Prove(ctx, "Secret shop/db", rule.File, enc, values); ok || err != nil {
		t.Errorf("Prove without an identity: %v, %v; want false, nil", ok, err)
	}
	withKey := cli
	withKey.Env = append(append([]string{}, cli.Env...), "SOPS_AGE_KEY_FILE="+key1)
	if ok, err := withKey.Prove(ctx, "Secret shop/db", rule.File, enc, values); !ok || err != nil {
		t.Errorf("Prove with an identity: %v, %v; want true", ok, err)
	}
	other := map[string][]byte{"password": []byte(canary + "x"), "cert.bin": binary, "pin": []byte("7")}
	if ok, err := withKey.Prove(ctx, "Secret shop/db", rule.File, enc, other); ok || err == nil || !strings.Contains(err.Error(), `"password" differs`) {
		t.Errorf("Prove against other values: %v, %v; want the key named", ok, err)
	} else {
		leaks(t, "Prove's error", []byte(err.Error()))
	}
}

// TestCheckRefusesWhatSopsLeftInClear: a rule whose encrypted_regex
// leaves a data key out is refused by Check (sops really writes it in
// clear), and so is a file encrypted to other recipients than the rule's;
// neither error holds a value. Without sops on PATH, Encrypt says what
// to install.
func TestCheckRefusesWhatSopsLeftInClear(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := sopsBin(t)
	_, rcp := identity(t)
	config := []byte("creation_rules:\n- encrypted_regex: ^password$\n  age: " + rcp + "\n")
	rule, err := sopsform.Match(func(p string) ([]byte, bool, error) { return config, p == ".sops.yaml", nil }, "apps/shop/secret-db.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := liveSecret()
	plain, err := sopsform.Manifest(s, "")
	if err != nil {
		t.Fatal(err)
	}
	values := sopsform.Values(s)
	cli := sopsform.CLI{Bin: bin, Env: []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}}
	enc, err := cli.Encrypt(ctx, rule, config, plain, values)
	if err != nil {
		t.Fatal(err)
	}
	err = sopsform.Check("Secret shop/db", enc, rule, values)
	if err == nil || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("Check of a file with data in clear: %v", err)
	}
	leaks(t, "Check's error", []byte(err.Error()))
	_, other := identity(t)
	wrong := *rule
	wrong.Age = []string{other}
	if err := sopsform.Check("Secret shop/db", enc, &wrong, values); err == nil || !strings.Contains(err.Error(), "recipients") {
		t.Errorf("Check against other recipients: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	if _, err := (sopsform.CLI{}).Encrypt(ctx, rule, config, plain, values); !errors.Is(err, sopsform.ErrNoSops) || !strings.Contains(err.Error(), "Install sops") {
		t.Errorf("Encrypt without sops on PATH: %v", err)
	}
}
