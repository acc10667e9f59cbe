package helmrelease

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/helmpath"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/adopt-dev/adopt/adopt/redact"
)

const manifest = `---
# Source: web/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: web-auth
data:
  pw: ` + "czNjcjN0LXBhc3N3MHJk" + `
  url: ` + "" + `
---
# Source: web/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-cfg
data:
  greeting: hello
`

// TestRedact: key paths that name secrets and values that land in a
// Secret become placeholders; references to secrets, plain values and
// values under 4 bytes (the one rule's threshold, issue 44) stay.
func TestRedact(t *testing.T) {
	in := map[string]any{
		"greeting": "hello",
		"auth":     map[string]any{"user": "alice", "password": "p4ss", "existingSecret": "web-auth", "secretName": "x", "pin": "123"},
		"db":       map[string]any{"dsn": "s3cr3t-passw0rd"}, // lands in the Secret (base64 decoded)
		"tokens":   []any{map[string]any{"apiToken": "t0ken-1"}},
		"replicas": float64(2),
		"apiKey":   "k3y-1",
		"tls":      map[string]any{"enabled": true},
		"cache":    map[string]any{"pwd": "abc"},
	}
	out, paths, _ := Redact(nil, in, manifest)
	want := []string{"apiKey", "auth.password", "db.dsn", "tokens[0].apiToken"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	auth := out["auth"].(map[string]any)
	if auth["password"] != "adopt:redacted:auth.password" || auth["user"] != "alice" || auth["existingSecret"] != "web-auth" || auth["secretName"] != "x" {
		t.Errorf("auth %v", auth)
	}
	if out["db"].(map[string]any)["dsn"] != redact.Placeholder("db.dsn") {
		t.Errorf("db %v", out["db"])
	}
	if out["greeting"] != "hello" || out["replicas"] != float64(2) {
		t.Errorf("plain values changed: %v", out)
	}
	if in["auth"].(map[string]any)["password"] != "p4ss" {
		t.Error("Redact changed its input")
	}
	if out["auth"].(map[string]any)["pin"] != "123" || out["cache"].(map[string]any)["pwd"] != "abc" {
		t.Errorf("values under 4 bytes changed: %v", out)
	}
}

// TestRedactByValue (issue 36): values a key name does not flag are
// judged by what they hold. An env-style list ({name, value}) with a
// secret-like name, keys such as pass, creds and connectionString, a URL
// with a password or a token query under an ordinary key, and a GitHub
// token under an ordinary key all become placeholders; ordinary values,
// image references and digests stay. Without a Judge (the old rule) the
// ones found by value stay, which is what leaked.
func TestRedactByValue(t *testing.T) {
	j, err := redact.DefaultJudge()
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{
		"extraEnv": []any{
			map[string]any{"name": "DB_PASSWORD", "value": "plain-words-here"},
			map[string]any{"name": "LOG_LEVEL", "value": "debug-verbose"},
		},
		"extraVars": []any{map[string]any{"key": "API_TOKEN", "value": "any-text-at-all"}},
		"db":        map[string]any{"pass": "short-pass-1", "creds": "user:pw-value", "connectionString": "Server=db;User=a;Password=b"},
		"upstream":  "postgres://app:S3cr3tPassw0rd@db.example.invalid:5432/app",
		"webhook":   "https://hooks.example.invalid/notify?token=abcdef0123456789",
		"github":    "ghp_0123456789abcdefABCDEF0123456789abcd",
		"image":     "registry.invalid/web@sha256:3f786850e387550fdab836ed7e6dc881de23001b3f786850e387550fdab836ed",
		"greeting":  "hello there, friend",
	}
	_, paths, _ := Redact(j, in)
	want := []string{"db.connectionString", "db.creds", "db.pass", "extraEnv[0].value", "extraVars[0].value", "github", "upstream", "webhook"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v, want %v", paths, want)
	}
	_, old, _ := Redact(nil, in)
	for _, p := range []string{"github", "upstream", "webhook"} {
		if slices.Contains(old, p) {
			t.Errorf("%s is found without a Judge: the by-value case is not shown", p)
		}
	}
}

// TestRedactEveryType: under a secret key, numbers (as helm --set stores
// them, int64, and as a release record reads them back, float64), list
// items and values nested in maps become placeholders; a value only a
// hook's Secret holds is found as well (issue 26: a numeric password
// reached Git). A switch (apiKey: true) holds no secret and stays, and a
// value is judged by its own key, not one above it (secrets.nested.plain),
// as in an exported object (issue 44).
func TestRedactEveryType(t *testing.T) {
	hook := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pre\n  annotations: {helm.sh/hook: pre-install}\nstringData:\n  seed: hook-only-seed-value\n"
	in := map[string]any{
		"db":        map[string]any{"password": float64(80123456789), "port": float64(5432)},
		"cache":     map[string]any{"password": int64(4242424242)},
		"auth":      map[string]any{"apiKey": true, "apiKeyEnabled": true},
		"secrets":   map[string]any{"nested": map[string]any{"password": "d33p-value", "plain": "pl41n-value"}},
		"passwords": []any{"a1b2c3", float64(31415926)},
		"init":      map[string]any{"seed": "hook-only-seed-value"},
		"empty":     map[string]any{"password": "", "token": nil},
	}
	out, paths, hide := Redact(nil, in, manifest, hook)
	want := []string{"cache.password", "db.password", "init.seed", "passwords[0]", "passwords[1]", "secrets.nested.password"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	for _, p := range want {
		if !strings.Contains(fmt.Sprint(out), redact.Placeholder(p)) {
			t.Errorf("no placeholder for %s in %v", p, out)
		}
	}
	if out["db"].(map[string]any)["port"] != float64(5432) || out["auth"].(map[string]any)["apiKeyEnabled"] != true || out["auth"].(map[string]any)["apiKey"] != true ||
		out["secrets"].(map[string]any)["nested"].(map[string]any)["plain"] != "pl41n-value" {
		t.Errorf("plain values changed: %v", out)
	}
	if e := out["empty"].(map[string]any); e["password"] != "" || e["token"] != nil {
		t.Errorf("empty values changed: %v", e)
	}
	for _, v := range []string{"80123456789", "4242424242", "d33p-value", "hook-only-seed-value", "s3cr3t-passw0rd"} {
		if !hide.Holds(v) {
			t.Errorf("the preview's hidden set lacks %s", v)
		}
	}
	if s := fmt.Sprint(out); strings.Contains(s, "80123456789") || strings.Contains(s, "8.0123456789e+10") || strings.Contains(s, "4242424242") {
		t.Errorf("a number leaked: %s", s)
	}
}

func TestSecretsAndRecords(t *testing.T) {
	if got := Secrets(manifest, "shop"); !reflect.DeepEqual(got, []string{"shop/web-auth"}) {
		t.Errorf("Secrets %v", got)
	}
	if !IsRecord("Secret", "sh.helm.release.v1.web.v3", map[string]string{"owner": "helm", "name": "web"}) {
		t.Error("a release Secret is not a record")
	}
	if IsRecord("Secret", "web-auth", map[string]string{"owner": "helm"}) || IsRecord("Secret", "sh.helm.release.v1.web.v1", nil) {
		t.Error("a workload Secret counted as a record")
	}
	cmds := RetireCommands("shop", "web", StorageSecret)
	if got := cmds[len(cmds)-1]; got != "kubectl -n shop delete secrets -l owner=helm,name=web" {
		t.Errorf("retire %q", got)
	}
}

// TestCompare: identical objects count, Secret data differences are kept,
// an immutable field change would fail, and objects on one side only are
// named.
func TestCompare(t *testing.T) {
	rendered := strings.Replace(manifest, "czNjcjN0LXBhc3N3MHJk", base64.StdEncoding.EncodeToString([]byte("adopt:redacted:auth.password")), 1) + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {selector: {matchLabels: {app: web2}}}
`
	stored := manifest + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {selector: {matchLabels: {app: web}}}
---
apiVersion: v1
kind: Service
metadata: {name: gone}
`
	c, err := Compare(stored, rendered, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if c.Objects != 4 || c.Identical != 1 {
		t.Fatalf("objects %d identical %d: %+v", c.Objects, c.Identical, c.Diffs)
	}
	byObj := map[string]Difference{}
	for _, d := range c.Diffs {
		byObj[d.Object] = d
	}
	if d := byObj["Secret shop/web-auth"]; !d.Kept || d.Text != "Secret data differs (data.pw): kept from live, the Application ignores it" {
		t.Errorf("secret %+v", d)
	}
	if d := byObj["apps/Deployment shop/web"]; !d.Immutable || d.Text != "differs at spec.selector.matchLabels.app: an immutable field, the first sync would fail" {
		t.Errorf("deployment %+v", d)
	}
	if d := byObj["Service shop/gone"]; !strings.Contains(d.Text, "only in the release") {
		t.Errorf("service %+v", d)
	}
}

// TestCompareIgnores: the chart and the release are compared by objdiff's
// rules, which the Helm proof did not apply before (it compared every byte
// and spelt paths with a leading dot): a changed apiVersion, status, the
// last-applied and tracking annotations, empty fields and stringData
// spelt as data are no difference; a list of named items is matched by
// name.
func TestCompareIgnores(t *testing.T) {
	stored := `apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: web, annotations: {}}
spec: {maxUnavailable: 1}
status: {currentHealthy: 0}
---
apiVersion: v1
kind: Secret
metadata: {name: web-auth}
stringData: {pw: s3cr3t}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: main, image: "web:1"}, {name: proxy, image: "proxy:1"}]
`
	rendered := `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
  annotations: {argocd.argoproj.io/tracking-id: "web:policy/PodDisruptionBudget:shop/web", kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec: {maxUnavailable: 1, selector: null}
---
apiVersion: v1
kind: Secret
metadata: {name: web-auth}
data: {pw: ` + base64.StdEncoding.EncodeToString([]byte("s3cr3t")) + `}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: proxy, image: "proxy:1"}, {name: main, image: "web:2"}]
`
	c, err := Compare(stored, rendered, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if c.Objects != 3 || c.Identical != 2 || len(c.Diffs) != 1 {
		t.Fatalf("objects %d identical %d: %+v", c.Objects, c.Identical, c.Diffs)
	}
	if d := c.Diffs[0]; d.Object != "apps/Deployment shop/web" || !slices.Equal(d.Fields, []string{"spec.template.spec.containers[name=main].image"}) ||
		d.Text != "differs at spec.template.spec.containers[name=main].image" {
		t.Errorf("deployment %+v", d)
	}
}

// TestFind: adopt.yaml first, then the cached index of a repository in
// Helm's repositories.yaml that has the chart at that version; otherwise
// ErrUnknownSource naming what was looked at.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	cfg, cache := filepath.Join(dir, "repositories.yaml"), filepath.Join(dir, "cache")
	f := repo.NewFile()
	f.Add(&repo.Entry{Name: "other", URL: "https://other.example.invalid"}, &repo.Entry{Name: "stable", URL: "https://charts.example.invalid/stable"})
	if err := f.WriteFile(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	idx := repo.NewIndexFile()
	if err := idx.MustAdd(&chart.Metadata{APIVersion: "v2", Name: "web", Version: "1.2.3"}, "web-1.2.3.tgz", "https://charts.example.invalid/stable", "sha256:0"); err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(cache, helmpath.CacheIndexFile("stable")), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Sources{Configured: map[string]string{"db": "oci://registry.example.invalid/charts"}, RepositoryConfig: cfg, RepositoryCache: cache}
	if got, err := s.Find("db", "9.9.9"); err != nil || got.RepoURL != "oci://registry.example.invalid/charts" || got.From != "adopt.yaml helmRepositories" {
		t.Errorf("configured: %+v %v", got, err)
	}
	if got, err := s.Find("web", "1.2.3"); err != nil || got.RepoURL != "https://charts.example.invalid/stable" || !strings.Contains(got.From, `"stable"`) {
		t.Errorf("helm repo: %+v %v", got, err)
	}
	_, err := s.Find("web", "2.0.0")
	if !errors.Is(err, ErrUnknownSource) || !strings.Contains(err.Error(), "other (no cached index") || !strings.Contains(err.Error(), "stable") {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := (Sources{RepositoryConfig: filepath.Join(dir, "none.yaml")}).Find("web", "1.2.3"); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("no config: %v", err)
	}

	// The same repository with a token in its URL is refused, naming the
	// repository and the file, never the token.
	const token = "repo-token-CANARY-77aa"
	f.Update(&repo.Entry{Name: "stable", URL: "https://bot:" + token + "@charts.example.invalid/stable"})
	if err := f.WriteFile(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Find("web", "1.2.3")
	if !errors.Is(err, ErrCredentialsInURL) || got.RepoURL != "" {
		t.Fatalf("credentials in the URL: %+v %v", got, err)
	}
	for _, want := range []string{`"stable"`, cfg, "https://charts.example.invalid/stable", "credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "bot") {
		t.Errorf("the refusal leaks the credentials: %v", err)
	}

	// A token in the query (issue 36) is refused too.
	f.Update(&repo.Entry{Name: "stable", URL: "https://charts.example.invalid/stable?token=" + token})
	if err := f.WriteFile(cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = s.Find("web", "1.2.3")
	if !errors.Is(err, ErrCredentialsInURL) || got.RepoURL != "" || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "query") {
		t.Errorf("a token in the query: %+v %v", got, err)
	}
}

// TestValuesFile: the release's user-supplied values (as a release record
// holds them: JSON numbers) equal a values file compared as parsed YAML,
// whatever its key order, comments or number spelling; a file with one
// value more or less does not, and empty values match no file.
func TestValuesFile(t *testing.T) {
	files := map[string]string{
		"values.yaml":            "greeting: hello\nreplicas: 1\n",
		"values-production.yaml": "# production\nservice: {port: 8080}\ngreeting: prod\nreplicas: 3\n",
		"values-extra.yaml":      "greeting: prod\nreplicas: 3\nservice: {port: 8080}\nextra: true\n",
		"broken.yaml":            "greeting: [\n",
	}
	read := func(f string) ([]byte, error) {
		s, ok := files[f]
		if !ok {
			return nil, os.ErrNotExist
		}
		return []byte(s), nil
	}
	names := []string{"broken.yaml", "missing.yaml", "values-extra.yaml", "values-production.yaml", "values.yaml"}
	for _, tc := range []struct {
		config map[string]any
		want   string
	}{
		{map[string]any{"greeting": "prod", "replicas": float64(3), "service": map[string]any{"port": float64(8080)}}, "values-production.yaml"},
		{map[string]any{"greeting": "hello", "replicas": 1}, "values.yaml"},
		{map[string]any{"greeting": "prod", "replicas": float64(3)}, ""},
		{nil, ""},
	} {
		if got := ValuesFile(tc.config, names, read); got != tc.want {
			t.Errorf("ValuesFile(%v) = %q, want %q", tc.config, got, tc.want)
		}
	}
}
