package redact

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "dbPassword": true, "mysqlpassword": true, "PASSWD": true, "passphrase": true,
		"token": true, "authToken": true, "client_secret": true, "secrets": true, "credentials": true,
		"apiKey": true, "api-key": true, "private_key": true, "sshKeys": true, "secretKey": true, "accessKeyId": true, "pwd": true,
		"secretName": false, "tokenRef": false, "apiKeyEnabled": false, "createSecret": false, "existingSecret": false,
		"secretKeyRef": false, "keycloak": false, "monkey": false, "greeting": false, "replicas": false, "": false,
	} {
		if got := SecretKey(k); got != want {
			t.Errorf("SecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

func TestScalar(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
		ok   bool
	}{
		{"s", "s", true}, {true, "true", true}, {float64(80123456789), "80123456789", true}, {1.5, "1.5", true},
		{int64(-7), "-7", true}, {uint8(3), "3", true}, {json.Number("12e3"), "12e3", true},
		{nil, "", false}, {map[string]any{}, "", false}, {[]any{}, "", false},
	} {
		got, ok := Scalar(c.v)
		if got != c.want || ok != c.ok {
			t.Errorf("Scalar(%#v) = %q, %v; want %q, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

// TestValues: a value is judged by its own name at every depth and in
// lists (a list's items by the list's name); a key above it does not make
// it secret (credentials.user); a reference stays; a known value anywhere
// is replaced.
func TestValues(t *testing.T) {
	known := &Set{}
	known.Add("rendered-into-a-secret")
	in := map[string]any{
		"credentials": map[string]any{"user": "user-1", "list": []any{map[string]any{"password": float64(12345)}}, "secretName": "keep", "keys": []any{"k3y-1"}},
		"plain":       map[string]any{"dsn": "rendered-into-a-secret", "n": float64(12345)},
	}
	out, paths, hide := Values(in, known, nil)
	want := []string{"credentials.keys[0]", "credentials.list[0].password", "plain.dsn"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	c := out["credentials"].(map[string]any)
	if c["secretName"] != "keep" || c["user"] != "user-1" || c["keys"].([]any)[0] != Placeholder("credentials.keys[0]") {
		t.Errorf("credentials %v", c)
	}
	if out["plain"].(map[string]any)["n"] != float64(12345) {
		t.Errorf("plain number changed: %v", out)
	}
	if !hide.Holds("rendered-into-a-secret") || !hide.Holds("12345") || hide.Holds("keep") || hide.Holds("user-1") {
		t.Errorf("the hidden set %v", hide.values)
	}
	if _, p, _ := Values(map[string]any{"a": "b"}, nil, nil); p != nil {
		t.Errorf("nil set: %v", p)
	}
}

func TestSetHides(t *testing.T) {
	s := &Set{}
	s.Add("hunter2-and-more", "abc") // "abc" is too short to keep
	for text, want := range map[string]bool{
		"hunter2-and-more":                     true,
		"prefix hunter2-and-more suffix":       true, // holds one
		"hunter2-and":                          true, // part of one, 8 bytes or more
		"hunt":                                 false,
		"abc":                                  false,
		Placeholder("db.password"):             true,
		"x " + Placeholder("db.password") + "": true,
		"ordinary":                             false,
	} {
		if got := s.Hides(text); got != want {
			t.Errorf("Hides(%q) = %v, want %v", text, got, want)
		}
	}
	var nilSet *Set
	if !nilSet.Hides(Placeholder("p")) || nilSet.Hides("x") {
		t.Error("a nil set must still hide placeholders and nothing else")
	}
	if got := s.Mask("was hunter2-and-more, now abc"); got != "was <redacted>, now abc" {
		t.Errorf("Mask %q", got)
	}
}

// TestJudgeScan (issue 36): every string of an object is judged. A URL
// with a password or a token query, a GitHub token, a long opaque string,
// and an env-style entry whose name is secret-like are hits, each with its
// key path and rule; the entry's name, ordinary values, digests, UUIDs and
// metadata other than labels and annotations are not, nor a field named
// just key (secretKeyRef.key, tolerations[].key: a reference).
func TestJudgeScan(t *testing.T) {
	j, err := DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{
		"metadata": map[string]any{"name": "aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF", "annotations": map[string]any{"note": "https://x.invalid/?access_token=abc123def456"}},
		"data": map[string]any{
			"DATABASE_URL": "postgres://app:S3cr3tPassw0rd@db.invalid:5432/app",
			"GITHUB":       "ghp_0123456789abcdefABCDEF0123456789abcd",
			"opaque":       "aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF",
			"digest":       "3f786850e387550fdab836ed7e6dc881de23001b",
			"uid":          "0f8fad5b-d9cb-469f-a165-70867728950e",
			"image":        "registry.invalid/web@sha256:3f786850e387550fdab836ed7e6dc881de23001b3f786850e387550fdab836ed",
			"greeting":     "hello there, friend",
		},
		"env": []any{
			map[string]any{"name": "SMTP_PASSWORD", "value": "plain words here"},
			map[string]any{"name": "QUEUE", "value": "jobs-default"},
			// References named key: a Secret's key, a toleration's.
			map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}},
		},
		"tolerations": []any{map[string]any{"key": "dedicated-credentials", "operator": "Exists"}},
	}
	want := []Hit{
		{"data.DATABASE_URL", RuleURLPassword}, {"data.GITHUB", "gitleaks:github-pat"}, {"data.opaque", RuleEntropy},
		{"env[0].value", RuleKeyName}, {"metadata.annotations.note", RuleURLQuery},
	}
	if got := j.Scan(obj); !reflect.DeepEqual(got, want) {
		t.Errorf("hits %v, want %v", got, want)
	}
	var none *Judge
	if got := none.Scan(map[string]any{"data": map[string]any{"x": "postgres://a:b@c/d", "apiToken": "key-name-only"}}); len(got) != 1 || got[0] != (Hit{"data.apiToken", RuleKeyName}) {
		t.Errorf("a nil Judge judges key names alone: %v", got)
	}
}

// TestJudgeMask (issue 36): text adopt prints but did not write (a
// termination message, an event) has its secrets masked, and keeps the
// rest to say where.
func TestJudgeMask(t *testing.T) {
	j, err := DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	in := "panic: dial postgres://app:S3cr3tPassw0rd@db.invalid:5432/app failed; webhook https://h.invalid/n?token=abc123def456&x=1; GITHUB_TOKEN=ghp_0123456789abcdefABCDEF0123456789abcd; session aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF; exit 1"
	got := j.Mask(in)
	for _, secret := range []string{"S3cr3tPassw0rd", "abc123def456", "ghp_0123456789abcdefABCDEF0123456789abcd", "aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q is still in %q", secret, got)
		}
	}
	for _, kept := range []string{"panic: dial postgres://app:", "@db.invalid:5432/app failed", "x=1", "exit 1"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q is gone from %q", kept, got)
		}
	}
}

// TestJudgeFailsClosed (issue 44): when the rules do not load, the
// default judge is not nil (which would judge nothing) but one that finds
// a secret in every value it judges and masks every text whole.
func TestJudgeFailsClosed(t *testing.T) {
	j, err := orClosed(nil, errors.New("rules did not load"))
	if err == nil || j == nil {
		t.Fatalf("orClosed = %v, %v; want a judge and the error", j, err)
	}
	if r := j.Rule("replicas", "12345678"); r != RuleUnloaded {
		t.Errorf("Rule = %q, want %q", r, RuleUnloaded)
	}
	if hits := j.Scan(map[string]any{"data": map[string]any{"mode": "fast-and-loose"}}); len(hits) != 1 {
		t.Errorf("Scan found %v, want the one value", hits)
	}
	if m := j.Mask("token is aZ3kP9qL2mX8vB4nR7tY1wE6uI0oS5dF"); strings.Contains(m, "aZ3k") || strings.Contains(m, "token is") {
		t.Errorf("Mask = %q, want the text withheld whole", m)
	}
	if ok, err := orClosed(&Judge{}, nil); err != nil || ok.closed {
		t.Errorf("orClosed of a loaded judge = %+v, %v", ok, err)
	}
}

// TestRule (issue 44): the one rule. By its own name, strings and numbers
// of 4 bytes and more alike, never a switch, a reference or a field named
// just key; by value, 8 bytes and more.
func TestRule(t *testing.T) {
	j, err := DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, text, want string }{
		{"db_password", "12345678", RuleKeyName},
		{"db_password", "1234", RuleKeyName},
		{"db_password", "123", ""},
		{"automountServiceAccountToken", "true", ""},
		{"tokenRef", "some-secret-name", ""},
		{"key", "dedicated-credentials", ""},
		{"replicas", "12345678", ""},
		{"DATABASE_URL", "postgres://app:s3cr3tpass@db:5432/app", RuleURLPassword},
		{"password", Placeholder("db.password"), ""},
		{"password", Shown, ""},
	} {
		if got := j.Rule(c.name, c.text); got != c.want {
			t.Errorf("Rule(%q, %q) = %q, want %q", c.name, c.text, got, c.want)
		}
	}
}

// TestScanKubernetesSettings: settings beneath secret names in
// Kubernetes objects (a secret volume's items and mode, a token
// projection, automountServiceAccountToken, imagePullSecrets' names, a
// CustomResourceDefinition's schema of passCredentials and signatureKeys)
// are not secrets: only a value's own name counts. An env entry named by
// key is judged by its name.
func TestScanKubernetesSettings(t *testing.T) {
	spec := map[string]any{
		"schema": map[string]any{"properties": map[string]any{
			"passCredentials": map[string]any{"description": "PassCredentials pass credentials to all domains", "type": "boolean"},
			"signatureKeys":   map[string]any{"type": "array", "items": map[string]any{"required": []any{"keyID"}, "type": "object"}},
		}},
		"automountServiceAccountToken": true,
		"imagePullSecrets":             []any{map[string]any{"name": "regcred"}},
		"volumes": []any{
			map[string]any{"name": "tls", "secret": map[string]any{"secretName": "tls", "defaultMode": float64(420), "items": []any{map[string]any{"key": "tls.crt", "path": "tls.crt"}}}},
			map[string]any{"name": "token", "projected": map[string]any{"sources": []any{map[string]any{"serviceAccountToken": map[string]any{"path": "token", "expirationSeconds": float64(3600), "audience": "vault"}}}}},
		},
		"vars": []any{map[string]any{"key": "API_TOKEN", "value": float64(12345678)}},
	}
	got := (*Judge)(nil).Scan(map[string]any{"spec": spec})
	want := []Hit{{"spec.vars[0].value", RuleKeyName}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hits %v, want %v", got, want)
	}
}

// TestMaskByName (issue 44): Mask masks the value of a name=value or
// name: value pair by the name rule, as Scan judges a map.
func TestMaskByName(t *testing.T) {
	j, err := DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"db_password: 12345678 rejected":                       "db_password: " + Shown + " rejected",
		`{"API_TOKEN":"abcd1234","mode":"x"}`:                  `{"API_TOKEN":"` + Shown + `","mode":"x"}`,
		"token: true, replicas=12345678":                       "token: true, replicas=12345678",
		"tokenRef=some-secret-name key: dedicated-credentials": "tokenRef=some-secret-name key: dedicated-credentials",
	} {
		if got := j.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}
