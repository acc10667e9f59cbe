package budget

import "testing"

func TestAppliedConfig(t *testing.T) {
	m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a",
		"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "x", "k": "v"}}, "data": map[string]any{"a": "b"}}
	b, err := AppliedConfig(m, "ns")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"annotations":{"k":"v"},"name":"a","namespace":"ns"}}` + "\n"
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
	if _, ok := m["metadata"].(map[string]any)["namespace"]; ok {
		t.Fatal("AppliedConfig changed the manifest")
	}
}
