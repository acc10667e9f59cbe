// Package redact owns adopt's one rule for secret values (Rule) and the
// one walk that applies it to decoded YAML and JSON: which keys hold
// secrets (SecretKey, Reference), which values are secrets by
// what they hold (Judge: gitleaks' rules, URL credentials, entropy), the
// placeholder that takes a secret's place in a plan and in Git. Helm
// values (Values, through package helmrelease), the export check (Scan,
// through package plan for plan and apply alike), the first-sync
// preview's hiding (Hide, then Set) and the masking of text from the
// cluster (Mask: diagnostics, API warnings, server messages) all decide
// through it, so they cannot disagree. Errors that may carry a URL's
// credentials or a token go through gitops.Redact.
//
// It holds no state but the compiled rules (DefaultJudge), never reads
// the cluster, and never returns a secret value except to the caller
// that handed it in (Values' Set, Hide): Hits name a path and a rule.
package redact

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// PlaceholderPrefix starts every value Values puts in place of a secret.
const PlaceholderPrefix = "adopt:redacted:"

// Shown is what a preview or a message shows instead of a hidden value.
const Shown = "<redacted>"

// IsSecret reports whether an object of this group and kind is a core
// Secret, whose values adopt never writes, shows or keeps.
func IsSecret(group, kind string) bool { return group == "" && kind == "Secret" }

// Placeholder is the value that replaces the secret at key path p.
func Placeholder(p string) string { return PlaceholderPrefix + p }

// secretWords are the key words that hold secrets wherever they stand in a
// key (dbPassword, mysqlpassword, client_secret, authToken); keyWords only
// as a whole word (apiKey, private-key, sshKeys, but not keycloak or monkey).
var (
	secretWords = []string{"password", "passwd", "passphrase", "token", "secret", "credential", "creds", "apikey", "privatekey", "accesskey", "connectionstring"}
	keyWords    = map[string]bool{"key": true, "keys": true, "pwd": true, "pass": true, "dsn": true}
	// lastReference end a key that names or switches a secret rather than
	// holding it (secretName, tokenRef, apiKeyEnabled); firstReference
	// start one (existingSecret, createSecret, useSecret).
	lastReference  = map[string]bool{"name": true, "ref": true, "enabled": true, "create": true}
	firstReference = map[string]bool{"existing": true, "create": true, "use": true, "enable": true, "disable": true, "generate": true}
)

// SecretKey reports whether a key name holds a secret: it contains
// password, passwd, passphrase, token, secret, credential, creds, apikey,
// privatekey, accesskey or connectionstring, or has the word key, keys,
// pwd, pass or dsn (split at
// case changes, digits, '-', '_' and '.'), and is not a reference
// (Reference).
func SecretKey(k string) bool {
	if Reference(k) {
		return false
	}
	l := strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	for _, w := range words(k) {
		if keyWords[w] {
			return true
		}
	}
	return false
}

// Reference reports whether a key only points at or switches a secret:
// its first word is existing, create, use, enable, disable or generate
// (existingSecret, createSecret), or its last word is name, ref, enabled
// or create (secretName, tokenRef, apiKeyEnabled).
func Reference(k string) bool {
	w := words(k)
	if strings.HasPrefix(strings.ToLower(k), "existing") {
		return true
	}
	return len(w) > 0 && (firstReference[w[0]] || lastReference[w[len(w)-1]])
}

// words splits a key into lower-case words at case changes, digits and
// separators: "apiKeyRef" is api, key, ref.
func words(k string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(k)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// Scalar is the text of a scalar value as a template or a manifest would
// print it (strings as they are, numbers in full without an exponent,
// booleans as true/false), and false for maps, lists and null.
func Scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Set is the secret values one object or release may meet: a preview hides
// a change that shows one, and a message has them masked. The zero Set and
// a nil *Set hold nothing but still hide placeholders.
type Set struct {
	values []string
}

// Add adds secret values. Values under 4 bytes are not kept: they would
// hide ordinary words, booleans and small numbers.
func (s *Set) Add(vs ...string) {
	for _, v := range vs {
		if len(v) >= minHeld {
			s.values = append(s.values, v)
		}
	}
}

// Holds reports whether v is one of the set's values, or (8 bytes and
// longer) inside one: a value a chart prints into a Secret, or part of it.
func (s *Set) Holds(v string) bool {
	if s == nil || len(v) < minHeld {
		return false
	}
	for _, d := range s.values {
		if d == v || len(v) >= 8 && strings.Contains(d, v) {
			return true
		}
	}
	return false
}

// Hides reports whether text may not be shown: it holds a placeholder (so
// the other side of a change is the secret it replaced), a secret value,
// or (8 bytes and longer) is part of one.
func (s *Set) Hides(text string) bool {
	if strings.Contains(text, PlaceholderPrefix) || s.Holds(text) {
		return true
	}
	if s == nil {
		return false
	}
	for _, d := range s.values {
		if strings.Contains(text, d) {
			return true
		}
	}
	return false
}

// Mask replaces every secret value in msg with Shown, longest first.
func (s *Set) Mask(msg string) string {
	if s == nil {
		return msg
	}
	vs := append([]string(nil), s.values...)
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		msg = strings.ReplaceAll(msg, v, Shown)
	}
	return msg
}
