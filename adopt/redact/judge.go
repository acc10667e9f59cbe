package redact

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// Judge holds the compiled rules of the one secret rule (see Rule):
// gitleaks' maintained rule set (its default config, several hundred
// rules for tokens, keys and credentials) beside adopt's own. Share one
// (DefaultJudge): the rules are compiled once. A nil *Judge applies the
// name rule alone.
type Judge struct {
	d *detect.Detector
	// closed is a Judge whose rules did not load: it fails closed (every
	// value judged is a secret, every text masked whole).
	closed bool
}

// DefaultJudge is the process's one Judge, compiled on first use (40 ms
// and 14 MB of heap on the bench machine) and read-only after: the rules
// are as constant as a compiled regexp. When the rules do not load it
// returns the error, which every engine returns to stop the run, and a
// Judge that fails closed, so that nothing is let through unjudged even
// by a caller that goes on.
var DefaultJudge = sync.OnceValues(func() (*Judge, error) { return orClosed(NewJudge()) })

// orClosed is j, or, when the rules did not load (err), a Judge that
// fails closed.
func orClosed(j *Judge, err error) (*Judge, error) {
	if err != nil {
		return &Judge{closed: true}, err
	}
	return j, nil
}

// RuleUnloaded is what a Judge whose rules did not load finds in every
// value it judges.
const RuleUnloaded = "rules-not-loaded"

// NewJudge compiles gitleaks' default rules. gitleaks' own logger is
// silenced: a detector must never print what it looks at.
func NewJudge() (*Judge, error) {
	logging.Logger = zerolog.Nop()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("adopt stops here: the secret-detection rules compiled into it (gitleaks' default rule set) did not load, so it cannot tell which values are secrets and will not read, write or show any: %w. Reinstall adopt; if it persists, report it with `adopt version`", err)
	}
	return &Judge{d: d}, nil
}

// Rule names of adopt's own checks; gitleaks' rules are "gitleaks:<id>".
const (
	RuleURLPassword = "url-password"
	RuleURLQuery    = "url-credential-query"
	RuleEntropy     = "high-entropy"
	RuleKeyName     = "secret-key-name"
	// RuleKnown is a value the caller knows is secret (a Helm release puts
	// it into a Secret).
	RuleKnown = "known-secret-value"
)

// minHeld is the shortest value that can hold a secret: shorter ones are
// flags, small numbers and words. A Set keeps nothing shorter (it would
// hide ordinary text), so neither does the name rule.
const minHeld = 4

// minJudged is the shortest value judged by what it holds: a URL with a
// password, a token or a key is longer.
const minJudged = 8

// Rule returns the rule by which text, the text of a scalar (Scalar)
// standing under name (its map key, the key of the list it is an item of,
// or an env-style entry's name), is a secret, "" when it is none. This is
// adopt's one secret rule; Values, Scan, Hide and Mask all decide through
// it:
//
//   - nothing is a secret when empty, a Placeholder already, or Shown;
//   - by name (RuleKeyName): a value of at least 4 bytes, strings and
//     numbers alike, whose own name is a SecretKey, unless that name is
//     just "key" (secretKeyRef.key, tolerations[].key: it names something)
//     or the value is a switch (true, false). Only the value's own name
//     counts: a key above it does not (passCredentials, signatureKeys and
//     jwtTokens hold schemas in a CustomResourceDefinition, and a secret
//     volume holds settings);
//   - by value, for values of 8 bytes and more: a URL with a password or
//     a credential query parameter (URLSecret), one of gitleaks' rules
//     (which read name=value, so the name is context), or a long opaque
//     token of high entropy.
func (j *Judge) Rule(name, text string) string {
	if text == "" || text == Shown || strings.HasPrefix(text, PlaceholderPrefix) {
		return ""
	}
	if j != nil && j.closed {
		return RuleUnloaded
	}
	if byName(name, text) {
		return RuleKeyName
	}
	if j == nil || len(text) < minJudged {
		return ""
	}
	if r := URLSecret(text); r != "" {
		return r
	}
	pair := text
	if name != "" {
		pair = name + "=" + text
	}
	for _, f := range j.d.DetectString(pair) {
		return "gitleaks:" + f.RuleID
	}
	if opaque(text) {
		return RuleEntropy
	}
	return ""
}

// byName is the name part of Rule.
func byName(name, text string) bool {
	return len(text) >= minHeld && text != "true" && text != "false" && !strings.EqualFold(name, "key") && SecretKey(name)
}

// urlLike finds URLs with a scheme inside a longer text.
var urlLike = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// credentialParams are query parameters that carry credentials.
var credentialParams = map[string]bool{
	"token": true, "access_token": true, "accesstoken": true, "auth": true, "auth_token": true, "password": true, "passwd": true,
	"pwd": true, "secret": true, "client_secret": true, "key": true, "api_key": true, "apikey": true, "sig": true,
	"signature": true, "x-amz-signature": true, "x-amz-credential": true, "sas": true, "private_token": true,
}

// URLSecret returns the rule when s is or holds a URL with a password in
// its userinfo (scheme://user:pass@host) or a credential-like query
// parameter with a value (?token=…), "" otherwise.
func URLSecret(s string) string {
	if !strings.Contains(s, "://") {
		return ""
	}
	for _, m := range urlLike.FindAllString(s, -1) {
		u, err := url.Parse(m)
		if err != nil {
			// An unparsable URL with userinfo is still a credential.
			if at := strings.Index(m, "@"); at > 0 && strings.Contains(m[strings.Index(m, "://")+3:at], ":") {
				return RuleURLPassword
			}
			continue
		}
		if p, ok := u.User.Password(); ok && p != "" {
			return RuleURLPassword
		}
		for k, vs := range u.Query() {
			if credentialParams[strings.ToLower(k)] && len(vs) > 0 && vs[0] != "" {
				return RuleURLQuery
			}
		}
	}
	return ""
}

// opaque says whether s is one long token of random-looking characters:
// 24 to 4096 bytes, no whitespace, letters and digits both, not hex alone
// (digests and ids), not a UUID, and Shannon entropy of at least 4.5 bits
// a character. Certificates (public) and image digests are not tokens.
func opaque(s string) bool {
	if len(s) < 24 || len(s) > 4096 || strings.ContainsAny(s, " \t\r\n") || strings.Contains(s, "@sha256:") {
		return false
	}
	var lower, upper, digit bool
	hex := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
			hex = hex && r <= 'f'
		case r >= 'A' && r <= 'Z':
			upper = true
			hex = hex && r <= 'F'
		case r >= '0' && r <= '9':
			digit = true
		case r == '-' || r == '_' || r == '+' || r == '/' || r == '=' || r == '.':
			hex = hex && r == '-'
		default:
			return false
		}
	}
	if hex || !digit || !(lower && upper) {
		return false
	}
	return entropy(s) >= 4.5
}

// entropy is s's Shannon entropy in bits a byte.
func entropy(s string) float64 {
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	h := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// tokenLike finds the runs of characters a token is made of.
var tokenLike = regexp.MustCompile(`[A-Za-z0-9+/=_.-]{24,}`)

// Mask returns text with what looks like a secret replaced by Shown,
// by Rule: by value, the password of a URL and the value of a credential
// query parameter, what gitleaks' rules match and long opaque tokens; by
// name, the value of every name=value or name: value pair in it (quoted
// or not; the value up to a space, quote, comma, semicolon or &). It is
// for text adopt prints that it did not write itself (a pod's termination
// message, an event, an API server's message). A Judge whose rules did
// not load withholds the text whole; a nil Judge masks by name alone.
func (j *Judge) Mask(text string) string {
	if j != nil && j.closed && text != "" {
		return Shown + " (withheld: the secret-detection rules did not load)"
	}
	if j != nil {
		text = urlLike.ReplaceAllStringFunc(text, maskURL)
		for _, f := range j.d.DetectString(text) {
			if f.Secret != "" && f.Secret != Shown {
				text = strings.ReplaceAll(text, f.Secret, Shown)
			}
		}
		text = tokenLike.ReplaceAllStringFunc(text, func(t string) string {
			if opaque(t) {
				return Shown
			}
			return t
		})
	}
	return maskNamed(text)
}

// namedValue finds name=value and name: value pairs in a text.
var namedValue = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*[:=][ \t]*["']?([^\s"',;&]+)`)

// maskNamed replaces the value of every pair in text whose name makes it
// a secret (Rule's name part) with Shown.
func maskNamed(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range namedValue.FindAllStringSubmatchIndex(text, -1) {
		name, value := text[m[2]:m[3]], text[m[4]:m[5]]
		if strings.Contains(value, Shown) || !byName(name, value) {
			continue
		}
		b.WriteString(text[last:m[4]])
		b.WriteString(Shown)
		last = m[5]
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// maskURL hides a URL's password and its credential query values, as
// written (the rest stays, to say where).
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	out := raw
	if p, ok := u.User.Password(); ok && p != "" {
		if i := strings.Index(out, "@"); i > 0 {
			head := out[:i]
			if c := strings.LastIndex(head, ":"); c > strings.Index(head, "://")+2 {
				out = head[:c+1] + Shown + out[i:]
			}
		}
	}
	for k, vs := range u.Query() {
		if credentialParams[strings.ToLower(k)] {
			for _, v := range vs {
				if v != "" {
					out = strings.ReplaceAll(out, k+"="+url.QueryEscape(v), k+"="+Shown)
					out = strings.ReplaceAll(out, k+"="+v, k+"="+Shown)
				}
			}
		}
	}
	return out
}
