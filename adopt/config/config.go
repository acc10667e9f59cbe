// Package config owns adopt.yaml: the user's overrides for planning —
// exclusions by group/kind/namespace/name glob (like Argo CD's
// resource.exclusions), the Applications' destination, project, repo URL,
// apps directory, naming, the chart repositories of Helm releases and the
// Applications that get no ignoreDifferences. It reads and validates the file; it never
// talks to the cluster or to Git.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// APIVersion and Kind identify adopt.yaml.
const (
	APIVersion = "adopt.dev/v1alpha1"
	Kind       = "AdoptConfig"
)

// DefaultFile is read when --config is not given and the file exists.
const DefaultFile = "adopt.yaml"

// Config is adopt.yaml.
type Config struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Exclusions leave matching objects out of the plan.
	Exclusions []Rule `yaml:"exclusions"`
	// Sources choose where an object defined more than once in Git is
	// synced from, when the plan cannot choose by content.
	Sources []Source `yaml:"sources"`
	// AllowValues let values that look like secrets be exported, after a
	// reviewer has looked: the objects the rule selects, at Paths.
	AllowValues []AllowValue `yaml:"allowValues" json:"allowValues,omitempty"`
	// Destination of every proposed Application.
	Destination Destination `yaml:"destination"`
	// Project of every proposed Application.
	Project string `yaml:"project"`
	// RepoURL is the GitOps repo the Applications point at.
	RepoURL string `yaml:"repoURL"`
	// AppsDir is where the Application manifests go in the repo.
	AppsDir string `yaml:"appsDir"`
	// ExportDir is where objects not found in Git are exported.
	ExportDir string `yaml:"exportDir"`
	// Naming is the Application name template. Placeholders: {namespace},
	// {key} (the group's label value or directory name), {dir}, {env}
	// (the last segment of the source path) and {cluster} (see Cluster).
	Naming string `yaml:"naming"`
	// NameTemplate is Naming as the user set it (nameTemplate, or its
	// older spelling naming): when set, it names every new Application;
	// when not, the plan follows the pattern of the repo's Applications
	// and falls back to Naming's default.
	NameTemplate string `yaml:"nameTemplate"`
	// GroupBy is the default grouping rule (see plan.GroupBy).
	GroupBy string `yaml:"groupBy"`
	// HelmRepositories maps a chart name to the chart repository a Helm
	// release's chart comes from: an http(s) repository URL or an
	// oci://registry/path. It is looked up before the user's Helm
	// repository config (see docs/helm.md).
	HelmRepositories map[string]string `yaml:"helmRepositories"`
	// NoIgnoreDifferences are Application name globs ("*" for all) for
	// which apply writes no ignoreDifferences entries, though plan
	// --preview found fields another writer owns (see docs/apply.md).
	NoIgnoreDifferences []string `yaml:"noIgnoreDifferences"`
	// Secrets chooses how hand-applied Secrets are adopted (see
	// docs/secrets.md).
	Secrets Secrets `yaml:"secrets" json:"secrets,omitempty"`
}

// Secrets chooses the form of each hand-applied Secret.
type Secrets struct {
	// SealedSecretsController is the Sealed Secrets controller's Service,
	// namespace/name. When set, plan looks for the controller there only;
	// when empty, at kubeseal's default (kube-system/sealed-secrets-controller),
	// then at the one Service labelled app.kubernetes.io/name=sealed-secrets.
	SealedSecretsController string `yaml:"sealedSecretsController" json:"sealedSecretsController,omitempty"`
	// Forms force a form for the Secrets of the namespaces they name: the
	// first entry that matches wins. Form is sealed (a SealedSecret, which
	// needs the controller), sops (a SOPS-encrypted manifest, which needs
	// a .sops.yaml rule for its path), eso (an ExternalSecret reading back
	// what finalize pushes to an External Secrets store; Store may name
	// the store) or none (left out and named, as without an operator).
	Forms []SecretForm `yaml:"forms" json:"forms,omitempty"`
}

// The Secret forms adopt.yaml can force.
const (
	SecretFormSealed = "sealed"
	SecretFormESO    = "eso"
	SecretFormNone   = "none"
	SecretFormSops   = "sops"
)

// SecretForm forces Form for the Secrets of Namespaces (globs).
type SecretForm struct {
	Namespaces []string `yaml:"namespaces" json:"namespaces"`
	Form       string   `yaml:"form" json:"form"`
	// Store names the External Secrets store of form eso: "SecretStore
	// <name>" (in the Secret's namespace) or "ClusterSecretStore <name>".
	// Empty: the one store that fits.
	Store string `yaml:"store" json:"store,omitempty"`
}

// SecretForm returns the form adopt.yaml forces for the Secrets of
// namespace and the entry that forces it ("secrets.forms[i]"); "" when no
// entry names the namespace.
func (c *Config) SecretForm(namespace string) (form, entry string) {
	for i, f := range c.Secrets.Forms {
		if matchAny(f.Namespaces, namespace) {
			return f.Form, fmt.Sprintf("secrets.forms[%d]", i)
		}
	}
	return "", ""
}

// SecretStore returns the External Secrets store adopt.yaml names for
// the Secrets of namespace (secrets.forms[i].store of the first entry
// naming it), and that entry; "" when none names one.
func (c *Config) SecretStore(namespace string) (store, entry string) {
	for i, f := range c.Secrets.Forms {
		if matchAny(f.Namespaces, namespace) {
			if f.Store == "" {
				return "", ""
			}
			return f.Store, fmt.Sprintf("secrets.forms[%d].store", i)
		}
	}
	return "", ""
}

// SealedSecretsService splits SealedSecretsController into its namespace
// and name ("", "" when unset).
func (c *Config) SealedSecretsService() (namespace, name string) {
	namespace, name, _ = strings.Cut(c.Secrets.SealedSecretsController, "/")
	return namespace, name
}

// Destination is spec.destination: a server URL or a cluster name.
type Destination struct {
	Server string `yaml:"server"`
	Name   string `yaml:"name"`
}

// Rule excludes objects. Each list holds globs (path.Match syntax); an empty
// list matches everything. The core group is "".
type Rule struct {
	APIGroups  []string `yaml:"apiGroups" json:"apiGroups,omitempty"`
	Kinds      []string `yaml:"kinds" json:"kinds,omitempty"`
	Namespaces []string `yaml:"namespaces" json:"namespaces,omitempty"`
	Names      []string `yaml:"names" json:"names,omitempty"`
}

// Source chooses Path (a file, or a kustomization's directory) for the
// objects the rule selects (every object when it is empty) wherever Path
// is one of the definitions of an object defined more than once in Git.
type Source struct {
	Path string `yaml:"path"`
	Rule `yaml:",inline"`
}

// Source returns the path chosen for the object among paths (its
// definitions: files and kustomization directories) and the entry that
// chose it, as "sources[i]"; "" when no entry does.
func (c *Config) Source(group, kind, namespace, name string, paths []string) (string, string) {
	for i, s := range c.Sources {
		r := s.Rule
		if !(matchAny(r.APIGroups, group) && matchAny(r.Kinds, kind) && matchAny(r.Namespaces, namespace) && matchAny(r.Names, name)) {
			continue
		}
		for _, p := range paths {
			if p == path.Clean(s.Path) {
				return p, fmt.Sprintf("sources[%d]", i)
			}
		}
	}
	return "", ""
}

// AllowValue passes the values at Paths (key paths such as data.DB_URL
// or spec.template.spec.containers[0].env[1].value, where * stands for
// any text and brackets are literal) of the objects the rule selects.
type AllowValue struct {
	Rule  `yaml:",inline"`
	Paths []string `yaml:"paths" json:"paths"`
}

// Allowed returns which allowValues entry passes the value at path p of
// the object, as "allowValues[i]", or "".
func Allowed(entries []AllowValue, group, kind, namespace, name, p string) string {
	for i, a := range entries {
		r := a.Rule
		if matchAny(r.APIGroups, group) && matchAny(r.Kinds, kind) && matchAny(r.Namespaces, namespace) && matchAny(r.Names, name) && slices.ContainsFunc(a.Paths, func(g string) bool { return matchPath(g, p) }) {
			return fmt.Sprintf("allowValues[%d]", i)
		}
	}
	return ""
}

// matchPath matches a key path against g, where * stands for any text.
func matchPath(g, p string) bool {
	parts := strings.Split(g, "*")
	if len(parts) == 1 {
		return g == p
	}
	if !strings.HasPrefix(p, parts[0]) {
		return false
	}
	p = p[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(p, part)
		if i < 0 {
			return false
		}
		p = p[i+len(part):]
	}
	return strings.HasSuffix(p, parts[len(parts)-1])
}

// Default is the configuration when no file is given.
func Default() *Config {
	return &Config{
		APIVersion:  APIVersion,
		Kind:        Kind,
		Destination: Destination{Server: "https://kubernetes.default.svc"},
		Project:     "default",
		AppsDir:     "argocd/apps",
		ExportDir:   "adopted",
		Naming:      "adopt-{namespace}-{key}",
		GroupBy:     "auto",
	}
}

// Load reads path over the defaults. When path is "" it reads DefaultFile
// if present, else returns the defaults.
func Load(p string) (*Config, error) {
	explicit := p != ""
	if !explicit {
		p = DefaultFile
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", p, err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", p, err)
	}
	return c, nil
}

// Parse decodes adopt.yaml over the defaults, rejecting unknown fields.
func Parse(b []byte) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s; see docs/plan.md for the fields", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	c.fillDefaults()
	return c, c.Validate()
}

// fillDefaults sets every field the file left empty.
func (c *Config) fillDefaults() {
	d := Default()
	switch {
	case c.NameTemplate == "":
		c.NameTemplate = c.Naming // the older spelling
	case c.Naming == "":
		c.Naming = c.NameTemplate
	}
	if c.Destination.Server == "" && c.Destination.Name == "" {
		c.Destination = d.Destination
	}
	for _, f := range []struct {
		v   *string
		def string
	}{
		{&c.Project, d.Project}, {&c.AppsDir, d.AppsDir}, {&c.ExportDir, d.ExportDir},
		{&c.Naming, d.Naming}, {&c.GroupBy, d.GroupBy},
	} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate checks the values, one clear sentence per problem.
func (c *Config) Validate() error {
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return fmt.Errorf("apiVersion %q kind %q: want apiVersion %s, kind %s", c.APIVersion, c.Kind, APIVersion, Kind)
	}
	if c.Destination.Server != "" && c.Destination.Name != "" {
		return fmt.Errorf("destination: set server or name, not both")
	}
	if !dns1123.MatchString(c.Project) {
		return fmt.Errorf("project %q is not a valid AppProject name", c.Project)
	}
	if c.NameTemplate != "" && c.NameTemplate != c.Naming {
		return fmt.Errorf("nameTemplate %q and naming %q differ: naming is nameTemplate's older spelling, set one", c.NameTemplate, c.Naming)
	}
	if !strings.Contains(c.Naming, "{") {
		return fmt.Errorf("naming %q has no placeholder: use {namespace}, {key}, {dir}, {env} or {cluster}", c.Naming)
	}
	for _, d := range []struct{ name, v string }{{"appsDir", c.AppsDir}, {"exportDir", c.ExportDir}} {
		if d.v == "" || path.IsAbs(d.v) || strings.HasPrefix(path.Clean(d.v), "..") {
			return fmt.Errorf("%s %q must be a relative path inside the repo", d.name, d.v)
		}
	}
	for i, r := range c.Exclusions {
		for _, globs := range [][]string{r.APIGroups, r.Kinds, r.Namespaces, r.Names} {
			for _, g := range globs {
				if _, err := path.Match(g, ""); err != nil {
					return fmt.Errorf("exclusions[%d]: bad glob %q: %v", i, g, err)
				}
			}
		}
	}
	for i, src := range c.Sources {
		if src.Path == "" || path.IsAbs(src.Path) || strings.HasPrefix(path.Clean(src.Path), "..") {
			return fmt.Errorf("sources[%d]: path %q must be a file or kustomization directory inside the repo, relative to its root", i, src.Path)
		}
		for _, globs := range [][]string{src.APIGroups, src.Kinds, src.Namespaces, src.Names} {
			for _, g := range globs {
				if _, err := path.Match(g, ""); err != nil {
					return fmt.Errorf("sources[%d]: bad glob %q: %v", i, g, err)
				}
			}
		}
	}
	for i, a := range c.AllowValues {
		if len(a.Paths) == 0 {
			return fmt.Errorf("allowValues[%d]: name the paths allowed (paths: [data.KEY]); an entry without paths would allow nothing", i)
		}
		for _, globs := range [][]string{a.APIGroups, a.Kinds, a.Namespaces, a.Names} {
			for _, g := range globs {
				if _, err := path.Match(g, ""); err != nil {
					return fmt.Errorf("allowValues[%d]: bad glob %q: %v", i, g, err)
				}
			}
		}
	}
	for _, g := range c.NoIgnoreDifferences {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("noIgnoreDifferences: bad glob %q: %v", g, err)
		}
	}
	for _, chart := range sortedKeys(c.HelmRepositories) {
		if err := checkRepoURL(c.HelmRepositories[chart]); err != nil {
			return fmt.Errorf("helmRepositories[%s]: %v", chart, err)
		}
		if !chartName.MatchString(chart) {
			return fmt.Errorf("helmRepositories: %q is not a chart name (the chart's name as in helm.sh/chart, without the version)", chart)
		}
	}
	if s := c.Secrets.SealedSecretsController; s != "" {
		ns, name, ok := strings.Cut(s, "/")
		if !ok || !dns1123.MatchString(ns) || !dns1123.MatchString(name) {
			return fmt.Errorf("secrets.sealedSecretsController %q: write the controller's Service as namespace/name (kubeseal's default is kube-system/sealed-secrets-controller)", s)
		}
	}
	for i, f := range c.Secrets.Forms {
		switch f.Form {
		case SecretFormSealed, SecretFormSops, SecretFormESO, SecretFormNone:
		default:
			return fmt.Errorf("secrets.forms[%d]: form %q: use %s, %s, %s or %s", i, f.Form, SecretFormSealed, SecretFormSops, SecretFormESO, SecretFormNone)
		}
		if f.Store != "" {
			kind, name, _ := strings.Cut(f.Store, " ")
			if f.Form != SecretFormESO || (kind != "SecretStore" && kind != "ClusterSecretStore") || !dns1123.MatchString(name) {
				return fmt.Errorf("secrets.forms[%d]: store %q: only form %s names a store, as \"SecretStore <name>\" (in the Secret's namespace) or \"ClusterSecretStore <name>\"", i, f.Store, SecretFormESO)
			}
		}
		if len(f.Namespaces) == 0 {
			return fmt.Errorf("secrets.forms[%d]: name the namespaces it forces (namespaces: [team-a] or [\"*\"])", i)
		}
		for _, g := range f.Namespaces {
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("secrets.forms[%d]: bad glob %q: %v", i, g, err)
			}
		}
	}
	switch c.GroupBy {
	case "auto", "git-dir", "label", "namespace":
	default:
		return fmt.Errorf("groupBy %q: use auto, git-dir, label or namespace", c.GroupBy)
	}
	return nil
}

// Excluded returns which rule excludes the object, as "exclusions[i]", or "".
func (c *Config) Excluded(group, kind, namespace, name string) string {
	for i, r := range c.Exclusions {
		if matchAny(r.APIGroups, group) && matchAny(r.Kinds, kind) && matchAny(r.Namespaces, namespace) && matchAny(r.Names, name) {
			return fmt.Sprintf("exclusions[%d]", i)
		}
	}
	return ""
}

// ExcludesType reports whether a rule excludes every object of a type: its
// groups and kinds match and it does not narrow by namespace or name.
func (c *Config) ExcludesType(group, kind string) string {
	for i, r := range c.Exclusions {
		if len(r.Namespaces) == 0 && len(r.Names) == 0 && matchAny(r.APIGroups, group) && matchAny(r.Kinds, kind) {
			return fmt.Sprintf("exclusions[%d]", i)
		}
	}
	return ""
}

func matchAny(globs []string, v string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, v); ok {
			return true
		}
	}
	return false
}

var chartName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkRepoURL accepts an http(s) URL with a host, or oci://host/path.
func checkRepoURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci":
		return fmt.Errorf("%q: want an http(s):// chart repository URL or oci://registry/path", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials: keep them out of adopt.yaml (Argo CD reads them from its repository Secret)", s)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q has a query or fragment: give the repository's base URL", s)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// NameVars are the values a naming template's placeholders take.
type NameVars struct {
	// Namespace is {namespace}; Key is {key} (dropped when it equals
	// Namespace); Dir is {dir} ("/" becomes "-").
	Namespace, Key, Dir string
	// Env is {env}: the last segment of the Application's source path.
	Env string
	// Cluster is {cluster}: the destination cluster's name (see Cluster).
	Cluster string
}

// InClusterName is the name Argo CD gives its in-cluster destination.
const InClusterName = "in-cluster"

// Cluster is the name of the cluster new Applications go to, for
// {cluster}: destination.name, "in-cluster" for the in-cluster server
// URL, "" for any other server URL (its name is not known here).
func (c *Config) Cluster() string {
	switch {
	case c.Destination.Name != "":
		return c.Destination.Name
	case c.Destination.Server == "https://kubernetes.default.svc":
		return InClusterName
	}
	return ""
}

// AppName renders the naming template into a valid Application name (DNS
// label, at most 63 bytes). An empty result falls back to "adopt-cluster".
// {env} is the last segment of dir ("" without one), {cluster} is
// Cluster().
func (c *Config) AppName(namespace, key, dir string) string {
	env := ""
	if dir != "" {
		env = path.Base(dir)
	}
	return c.Name(NameVars{Namespace: namespace, Key: key, Dir: dir, Env: env})
}

// Name is AppName with every placeholder's value given (Cluster, when
// "", is Cluster()).
func (c *Config) Name(v NameVars) string {
	if v.Cluster == "" {
		v.Cluster = c.Cluster()
	}
	return RenderName(c.Naming, v)
}

// RenderName renders template with v into a valid Application name, as
// AppName does.
func RenderName(template string, v NameVars) string {
	namespace, key, dir := v.Namespace, v.Key, v.Dir
	if key == namespace {
		key = ""
	}
	r := strings.NewReplacer("{namespace}", namespace, "{key}", key, "{dir}", strings.ReplaceAll(dir, "/", "-"),
		"{env}", v.Env, "{cluster}", v.Cluster)
	s := nonName.ReplaceAllString(strings.ToLower(r.Replace(template)), "-")
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	s = undouble(strings.Trim(s, "-"))
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-")
	}
	if s == "" {
		return "adopt-cluster"
	}
	return s
}

// undouble drops a run of name segments (split at "-") that repeats the
// run just before it: adopt-billing-prod-eu-prod-eu is
// adopt-billing-prod-eu, as a namespace that ends with its directory's
// name would otherwise give.
func undouble(name string) string {
	segs := strings.Split(name, "-")
	for changed := true; changed; {
		changed = false
		for l := len(segs) / 2; l >= 1 && !changed; l-- {
			for i := 0; i+2*l <= len(segs); i++ {
				if slices.Equal(segs[i:i+l], segs[i+l:i+2*l]) {
					segs = append(segs[:i+l], segs[i+2*l:]...)
					changed = true
					break
				}
			}
		}
	}
	return strings.Join(segs, "-")
}
