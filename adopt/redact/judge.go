package redact

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// Judge decides by value whether a string is a secret, wherever it stands:
// gitleaks' maintained rule set (its default config, several hundred
// rules for tokens, keys and credentials), a URL with a password or a
// credential-like query parameter, and a long opaque string of high
// entropy. Build one per run with NewJudge and share it: the rules are
// compiled once. A nil *Judge judges nothing.
type Judge struct {
	d *detect.Detector
	// closed is a Judge whose rules did not load: it fails closed (every
	// value judged is a secret, every text masked whole).
	closed bool
}

// DefaultJudge is the process's one Judge, compiled on first use (40 ms
// and 14 MB of heap on the bench machine) and read-only after: the rules
// are as constant as a compiled regexp. When the rules do not load it
// returns the error and a Judge that fails closed, so a caller that goes
// on never lets a value through unjudged.
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
		return nil, fmt.Errorf("load the secret-detection rules: %w", err)
	}
	return &Judge{d: d}, nil
}

// Rule names of adopt's own checks; gitleaks' rules are "gitleaks:<id>".
const (
	RuleURLPassword = "url-password"
	RuleURLQuery    = "url-credential-query"
	RuleEntropy     = "high-entropy"
	RuleKeyName     = "secret-key-name"
)

// minJudged is the shortest value judged: shorter ones are flags, ports
// and words.
const minJudged = 8

// Secret returns the rule that finds a secret in value, "" when none. key
// is the name the value stands under (a map key, or an env-style entry's
// name), which gitleaks' generic rules read as context.
func (j *Judge) Secret(key, value string) string {
	if j == nil || len(value) < minJudged {
		return ""
	}
	if j.closed {
		return RuleUnloaded
	}
	if r := URLSecret(value); r != "" {
		return r
	}
	text := value
	if key != "" {
		text = key + "=" + value
	}
	for _, f := range j.d.DetectString(text) {
		return "gitleaks:" + f.RuleID
	}
	if opaque(value) {
		return RuleEntropy
	}
	return ""
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

// Hit is one secret-looking value in an object: where and by which rule,
// never the value.
type Hit struct {
	Path string
	Rule string
}

// Scan judges every string of a decoded object (maps and lists, as
// path.to[0].value) with j and the key-name rule, and returns the hits,
// in walk order. An env-style entry ({name|key: X, value: Y}) judges Y
// under the name X: a secret-like name makes Y a secret whatever it holds.
// Metadata other than labels and annotations is not judged.
func (j *Judge) Scan(obj map[string]any) []Hit {
	var hits []Hit
	var walk func(v any, path, key string)
	walk = func(v any, path, key string) {
		switch x := v.(type) {
		case map[string]any:
			name := envName(x)
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if path == "" && k == "metadata" {
					if m, ok := x[k].(map[string]any); ok {
						for _, sub := range []string{"labels", "annotations"} {
							walk(m[sub], "metadata."+sub, sub)
						}
					}
					continue
				}
				under := k
				switch {
				case name != "" && k == "value":
					under = name // an env-style entry: its name says what the value is
				case name != "" && x[k] == name:
					under = "" // and the name itself is no secret
				}
				walk(x[k], join(path, k), under)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", path, i), key)
			}
		case string:
			if x == "" {
				return
			}
			// A field named just "key" is a reference in Kubernetes objects
			// (secretKeyRef.key, items[].key, tolerations[].key,
			// matchExpressions[].key): only its value is judged.
			if key != "key" && SecretKey(key) && len(x) >= minJudged && strings.Trim(x, "0123456789") != "" && !strings.HasPrefix(x, PlaceholderPrefix) {
				hits = append(hits, Hit{Path: path, Rule: RuleKeyName})
				return
			}
			if r := j.Secret(key, x); r != "" {
				hits = append(hits, Hit{Path: path, Rule: r})
			}
		}
	}
	walk(obj, "", "")
	return hits
}

// envName is the name of an env-style entry ({name: X, value: Y} or
// {key: X, value: Y}), "" for any other map.
func envName(m map[string]any) string {
	if _, ok := m["value"]; !ok {
		return ""
	}
	for _, k := range []string{"name", "key"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// tokenLike finds the runs of characters a token is made of.
var tokenLike = regexp.MustCompile(`[A-Za-z0-9+/=_.-]{24,}`)

// Mask returns text with what looks like a secret replaced by Shown: the
// password of a URL and the value of a credential query parameter, what
// gitleaks' rules match, and long opaque tokens. It is for text adopt
// prints that it did not write itself (a pod's termination message, an
// event, an API server's message). A nil Judge masks the URLs and tokens
// alone.
func (j *Judge) Mask(text string) string {
	if j != nil && j.closed && text != "" {
		return Shown + " (withheld: the secret-detection rules did not load)"
	}
	text = urlLike.ReplaceAllStringFunc(text, maskURL)
	if j != nil {
		for _, f := range j.d.DetectString(text) {
			if f.Secret != "" && f.Secret != Shown {
				text = strings.ReplaceAll(text, f.Secret, Shown)
			}
		}
	}
	return tokenLike.ReplaceAllStringFunc(text, func(t string) string {
		if opaque(t) {
			return Shown
		}
		return t
	})
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
