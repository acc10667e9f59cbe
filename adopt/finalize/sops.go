package finalize

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// sopsTarget is the Secret ob, which the plan adopts in the SOPS form:
// Argo CD applies its decrypted manifest (through a plugin) and tracks it
// like any object, so it is finalized like one, after sopsCheck.
func sopsTarget(ob plan.Object, app string) Target {
	return Target{Ref: ob.Ref, App: app, SopsUID: ob.SecretForm.UID}
}

// sopsCheck refuses to finalize a Secret adopted in the SOPS form unless
// it is still the Secret the plan read (its uid) and, after the sync, its
// data equals the copy of the hand-applied data that kubectl's
// last-applied-configuration keeps: the sync changed no value. The two
// are compared in memory; an error names a key, never a value. A Secret
// without that annotation has nothing for finalize to remove.
func sopsCheck(t Target, live *unstructured.Unstructured) error {
	if string(live.GetUID()) != t.SopsUID {
		return fmt.Errorf("%s has uid %s, not %s as plan read it: it was replaced since plan, so the encrypted file in Git may not hold its values; re-run adopt plan and apply", t.Ref.String(), live.GetUID(), t.SopsUID)
	}
	raw, ok := live.GetAnnotations()[budget.LastAppliedKey]
	if !ok {
		return nil
	}
	var applied struct {
		Data       map[string]string `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if err := json.Unmarshal([]byte(raw), &applied); err != nil {
		return fmt.Errorf("%s: its %s is not JSON, so its data cannot be compared with the synced Secret's; nothing was changed", t.Ref.String(), budget.LastAppliedKey)
	}
	want := map[string][]byte{}
	for k, v := range applied.Data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("%s: key %q of its %s is not base64; nothing was changed", t.Ref.String(), k, budget.LastAppliedKey)
		}
		want[k] = b
	}
	for k, v := range applied.StringData {
		want[k] = []byte(v)
	}
	got, _, _ := unstructured.NestedStringMap(live.Object, "data")
	differ := func(what string) error {
		return fmt.Errorf("%s: after the sync, %s than the hand-applied copy in %s: the synced file or a later edit changed its values. Nothing was changed; compare them yourself (adopt never prints them), then remove the annotation by hand or re-run adopt plan and apply", t.Ref.String(), what, budget.LastAppliedKey)
	}
	if len(got) != len(want) {
		return differ(fmt.Sprintf("its data has %d keys, other", len(got)))
	}
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			return differ(fmt.Sprintf("key %q is missing, other", k))
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || !bytes.Equal(b, w) {
			return differ(fmt.Sprintf("key %q holds another value", k))
		}
	}
	return nil
}
