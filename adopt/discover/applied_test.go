package discover

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// appliedMeta, appliedConfigMap and appliedSecret are what AppliedBytes
// keeps of a live ConfigMap or Secret, with the API's JSON names and
// omitempty: encoding/json's length of them is what fromConfigMap and
// fromSecret add up.
type appliedMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

type appliedConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   appliedMeta       `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

type appliedSecret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   appliedMeta       `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       corev1.SecretType `json:"type,omitempty"`
}

func appliedOf(m *metav1.ObjectMeta) appliedMeta {
	a := appliedMeta{Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, Labels: m.Labels, Annotations: map[string]string{}}
	for k, v := range m.Annotations {
		if k != budget.LastAppliedKey {
			a.Annotations[k] = v
		}
	}
	return a
}

func jsonLen(t *testing.T, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) + 1
}

// TestAppliedLenIsEncodingJSON checks the AppliedBytes that fromConfigMap
// and fromSecret add up against encoding/json's length of the same kept
// fields, on random objects: empty and set names, labels, annotations
// with and without the last-applied one, data, binary data (nil, empty
// and filled values), string data, types and immutable, with strings
// encoding/json escapes.
func TestAppliedLenIsEncodingJSON(t *testing.T) {
	strs := []string{"", "a", "app.kubernetes.io/name", `q"uote`, `back\slash`, "<html>&", "nl\nx", "\x01", "ü", "\u2028", "\xff"}
	r := rand.New(rand.NewPCG(9, 10))
	str := func() string { return strs[r.IntN(len(strs))] }
	strMap := func() map[string]string {
		if r.IntN(3) == 0 {
			return nil
		}
		m := map[string]string{}
		for range r.IntN(4) {
			m[str()] = str()
		}
		return m
	}
	bytesMap := func() map[string][]byte {
		if r.IntN(3) == 0 {
			return nil
		}
		m := map[string][]byte{}
		for range r.IntN(4) {
			var v []byte
			if r.IntN(4) > 0 {
				v = make([]byte, r.IntN(10))
			}
			m[str()] = v
		}
		return m
	}
	immutable := func() *bool {
		if r.IntN(3) == 0 {
			return nil
		}
		b := r.IntN(2) == 0
		return &b
	}
	for i := range 3000 {
		meta := metav1.ObjectMeta{Name: str(), GenerateName: str(), Namespace: str(), Labels: strMap(), Annotations: strMap()}
		if r.IntN(2) == 0 {
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[budget.LastAppliedKey] = `{"kind":"ConfigMap"}`
		}
		cm := &corev1.ConfigMap{ObjectMeta: meta, Data: strMap(), BinaryData: bytesMap(), Immutable: immutable()}
		want := jsonLen(t, appliedConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: appliedOf(&meta), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable})
		if got := fromConfigMap(Type{Version: "v1", Kind: "ConfigMap"}, cm).AppliedBytes; got != want {
			t.Fatalf("ConfigMap %d %+v: AppliedBytes %d, encoding/json %d", i, cm, got, want)
		}
		s := &corev1.Secret{ObjectMeta: meta, Data: bytesMap(), StringData: strMap(), Type: corev1.SecretType(str()), Immutable: immutable()}
		want = jsonLen(t, appliedSecret{APIVersion: "v1", Kind: "Secret", Metadata: appliedOf(&meta), Data: s.Data, StringData: s.StringData, Type: s.Type, Immutable: s.Immutable})
		if got := fromSecret(Type{Version: "v1", Kind: "Secret"}, s).AppliedBytes; got != want {
			t.Fatalf("Secret %d: AppliedBytes %d, encoding/json %d", i, got, want)
		}
	}
}
