package redact

import (
	"encoding/json"
	"reflect"
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

// TestValues: the path rule reaches every depth and list; a reference under
// a secret key stays; a known value anywhere is replaced.
func TestValues(t *testing.T) {
	known := &Set{}
	known.Add("rendered-into-a-secret")
	in := map[string]any{
		"credentials": map[string]any{"user": "u", "list": []any{map[string]any{"x": float64(12345)}}, "secretName": "keep"},
		"plain":       map[string]any{"dsn": "rendered-into-a-secret", "n": float64(12345)},
	}
	out, paths, hide := Values(in, known)
	want := []string{"credentials.list[0].x", "credentials.user", "plain.dsn"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	c := out["credentials"].(map[string]any)
	if c["secretName"] != "keep" || c["user"] != Placeholder("credentials.user") {
		t.Errorf("credentials %v", c)
	}
	if out["plain"].(map[string]any)["n"] != float64(12345) {
		t.Errorf("plain number changed: %v", out)
	}
	if !hide.Holds("rendered-into-a-secret") || !hide.Holds("12345") || hide.Holds("keep") {
		t.Errorf("the hidden set %v", hide.values)
	}
	if _, p, _ := Values(map[string]any{"a": "b"}, nil); p != nil {
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
