package sopsform

import (
	"strings"
	"testing"

	"filippo.io/age"
)

// repo is a ReadFile over files by path.
func repo(files map[string]string) ReadFile {
	return func(p string) ([]byte, bool, error) {
		s, ok := files[p]
		return []byte(s), ok, nil
	}
}

// recipient is a fresh age recipient.
func recipient(t *testing.T) string {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient().String()
}

// TestMatch: the nearest .sops.yaml decides, its first rule whose
// path_regex matches the path relative to the config's directory wins,
// age recipients are read as sops reads them (a comma-separated string
// or a list), and a rule adopt cannot encrypt with is an error naming
// the file and the rule, never a silent half-use.
func TestMatch(t *testing.T) {
	r1, r2 := recipient(t), recipient(t)
	cases := []struct {
		name  string
		files map[string]string
		file  string
		// want is "config#index recipients..." or "" for no rule; err a
		// fragment of the error.
		want, err string
	}{
		{"no config", map[string]string{}, "apps/web/secret-db.yaml", "", ""},
		{"root rule by path", map[string]string{".sops.yaml": "creation_rules:\n- path_regex: ^other/\n  age: " + r2 + "\n- path_regex: apps/.*/secret-[^/]*\\.yaml$\n  encrypted_regex: ^(data|stringData)$\n  age: " + r1 + "," + r2 + "\n"},
			"apps/web/secret-db.yaml", ".sops.yaml#1 " + r1 + " " + r2, ""},
		{"no rule matches", map[string]string{".sops.yaml": "creation_rules:\n- path_regex: \\.enc\\.yaml$\n  age: " + r1 + "\n"}, "apps/web/secret-db.yaml", "", ""},
		{"a rule without path_regex matches all", map[string]string{".sops.yaml": "creation_rules:\n- age: [" + r2 + "]\n"}, "apps/web/secret-db.yaml", ".sops.yaml#0 " + r2, ""},
		{"nearest config, path relative to it", map[string]string{
			".sops.yaml":      "creation_rules:\n- age: " + r1 + "\n",
			"apps/.sops.yaml": "creation_rules:\n- path_regex: ^web/secret-db\\.yaml$\n  age: " + r2 + "\n",
		}, "apps/web/secret-db.yaml", "apps/.sops.yaml#0 " + r2, ""},
		{"pgp rule", map[string]string{".sops.yaml": "creation_rules:\n- pgp: ABCDEF\n  age: " + r1 + "\n"}, "apps/web/secret-db.yaml", "", "encrypts with pgp"},
		{"key groups", map[string]string{".sops.yaml": "creation_rules:\n- key_groups:\n  - age: [" + r1 + "]\n"}, "apps/web/secret-db.yaml", "", "key_groups"},
		{"no age", map[string]string{".sops.yaml": "creation_rules:\n- path_regex: .*\n"}, "apps/web/secret-db.yaml", "", "no age recipient"},
		{"bad recipient", map[string]string{".sops.yaml": "creation_rules:\n- age: age1nope\n"}, "apps/web/secret-db.yaml", "", "not an X25519 age recipient"},
		{"bad regex", map[string]string{".sops.yaml": "creation_rules:\n- path_regex: '('\n  age: " + r1 + "\n"}, "apps/web/secret-db.yaml", "", "does not compile"},
		{"bad YAML", map[string]string{".sops.yaml": "creation_rules: [\n"}, "apps/web/secret-db.yaml", "", "sops cannot read it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Match(repo(c.files), c.file)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), ".sops.yaml") {
					t.Fatalf("error %v, want one naming the config and %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if r != nil {
				got = r.Config + "#" + string(rune('0'+r.Index)) + " " + strings.Join(r.Age, " ")
				if r.File != c.file || len(r.ConfigSHA256) != 64 {
					t.Errorf("rule %+v: want file %s and the config's SHA-256", r, c.file)
				}
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
