package sopsform

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// droppedAnnotation reports the annotations the manifest must not carry:
// the last-applied copies (kubectl's and kubecfg's: the data in
// plaintext, outside sops' encrypted_regex) and Argo CD's tracking
// marks, which record state rather than intent.
func droppedAnnotation(k string) bool {
	switch k {
	case argoapp.AnnotationTrackingID, argoapp.AnnotationInstallationID:
		return true
	}
	return redact.CopiesData(k)
}

// Manifest is the plaintext manifest of the live Secret s: apiVersion,
// kind, name, namespace, labels (but Argo CD's instance label,
// instanceLabel, "" for app.kubernetes.io/instance), annotations (but
// droppedAnnotation's), type, immutable and data, and nothing the server
// owns (uid, resourceVersion, managedFields, ownerReferences...). The
// caller hands it to sops only and drops it.
func Manifest(s *corev1.Secret, instanceLabel string) ([]byte, error) {
	if instanceLabel == "" {
		instanceLabel = "app.kubernetes.io/instance"
	}
	md := map[string]any{"name": s.Name, "namespace": s.Namespace}
	labels := map[string]any{}
	for k, v := range s.Labels {
		if k != instanceLabel {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	ann := map[string]any{}
	for k, v := range s.Annotations {
		if !droppedAnnotation(k) {
			ann[k] = v
		}
	}
	if len(ann) > 0 {
		md["annotations"] = ann
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md}
	if s.Type != "" {
		obj["type"] = string(s.Type)
	}
	if s.Immutable != nil {
		obj["immutable"] = *s.Immutable
	}
	data := map[string]any{}
	for k, v := range s.Data {
		data[k] = base64.StdEncoding.EncodeToString(v)
	}
	for k, v := range s.StringData { // the API server merges it over data
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	if len(data) > 0 {
		obj["data"] = data
	}
	return export.Marshal(obj)
}

// Values are the live Secret's values by key, stringData merged over
// data as the API server merges them: what the committed file must
// decrypt to. They are compared in memory only.
func Values(s *corev1.Secret) map[string][]byte {
	out := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// ErrNoSops is the sops CLI missing from PATH.
var ErrNoSops = errors.New("the sops CLI is not on PATH: apply encrypts a Secret adopted in the SOPS form with it, with the plaintext on its stdin only. Install sops v3.9 or later (go install github.com/getsops/sops/v3/cmd/sops@v3.13.3, or your package manager's), put it on PATH, then run apply again")

// CLI runs the real sops CLI.
type CLI struct {
	// Bin is the sops executable; "" looks sops up on PATH.
	Bin string
	// Env is its environment; nil is this process's. An age identity
	// (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, SOPS_AGE_KEY_CMD) in it lets
	// Prove decrypt.
	Env []string
}

func (c CLI) bin() (string, error) {
	if c.Bin != "" {
		return c.Bin, nil
	}
	p, err := exec.LookPath("sops")
	if err != nil {
		return "", ErrNoSops
	}
	return p, nil
}

func (c CLI) env() []string {
	if c.Env != nil {
		return c.Env
	}
	return os.Environ()
}

// Identity names the age identity in the environment sops decrypts with
// ("" when there is none).
func (c CLI) Identity() string {
	for _, kv := range c.env() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY", "SOPS_AGE_KEY_CMD":
			if v != "" {
				return k
			}
		}
	}
	return ""
}

// Encrypt has sops encrypt the plaintext manifest plain as rule.File,
// with config (the bytes of rule.Config) deciding the recipients and
// what is encrypted: sops runs with `--config <copy of the .sops.yaml>
// encrypt --filename-override <rule.File beside it>`, YAML in and out,
// and reads plain from its stdin. Only the config is written to disk, in
// a private temporary directory removed on return. values are the
// Secret's values: a message of sops's that holds one is withheld.
func (c CLI) Encrypt(ctx context.Context, rule *Rule, config, plain []byte, values map[string][]byte) ([]byte, error) {
	bin, err := c.bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "adopt-sops-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, filepath.FromSlash(rule.Config))
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(cfg, config, 0o600); err != nil {
		return nil, err
	}
	args := []string{"--config", cfg, "encrypt", "--input-type", "yaml", "--output-type", "yaml",
		"--filename-override", filepath.Join(dir, filepath.FromSlash(rule.File))}
	return c.run(ctx, bin, dir, plain, values, "encrypt "+rule.File, args...)
}

func (c CLI) run(ctx context.Context, bin, dir string, stdin []byte, values map[string][]byte, what string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, c.env()
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sops %s: %v: %s", what, err, Scrub(strings.TrimSpace(errb.String()), values))
	}
	return out.Bytes(), nil
}

// Scrub withholds msg when it holds one of values (at least 4 bytes) in
// plaintext or base64.
func Scrub(msg string, values map[string][]byte) string {
	if Leaks([]byte(msg), values) != "" {
		return "(sops's message withheld: it quoted a value of the Secret)"
	}
	return msg
}

// Leaks names the key of a value (at least 4 bytes long) that b holds in
// plaintext or base64; "" when none. Shorter values cannot be told from
// chance and are checked by Check's per-key rule instead.
func Leaks(b []byte, values map[string][]byte) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := values[k]
		if len(v) < 4 {
			continue
		}
		if bytes.Contains(b, v) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(v))) {
			return k
		}
	}
	return ""
}

// Check reads what sops wrote for the Secret ref (group/kind ns/name)
// and refuses it unless every key of values is there and encrypted
// (ENC[AES256_GCM,...]), no other key is, the file is encrypted to
// exactly the rule's age recipients, and no value appears in plaintext
// or base64. That is what adopt proves without a private key.
func Check(ref string, out []byte, rule *Rule, values map[string][]byte) error {
	var doc struct {
		Data map[string]any `yaml:"data"`
		Sops *struct {
			Age []struct {
				Recipient string `yaml:"recipient"`
			} `yaml:"age"`
		} `yaml:"sops"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("%s: sops's output for %s is not YAML: %v", ref, rule.File, err)
	}
	if doc.Sops == nil {
		return fmt.Errorf("%s: sops's output for %s has no sops metadata: nothing was encrypted", ref, rule.File)
	}
	var got []string
	for _, a := range doc.Sops.Age {
		got = append(got, a.Recipient)
	}
	want := slices.Clone(rule.Age)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: sops encrypted %s to age recipients %v, not %v as %s creation_rules[%d] names: refusing to write it", ref, rule.File, got, want, rule.Config, rule.Index)
	}
	for k := range values {
		v, ok := doc.Data[k].(string)
		if !ok {
			return fmt.Errorf("%s: sops's output for %s lacks key %q", ref, rule.File, k)
		}
		if !strings.HasPrefix(v, "ENC[AES256_GCM,") {
			return fmt.Errorf("%s: %s creation_rules[%d] leaves data.%s unencrypted (encrypted_regex %q, or an unencrypted suffix or regex): refusing to write a Secret value in clear; encrypt ^(data|stringData)$ for this path", ref, rule.Config, rule.Index, k, rule.EncryptedRegex)
		}
	}
	for k := range doc.Data {
		if _, ok := values[k]; !ok {
			return fmt.Errorf("%s: sops's output for %s holds key %q the Secret does not", ref, rule.File, k)
		}
	}
	if k := Leaks(out, values); k != "" {
		return fmt.Errorf("%s: sops's output for %s holds the value of key %q in plaintext or base64: refusing to write it", ref, rule.File, k)
	}
	return nil
}

// Prove decrypts enc (the file sops wrote as file) with the age identity
// of the environment (Identity) and compares every value with values, in
// memory; the plaintext is dropped on return and never named. It returns
// false without running sops when there is no identity: then only
// Check's facts hold.
func (c CLI) Prove(ctx context.Context, ref, file string, enc []byte, values map[string][]byte) (bool, error) {
	if c.Identity() == "" {
		return false, nil
	}
	bin, err := c.bin()
	if err != nil {
		return false, err
	}
	dir, err := os.MkdirTemp("", "adopt-sops-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	plain, err := c.run(ctx, bin, dir, enc, values, "decrypt "+file, "decrypt", "--input-type", "yaml", "--output-type", "yaml",
		"--filename-override", filepath.Join(dir, filepath.Base(file)))
	if err != nil {
		return false, fmt.Errorf("%s: %w (with the age identity of %s)", ref, err, c.Identity())
	}
	if err := Same(plain, values); err != nil {
		return false, fmt.Errorf("%s: %s decrypted with %s: %w", ref, file, c.Identity(), err)
	}
	return true, nil
}

// Same compares a decrypted Secret manifest's data with values, per key,
// in memory: the error names a key, never a value.
func Same(plain []byte, values map[string][]byte) error {
	var doc struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(plain, &doc); err != nil {
		return errors.New("the decrypted manifest is not YAML")
	}
	for k, want := range values {
		enc, ok := doc.Data[k]
		if !ok {
			return fmt.Errorf("key %q is missing", k)
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return fmt.Errorf("key %q is not base64", k)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("key %q differs from the live Secret's", k)
		}
	}
	if len(doc.Data) != len(values) {
		return fmt.Errorf("it holds %d keys, the live Secret %d", len(doc.Data), len(values))
	}
	return nil
}
