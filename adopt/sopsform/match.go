// Package sopsform owns the SOPS form of a hand-applied Secret (issue
// 45): which creation rule of the GitOps repo's .sops.yaml matches the
// path apply writes the Secret to (Match), the Secret's clean manifest
// (Manifest), its encryption by the real sops CLI with the plaintext only
// on sops's stdin (CLI.Encrypt), the checks of the result against the
// rule and the live Secret (Check), and, where an age identity is at
// hand, its decryption again, compared with the live Secret in memory
// (CLI.Prove).
//
// It runs the sops CLI and never imports sops' library (that breaks the
// Argo CD build). It never writes a value, or a digest of one, to disk,
// an error or any output; the only file it writes is a copy of the
// repo's .sops.yaml, which holds public recipients. It never prints.
package sopsform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"filippo.io/age"
	"gopkg.in/yaml.v3"
)

// ConfigName is the file sops reads its creation rules from. sops ignores
// .sops.yml (it warns), and so does adopt.
const ConfigName = ".sops.yaml"

// Rule is the creation rule of a .sops.yaml that sops applies to File. It
// holds public recipients and regexes, never a value.
type Rule struct {
	// Config is the repo path of the .sops.yaml; ConfigSHA256 the hex
	// SHA-256 of its bytes (a public file: apply refuses another one).
	Config       string
	ConfigSHA256 string
	// Index is the rule's place in creation_rules; PathRegex its
	// path_regex ("" matches every file).
	Index     int
	PathRegex string
	// File is the repo path the rule matched.
	File string
	// Age are the rule's age recipients.
	Age []string
	// EncryptedRegex is the rule's encrypted_regex ("" for none).
	EncryptedRegex string
}

// ReadFile reads a file of the repo: found is false when it does not
// exist.
type ReadFile func(p string) (data []byte, found bool, err error)

// creationRule is what adopt reads of a sops creation rule: the fields
// that choose it, its age recipients, and every other kind of key, so
// that a rule adopt cannot encrypt with is named, not half-used.
type creationRule struct {
	PathRegex         string `yaml:"path_regex"`
	Age               any    `yaml:"age"`
	PGP               any    `yaml:"pgp"`
	KMS               any    `yaml:"kms"`
	GCPKMS            any    `yaml:"gcp_kms"`
	HCKms             any    `yaml:"hckms"`
	AzureKeyVault     any    `yaml:"azure_keyvault"`
	VaultURI          any    `yaml:"hc_vault_transit_uri"`
	KeyGroups         []any  `yaml:"key_groups"`
	EncryptedRegex    string `yaml:"encrypted_regex"`
	UnencryptedRegex  string `yaml:"unencrypted_regex"`
	EncryptedSuffix   string `yaml:"encrypted_suffix"`
	UnencryptedSuffix string `yaml:"unencrypted_suffix"`
}

type configFile struct {
	CreationRules []creationRule `yaml:"creation_rules"`
}

// Config finds the .sops.yaml sops reads for file when it runs in file's
// directory: the nearest one there or above, up to the repo's root.
// found is false when there is none.
func Config(read ReadFile, file string) (p string, data []byte, found bool, err error) {
	for dir := path.Dir(path.Clean(file)); ; dir = path.Dir(dir) {
		p = path.Join(dir, ConfigName)
		data, found, err = read(p)
		if err != nil || found {
			return p, data, found, err
		}
		if dir == "." || dir == "/" {
			return "", nil, false, nil
		}
	}
}

// Match finds the creation rule sops applies to file (a repo path): in
// the nearest .sops.yaml (Config), the first rule whose path_regex
// matches file relative to that config's directory, as sops matches it.
// It returns nil when there is no .sops.yaml or no rule matches. A
// config sops could not read (bad YAML, a bad regex), or a matching rule
// that encrypts to other keys than age (adopt can prove only age here),
// is an error naming the file and the rule.
func Match(read ReadFile, file string) (*Rule, error) {
	cfgPath, data, found, err := Config(read, file)
	if err != nil || !found {
		return nil, err
	}
	var cf configFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		return nil, fmt.Errorf("%s: sops cannot read it: %v", cfgPath, err)
	}
	rel := file
	if d := path.Dir(cfgPath); d != "." {
		rel = strings.TrimPrefix(file, d+"/")
	}
	for i, r := range cf.CreationRules {
		if r.PathRegex != "" {
			re, err := regexp.Compile(r.PathRegex)
			if err != nil {
				return nil, fmt.Errorf("%s: creation_rules[%d]: path_regex %q does not compile: %v", cfgPath, i, r.PathRegex, err)
			}
			if !re.MatchString(rel) {
				continue
			}
		}
		sum := sha256.Sum256(data)
		rule := &Rule{Config: cfgPath, ConfigSHA256: hex.EncodeToString(sum[:]), Index: i, PathRegex: r.PathRegex, File: file, EncryptedRegex: r.EncryptedRegex}
		if err := rule.keys(r); err != nil {
			return nil, fmt.Errorf("%s: creation_rules[%d] matches %s, but %v", cfgPath, i, file, err)
		}
		return rule, nil
	}
	return nil, nil
}

// keys reads the rule's age recipients and refuses every other kind.
func (rule *Rule) keys(r creationRule) error {
	var other []string
	for name, v := range map[string]any{"pgp": r.PGP, "kms": r.KMS, "gcp_kms": r.GCPKMS, "hckms": r.HCKms, "azure_keyvault": r.AzureKeyVault, "hc_vault_transit_uri": r.VaultURI} {
		if ks, _ := keyList(v); len(ks) > 0 {
			other = append(other, name)
		}
	}
	if len(r.KeyGroups) > 0 {
		other = append(other, "key_groups")
	}
	if len(other) > 0 {
		slices.Sort(other)
		return fmt.Errorf("it encrypts with %s: adopt encrypts only to a rule's age recipients (not yet to other keys or key groups); give the Secret's path a rule with age recipients only", strings.Join(other, ", "))
	}
	ks, err := keyList(r.Age)
	if err != nil {
		return err
	}
	if len(ks) == 0 {
		return fmt.Errorf("it names no age recipient: adopt encrypts only to age recipients; add one (age: age1...)")
	}
	for _, k := range ks {
		if _, err := age.ParseX25519Recipient(k); err != nil {
			return fmt.Errorf("age recipient %q is not an X25519 age recipient: %v", k, err)
		}
	}
	rule.Age = ks
	return nil
}

// keyList reads a key field as sops does: a comma-separated string or a
// list of strings.
func keyList(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		var out []string
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				out = append(out, k)
			}
		}
		return out, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("a key list holds %T, not a string", x)
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out, nil
	}
	return nil, fmt.Errorf("a key field is %T, not a string or a list", v)
}

// FileCandidates are the file names apply may write Secret name as, in
// the order Match is tried: the name of any other export
// (secret-<name>.yaml), then the suffixes SOPS users most often match
// (secret-<name>.sops.yaml, secret-<name>.enc.yaml).
func FileCandidates(name string) []string {
	return []string{"secret-" + name + ".yaml", "secret-" + name + ".sops.yaml", "secret-" + name + ".enc.yaml"}
}
