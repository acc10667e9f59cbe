// Package sealed owns the Sealed Secrets form of a Secret: the
// controller's certificate, fetched from the controller through the API
// server's service proxy as kubeseal fetches it (Cert); a live Secret
// sealed with strict scope into a SealedSecret manifest whose template
// keeps the Secret's type, labels and annotations (Seal); the controller's
// word that it decrypts (Verify); and the takeover of the live Secret in
// place: the managed annotation first (MarkManaged), then, once the
// SealedSecret is applied, the proof that the controller owns the same
// Secret (WaitTakeover), or why it refused.
//
// It must not print, log or keep a Secret's value, nor a digest of one,
// and no error it returns carries one. It writes to the cluster only in
// MarkManaged, guarded by the Secret's uid and resourceVersion.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// The SealedSecret resource (bitnami.com/v1alpha1) and the annotations of
// Sealed Secrets that adopt reads or writes.
const (
	Group      = "bitnami.com"
	Version    = "v1alpha1"
	Kind       = "SealedSecret"
	Resource   = "sealedsecrets"
	APIVersion = Group + "/" + Version

	// ManagedAnnotation, "true" on an existing Secret, lets the controller
	// take it over in place. Without it the controller refuses to touch a
	// Secret it did not create.
	ManagedAnnotation = "sealedsecrets.bitnami.com/managed"
	// The scope annotations: on a template they widen the scope the
	// controller decrypts with. adopt always seals with strict scope.
	namespaceWideAnnotation = "sealedsecrets.bitnami.com/namespace-wide"
	clusterWideAnnotation   = "sealedsecrets.bitnami.com/cluster-wide"
)

// GVR is the SealedSecret resource.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// SealedSecret is the manifest Seal writes: only the fields the
// controller reads.
type SealedSecret struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   Meta   `json:"metadata"`
	Spec       Spec   `json:"spec"`
}

// Meta is the metadata of a SealedSecret and of its template.
type Meta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Spec holds the sealed values and the Secret's template.
type Spec struct {
	Template Template `json:"template"`
	// EncryptedData maps each key to its sealed value, base64.
	EncryptedData map[string]string `json:"encryptedData"`
}

// Template is what the controller makes of the Secret besides its data:
// it replaces the live Secret's type, labels and annotations with these.
type Template struct {
	Metadata  Meta              `json:"metadata"`
	Type      corev1.SecretType `json:"type,omitempty"`
	Immutable *bool             `json:"immutable,omitempty"`
}

// Ref is the SealedSecret's identity.
func (s *SealedSecret) Ref() objref.Ref {
	return objref.Ref{Group: Group, Version: Version, Kind: Kind, Resource: Resource, Namespace: s.Metadata.Namespace, Name: s.Metadata.Name}
}

// SecretRef is the identity of the Secret it unseals into.
func (s *SealedSecret) SecretRef() objref.Ref {
	return objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: s.Metadata.Namespace, Name: s.Metadata.Name}
}

// YAML is the manifest, keys sorted.
func (s *SealedSecret) YAML() ([]byte, error) { return yaml.Marshal(s) }

// dropped reports the annotations a template must not carry:
//   - the last-applied copies kubectl and kubecfg keep, which hold the
//     Secret's data in plaintext;
//   - the managed mark, which only opens the takeover (the controller's
//     ownerReference replaces it);
//   - the scope annotations, which would make the controller decrypt with
//     another label than the strict one adopt seals with;
//   - Argo CD's tracking id, which would name the unsealed Secret as an
//     object of the Application itself, to be pruned as absent from Git.
func dropped(key string) bool {
	switch key {
	case ManagedAnnotation, namespaceWideAnnotation, clusterWideAnnotation, argoapp.AnnotationTrackingID:
		return true
	}
	return redact.CopiesData(key)
}

// TemplateMeta is the template's metadata for Secret s: its name,
// namespace and labels, and its annotations but those in dropped.
func TemplateMeta(s *corev1.Secret) Meta {
	m := Meta{Name: s.Name, Namespace: s.Namespace, Labels: maps.Clone(s.Labels)}
	for k, v := range s.Annotations {
		if dropped(k) {
			continue
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
	return m
}

// Seal seals every value of Secret s (data, and stringData over it as the
// API server merges them) with the controller's public key pub, in strict
// scope: the controller decrypts it only as Secret namespace/name.
func Seal(pub *rsa.PublicKey, s *corev1.Secret) (*SealedSecret, error) {
	return seal(rand.Reader, pub, s)
}

func seal(rnd io.Reader, pub *rsa.PublicKey, s *corev1.Secret) (*SealedSecret, error) {
	ref := objref.Ref{Kind: "Secret", Namespace: s.Namespace, Name: s.Name}
	if s.Namespace == "" || s.Name == "" {
		return nil, fmt.Errorf("seal %s: a strict-scope seal needs the Secret's namespace and name", ref)
	}
	if pub == nil {
		return nil, fmt.Errorf("seal %s: no public key; fetch the controller's certificate first (Cert)", ref)
	}
	label := []byte(s.Namespace + "/" + s.Name)
	enc := make(map[string]string, len(s.Data)+len(s.StringData))
	put := func(key string, value []byte) error {
		b, err := hybridEncrypt(rnd, pub, value, label)
		if err != nil {
			return fmt.Errorf("seal %s key %s: %w", ref, key, err)
		}
		enc[key] = base64.StdEncoding.EncodeToString(b)
		return nil
	}
	for k, v := range s.Data {
		if _, over := s.StringData[k]; over {
			continue
		}
		if err := put(k, v); err != nil {
			return nil, err
		}
	}
	for k, v := range s.StringData {
		if err := put(k, []byte(v)); err != nil {
			return nil, err
		}
	}
	typ := s.Type
	if typ == "" {
		typ = corev1.SecretTypeOpaque
	}
	meta := TemplateMeta(s)
	if where, key, fix := holdsValue(meta, s); where != "" {
		return nil, fmt.Errorf("seal %s: its %s holds the value of key %s (raw, escaped or base64), and a SealedSecret's template is plaintext in Git; remove it from the Secret (kubectl %s), then re-run adopt plan and apply",
			ref, where, key, fix)
	}
	return &SealedSecret{
		APIVersion: APIVersion, Kind: Kind,
		Metadata: Meta{Name: s.Name, Namespace: s.Namespace},
		Spec: Spec{
			Template:      Template{Metadata: meta, Type: typ, Immutable: s.Immutable},
			EncryptedData: enc,
		},
	}, nil
}

// minValueBytes is the shortest value holdsValue looks for: a shorter one
// ("true", a port) is found by chance in ordinary metadata.
const minValueBytes = 8

// holdsValue reports the first label or annotation of the template m
// (keys in order) whose value holds a value of Secret s of minValueBytes
// or more, raw, JSON-escaped or base64 (another tool's copy of the object, as kapp's
// original-configuration annotation is), with that value's key and the
// kubectl command that removes it. The template goes to Git unencrypted.
func holdsValue(m Meta, s *corev1.Secret) (where, key, fix string) {
	values := map[string][]byte{}
	for k, v := range s.Data {
		values[k] = v
	}
	for k, v := range s.StringData {
		values[k] = []byte(v)
	}
	dataKeys := slices.Sorted(maps.Keys(values))
	for _, md := range []struct {
		what, verb string
		m          map[string]string
	}{{"label", "label", m.Labels}, {"annotation", "annotate", m.Annotations}} {
		for _, name := range slices.Sorted(maps.Keys(md.m)) {
			text := md.m[name]
			for _, k := range dataKeys {
				v := values[k]
				if len(v) < minValueBytes {
					continue
				}
				quoted, _ := json.Marshal(string(v))
				if strings.Contains(text, string(v)) || strings.Contains(text, base64.StdEncoding.EncodeToString(v)) || strings.Contains(text, strings.Trim(string(quoted), `"`)) {
					return fmt.Sprintf("%s %s", md.what, name), k, fmt.Sprintf("%s secret -n %s %s %s-", md.verb, s.Namespace, s.Name, name)
				}
			}
		}
	}
	return "", "", ""
}

// sessionKeyBytes is the size of each value's AES-256 key.
const sessionKeyBytes = 32

// hybridEncrypt is Sealed Secrets' sealed value: a fresh AES-256 key
// encrypted with RSA-OAEP (SHA-256, label namespace/name), its length as
// two big-endian bytes before it, then the value encrypted with AES-GCM
// under that key. The key is used once, so the nonce is all zeros, as the
// controller expects.
func hybridEncrypt(rnd io.Reader, pub *rsa.PublicKey, plaintext, label []byte) ([]byte, error) {
	key := make([]byte, sessionKeyBytes)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return nil, fmt.Errorf("read a session key: %w", err)
	}
	wrapped, err := rsa.EncryptOAEP(sha256.New(), rnd, pub, key, label)
	if err != nil {
		return nil, fmt.Errorf("RSA-OAEP with the controller's key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 2, 2+len(wrapped)+len(plaintext)+gcm.Overhead())
	binary.BigEndian.PutUint16(out, uint16(len(wrapped)))
	out = append(out, wrapped...)
	return gcm.Seal(out, make([]byte, gcm.NonceSize()), plaintext, nil), nil
}
