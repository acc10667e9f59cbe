// Package esoform owns the External Secrets Operator form of a
// hand-applied Secret (docs/secrets.md): the stores that can take it
// (FindStores: a SecretStore of the Secret's namespace or a
// ClusterSecretStore that admits it, Ready and able to write and read
// back, as its controller reports); the ExternalSecret that goes to Git
// (Manifest: creationPolicy Owner, deletionPolicy Retain, a template that
// keeps the Secret's type, labels and annotations but the last-applied
// copies and Argo CD's tracking); the one push of the value into the
// store (Push: from a label- and annotation-free copy, so the plaintext
// last-applied-configuration never travels, then read back through the
// store by a probe ExternalSecret and compared with the live Secret in
// memory); and the proof after the first sync that the ExternalSecret
// took the same Secret over with the same data (WaitTakeover).
//
// It must not print, log or keep a Secret's value, nor a digest of one,
// and no error it returns carries one: comparisons name keys only. Its
// cluster writes are Push's, each guarded and safe to re-run: the copy,
// the PushSecret and the probe, all named from the Secret and removed
// once the proof is made; the store keeps the value (deletionPolicy
// None). It never writes the live Secret.
package esoform

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// The External Secrets resources adopt reads and writes.
const (
	Group                  = "external-secrets.io"
	KindExternalSecret     = "ExternalSecret"
	KindSecretStore        = "SecretStore"
	KindClusterSecretStore = "ClusterSecretStore"
	KindPushSecret         = "PushSecret"
	// APIVersion is the ExternalSecret's and the stores' (v0.16 serves
	// v1 and v1beta1); PushSecrets are v1alpha1 only.
	APIVersion     = Group + "/v1"
	PushAPIVersion = Group + "/v1alpha1"
)

// The resources.
var (
	SecretStoreGVR        = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "secretstores"}
	ClusterSecretStoreGVR = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "clustersecretstores"}
	ExternalSecretGVR     = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "externalsecrets"}
	PushSecretGVR         = schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "pushsecrets"}
)

// Store names a store: a SecretStore (in Namespace) or a
// ClusterSecretStore.
type Store struct {
	Kind, Namespace, Name string
}

// String is "SecretStore ns/name" or "ClusterSecretStore name".
func (s Store) String() string {
	if s.Kind == KindClusterSecretStore {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}

// ParseStore reads String's form back.
func ParseStore(v string) (Store, error) {
	var kind, rest string
	if _, err := fmt.Sscanf(v, "%s %s", &kind, &rest); err != nil {
		return Store{}, fmt.Errorf("store %q: write it as \"SecretStore namespace/name\" or \"ClusterSecretStore name\"", v)
	}
	switch kind {
	case KindClusterSecretStore:
		return Store{Kind: kind, Name: rest}, nil
	case KindSecretStore:
		for i := range len(rest) {
			if rest[i] == '/' && i > 0 && i < len(rest)-1 {
				return Store{Kind: kind, Namespace: rest[:i], Name: rest[i+1:]}, nil
			}
		}
	}
	return Store{}, fmt.Errorf("store %q: write it as \"SecretStore namespace/name\" or \"ClusterSecretStore name\"", v)
}

// RemoteKey is where the store keeps Secret namespace/name: one key per
// Secret, named from both, valid as a Kubernetes name (the kubernetes
// provider stores it as a Secret of that name) and as a path elsewhere.
func RemoteKey(namespace, name string) string { return "adopt-" + namespace + "-" + name }

// Names of the objects Push creates for Secret name, each in the
// Secret's namespace; all are removed once the push is proven.
func copyName(name string) string  { return name + ".adopt-push" }
func pushName(name string) string  { return name + ".adopt-push" }
func probeName(name string) string { return name + ".adopt-probe" }

// dropped reports the annotations the ExternalSecret's template must not
// carry: the last-applied copies kubectl and kubecfg keep (the Secret's
// data in plaintext), Argo CD's tracking id (it would make the Secret an
// object of the Application itself, pruned as absent from Git), and the
// annotations the operator writes itself.
func dropped(key string) bool {
	switch key {
	case argoapp.AnnotationTrackingID, "reconcile.external-secrets.io/data-hash":
		return true
	}
	return redact.CopiesData(key)
}

// droppedLabel reports the labels the template must not carry: Argo CD's
// label tracking, and the operator's own.
func droppedLabel(key string) bool {
	switch key {
	case "app.kubernetes.io/instance", "reconcile.external-secrets.io/managed",
		"reconcile.external-secrets.io/created-by":
		return true
	}
	return false
}

// ExternalSecret is the manifest Manifest writes: only what the
// operator reads. It names the store and the remote key, never a value.
type ExternalSecret struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   Meta               `json:"metadata"`
	Spec       ExternalSecretSpec `json:"spec"`
}

// Meta is a manifest's metadata.
type Meta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExternalSecretSpec is the part of an ExternalSecret's spec adopt writes.
type ExternalSecretSpec struct {
	RefreshInterval string         `json:"refreshInterval"`
	SecretStoreRef  StoreRef       `json:"secretStoreRef"`
	Target          Target         `json:"target"`
	DataFrom        []DataFromItem `json:"dataFrom"`
}

// StoreRef names the store.
type StoreRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Target is the Secret the operator writes.
type Target struct {
	Name           string   `json:"name"`
	CreationPolicy string   `json:"creationPolicy"`
	DeletionPolicy string   `json:"deletionPolicy"`
	Immutable      bool     `json:"immutable,omitempty"`
	Template       Template `json:"template"`
}

// Template keeps the Secret's type and metadata; with no data template
// the operator writes the store's keys as they are.
type Template struct {
	Type          string `json:"type"`
	EngineVersion string `json:"engineVersion"`
	Metadata      struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
}

// DataFromItem extracts every key of the remote key.
type DataFromItem struct {
	Extract Extract `json:"extract"`
}

// Extract reads a remote key whole, keys and bytes as stored.
type Extract struct {
	Key                string `json:"key"`
	ConversionStrategy string `json:"conversionStrategy"`
	DecodingStrategy   string `json:"decodingStrategy"`
}

// Manifest is the ExternalSecret that reads Secret s back from store at
// remoteKey, into a Secret of the same name: creationPolicy Owner (the
// operator takes the existing Secret over in place), deletionPolicy
// Retain (a key missing from the store leaves the Secret as it is). It
// reads only s's name, namespace, type, immutability, labels and
// annotations: never its data. The operator runs the template's label
// and annotation values as templates, so a value holding "{{" is refused
// (it would not be written as it is).
func Manifest(store Store, remoteKey string, s *corev1.Secret) (*ExternalSecret, error) {
	for k, v := range s.Labels {
		if !droppedLabel(k) && strings.Contains(v, "{{") {
			return nil, fmt.Errorf("Secret %s/%s: label %s holds \"{{\", which the ExternalSecret's template would run as a template; remove it from the Secret or adopt it another way", s.Namespace, s.Name, k)
		}
	}
	for k, v := range s.Annotations {
		if !dropped(k) && strings.Contains(v, "{{") {
			return nil, fmt.Errorf("Secret %s/%s: annotation %s holds \"{{\", which the ExternalSecret's template would run as a template; remove it from the Secret or adopt it another way", s.Namespace, s.Name, k)
		}
	}
	return manifest(store, remoteKey, s.Name, s, "Retain", "1h"), nil
}

func manifest(store Store, remoteKey, name string, s *corev1.Secret, deletion, refresh string) *ExternalSecret {
	typ := s.Type
	if typ == "" {
		typ = corev1.SecretTypeOpaque
	}
	es := &ExternalSecret{APIVersion: APIVersion, Kind: KindExternalSecret,
		Metadata: Meta{Name: name, Namespace: s.Namespace},
		Spec: ExternalSecretSpec{
			RefreshInterval: refresh,
			SecretStoreRef:  StoreRef{Kind: store.Kind, Name: store.Name},
			Target: Target{Name: name, CreationPolicy: "Owner", DeletionPolicy: deletion,
				Immutable: s.Immutable != nil && *s.Immutable,
				Template:  Template{Type: string(typ), EngineVersion: "v2"}},
			DataFrom: []DataFromItem{{Extract: Extract{Key: remoteKey, ConversionStrategy: "Default", DecodingStrategy: "None"}}},
		}}
	for k, v := range s.Labels {
		if !droppedLabel(k) {
			if es.Spec.Target.Template.Metadata.Labels == nil {
				es.Spec.Target.Template.Metadata.Labels = map[string]string{}
			}
			es.Spec.Target.Template.Metadata.Labels[k] = v
		}
	}
	for k, v := range s.Annotations {
		if !dropped(k) {
			if es.Spec.Target.Template.Metadata.Annotations == nil {
				es.Spec.Target.Template.Metadata.Annotations = map[string]string{}
			}
			es.Spec.Target.Template.Metadata.Annotations[k] = v
		}
	}
	return es
}

// YAML is the manifest, keys sorted.
func (e *ExternalSecret) YAML() ([]byte, error) { return yaml.Marshal(e) }

// object is the manifest as the dynamic client takes it.
func (e *ExternalSecret) object() (map[string]any, error) {
	b, err := yaml.Marshal(e)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, yaml.Unmarshal(b, &m)
}

// Diff compares two Secrets' data and names, never shows, the keys that
// differ: missing from got, extra in got, or with other bytes. Empty
// means byte-identical.
func Diff(want, got map[string][]byte) string {
	var missing, extra, other []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !bytes.Equal(g, want[k]):
			other = append(other, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	var out string
	add := func(what string, keys []string) {
		if len(keys) == 0 {
			return
		}
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("%s %v", what, keys)
	}
	add("keys missing", missing)
	add("keys extra", extra)
	add("keys with other bytes", other)
	return out
}

// liveData is what the API server holds for s: data, with stringData
// over it as the API server merges them (a Secret read back has none).
func liveData(s *corev1.Secret) map[string][]byte {
	out := maps.Clone(s.Data)
	if out == nil {
		out = map[string][]byte{}
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
