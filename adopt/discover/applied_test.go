package discover

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/adopt-dev/adopt/adopt/budget"
)

// keptMeta, appliedConfigMap and appliedSecret are what AppliedBytes
// keeps of a live ConfigMap or Secret, with the API's JSON names and
// omitempty: encoding/json's length of them is what wireObject adds up.
type keptMeta struct {
	Name         string            `json:"name,omitempty"`
	GenerateName string            `json:"generateName,omitempty"`
	Namespace    string            `json:"namespace,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

type appliedConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   keptMeta          `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

type appliedSecret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   keptMeta          `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       corev1.SecretType `json:"type,omitempty"`
}

func appliedOf(m *metav1.ObjectMeta) keptMeta {
	a := keptMeta{Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, Labels: m.Labels, Annotations: map[string]string{}}
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

// wantFacts is what the collector keeps of an object, from its decoded
// metadata: the reference wireObject's reading of the bytes must equal.
func wantFacts(t Type, m *metav1.ObjectMeta, dataBytes int) Object {
	o := Object{
		Type: t, Namespace: m.Namespace, Name: m.Name, ResourceVersion: m.ResourceVersion,
		Budget: budget.MeasureBudget(m.Annotations), DataBytes: dataBytes,
	}
	if len(m.Labels) > 0 {
		o.Labels = m.Labels
	}
	for k, v := range m.Annotations {
		if len(v) > MaxKeptAnnotationValue || k == budget.LastAppliedKey {
			o.Elided = append(o.Elided, k)
			continue
		}
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[k] = v
	}
	sort.Strings(o.Elided)
	for _, r := range m.OwnerReferences {
		o.Owners = append(o.Owners, r.Kind+"/"+r.Name)
	}
	for _, f := range m.ManagedFields {
		o.Managers = append(o.Managers, Manager{Manager: f.Manager, Operation: string(f.Operation), Subresource: f.Subresource})
	}
	return o
}

// randomObjects makes ConfigMaps and Secrets with every field the
// collector reads or skips: empty and set names, labels, annotations with
// and without the last-applied one and above MaxKeptAnnotationValue,
// owners, managers with field sets, server fields, data, binary data,
// string data, types and immutable, with strings encoding/json escapes.
func randomObjects(r *rand.Rand) (*corev1.ConfigMap, *corev1.Secret) {
	strs := []string{"", "a", "app.kubernetes.io/name", `q"uote`, `back\slash`, "<html>&", "nl\nx", "\x01", "ü", "\u2028", "\xff"}
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
	// A value read from the API server is never nil: protobuf has no nil
	// bytes, and JSON's null is stored as empty.
	bytesMap := func() map[string][]byte {
		if r.IntN(3) == 0 {
			return nil
		}
		m := map[string][]byte{}
		for range r.IntN(4) {
			m[str()] = make([]byte, r.IntN(10))
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
	meta := metav1.ObjectMeta{Name: str(), GenerateName: str(), Namespace: str(), Labels: strMap(), Annotations: strMap(),
		UID: "0b1c", ResourceVersion: fmt.Sprint(r.IntN(1000)), Generation: 3, CreationTimestamp: metav1.Unix(1700000000, 0), Finalizers: []string{"x/y"}}
	if r.IntN(2) == 0 {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[budget.LastAppliedKey] = `{"kind":"ConfigMap"}`
	}
	if r.IntN(4) == 0 {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations["big"] = strings.Repeat("<", MaxKeptAnnotationValue+r.IntN(2))
	}
	for range r.IntN(3) {
		meta.OwnerReferences = append(meta.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: str(), Name: str(), UID: "u"})
	}
	for range r.IntN(4) {
		meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: str(), Operation: []metav1.ManagedFieldsOperationType{"Apply", "Update", ""}[r.IntN(3)],
			APIVersion: "v1", Time: &meta.CreationTimestamp, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}, Subresource: str()})
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta, Data: strMap(), BinaryData: bytesMap(), Immutable: immutable()}
	s := &corev1.Secret{ObjectMeta: meta, Data: bytesMap(), StringData: strMap(), Type: corev1.SecretType(str()), Immutable: immutable()}
	return cm, s
}

var (
	configMaps = Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	secrets    = Type{Version: "v1", Kind: "Secret", Resource: "secrets", Namespaced: true}
)

// TestWireIsDecoded reads random objects marshalled by k8s.io/api: the
// facts wireObject reads from the bytes are those of the decoded object,
// and AppliedBytes is encoding/json's length of what last-applied keeps.
func TestWireIsDecoded(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var sets labelSets // as a worker reads them: labels shared
	for i := range 3000 {
		cm, s := randomObjects(r)
		b, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := wireObject(configMaps, b, configMapBody, &sets)
		if err != nil {
			t.Fatal(err)
		}
		want := wantFacts(configMaps, &cm.ObjectMeta, configMapData(cm))
		want.AppliedBytes = jsonLen(t, appliedConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: appliedOf(&cm.ObjectMeta), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ConfigMap %d:\nread    %+v\ndecoded %+v", i, got, want)
		}
		if b, err = s.Marshal(); err != nil {
			t.Fatal(err)
		}
		if got, err = wireObject(secrets, b, secretBody, &sets); err != nil {
			t.Fatal(err)
		}
		want = wantFacts(secrets, &s.ObjectMeta, secretData(s))
		want.AppliedBytes = jsonLen(t, appliedSecret{APIVersion: "v1", Kind: "Secret", Metadata: appliedOf(&s.ObjectMeta), Data: s.Data, StringData: s.StringData, Type: s.Type, Immutable: s.Immutable})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Secret %d:\nread    %+v\ndecoded %+v", i, got, want)
		}
		pm := &metav1.PartialObjectMetadata{ObjectMeta: cm.ObjectMeta}
		if b, err = pm.Marshal(); err != nil {
			t.Fatal(err)
		}
		deploys := Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespaced: true}
		if got, err = wireObject(deploys, b, nil, nil); err != nil {
			t.Fatal(err)
		}
		if want = wantFacts(deploys, &cm.ObjectMeta, 0); !reflect.DeepEqual(got, want) {
			t.Fatalf("metadata %d:\nread    %+v\ndecoded %+v", i, got, want)
		}
	}
}

// TestLabelSetsShared reads objects with the same labels into one map and
// objects with other labels into maps of their own.
func TestLabelSetsShared(t *testing.T) {
	var sets labelSets
	read := func(name string, labels map[string]string) map[string]string {
		pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels}}
		b, err := pm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		o, err := wireObject(configMaps, b, nil, &sets)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.Labels, labels) {
			t.Fatalf("%s: labels %v, want %v", name, o.Labels, labels)
		}
		return o.Labels
	}
	a := read("a", map[string]string{"app": "web", "tier": "front"})
	b := read("b", map[string]string{"tier": "front", "app": "web"})
	c := read("c", map[string]string{"app": "web", "tier": "back"})
	d := read("d", map[string]string{"app": "webtier", "": "front"})
	if read("e", nil) != nil {
		t.Fatal("an object with no labels got a map")
	}
	same := func(x, y map[string]string) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	if !same(a, b) {
		t.Fatal("two objects with the same labels got two maps")
	}
	if same(a, c) || same(a, d) {
		t.Fatal("objects with other labels share a map")
	}
}

// TestPagesAsProtobufAndJSON reads one page both ways: as the API server's
// protobuf (the envelope, the list's continue token and remaining count)
// and as JSON, from a server that cannot send protobuf; and refuses a
// page that is neither, or whose bytes are cut short.
func TestPagesAsProtobufAndJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	remaining := int64(7)
	list := corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next-token", RemainingItemCount: &remaining}}
	var want []Object
	for range 20 {
		cm, _ := randomObjects(r)
		list.Items = append(list.Items, *cm)
	}
	// Through JSON first, so both pages hold what JSON can: it replaces
	// invalid UTF-8.
	asJSON, err := json.Marshal(&list)
	if err != nil {
		t.Fatal(err)
	}
	list = corev1.ConfigMapList{}
	if err := json.Unmarshal(asJSON, &list); err != nil {
		t.Fatal(err)
	}
	raw, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		b, _ := list.Items[i].Marshal()
		o, err := wireObject(configMaps, b, configMapBody, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, o)
	}
	for name, body := range map[string][]byte{"protobuf": append([]byte("k8s\x00"), envelope...), "JSON": asJSON} {
		var got []Object
		page, err := eachItem(configMaps, body, func(b []byte) error {
			o, err := wireObject(configMaps, b, configMapBody, nil)
			got = append(got, o)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if page.next != "next-token" || page.remaining != 7 {
			t.Errorf("%s: page %+v, want continue next-token and 7 remaining", name, page)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the items read differ from the items marshalled", name)
		}
	}
	// Metadata lists: a JSON page of whole objects is read for their metadata.
	deploys := Type{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespaced: true}
	var metaWant []Object
	for i := range list.Items {
		metaWant = append(metaWant, wantFacts(deploys, &list.Items[i].ObjectMeta, 0))
	}
	var metaGot []Object
	if _, err := eachItem(deploys, asJSON, func(b []byte) error {
		o, err := wireObject(deploys, b, nil, nil)
		metaGot = append(metaGot, o)
		return err
	}); err != nil || !reflect.DeepEqual(metaGot, metaWant) {
		t.Errorf("metadata from a JSON page: %v; read %+v, want %+v", err, metaGot, metaWant)
	}
	for name, body := range map[string][]byte{"not a list": []byte("<html>"), "cut short": append([]byte("k8s\x00"), envelope[:len(envelope)/2]...)} {
		if _, err := eachItem(configMaps, body, func([]byte) error { return nil }); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}
