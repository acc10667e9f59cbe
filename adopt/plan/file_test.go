package plan

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/argoapp"
)

// samplePlan builds a plan from collected objects without a cluster.
func samplePlan() *Plan {
	cm := discover.Type{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true}
	ann := map[string]string{budget.LastAppliedKey: strings.Repeat("x", 240000)}
	res := &discover.Result{Objects: []discover.Object{
		{Type: cm, Namespace: "litellm-test", Name: "hook", Budget: budget.MeasureBudget(ann), Managers: []discover.Manager{{Manager: "kubectl-client-side-apply", Operation: "Update"}}, AppliedBytes: 263000},
		{Type: cm, Namespace: "litellm-test", Name: "small", Labels: map[string]string{"app.kubernetes.io/part-of": "litellm"}},
	}}
	tr := argoapp.TrackingFromConfig(nil, "argocd", "")
	p := Build(Inputs{Result: res, Tracking: tr, Cluster: Cluster{Server: "https://127.0.0.1:6443", Context: "kind"}})
	if err := p.Seal(); err != nil {
		panic(err)
	}
	return p
}

// TestWriteFileSeals: the file WriteFile writes in one pass carries the id
// Seal gives the same plan, and the plan read back from it; a change of
// any field gives another id.
func TestWriteFileSeals(t *testing.T) {
	p := samplePlan()
	sealed := p.ID
	path := filepath.Join(t.TempDir(), "plan.yaml")
	p.ID = "plan-stale"
	if err := WriteFile(path, p); err != nil {
		t.Fatal(err)
	}
	if p.ID != sealed || !strings.HasPrefix(sealed, "plan-") || len(sealed) != len(placeholderID) {
		t.Fatalf("WriteFile sealed %q, Seal %q", p.ID, sealed)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Marshal(p)
	if !bytes.Equal(b, want) {
		t.Fatalf("the file is not the plan with its id:\n%s\n---\n%s", b, want)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Seal(); err != nil || back.ID != sealed {
		t.Fatalf("the file read back seals as %q (%v), written as %q", back.ID, err, sealed)
	}
	back.Objects[1].Name = "smal1"
	if back.Seal(); back.ID == sealed {
		t.Fatal("a changed object name gives the same id")
	}
	back.ID = sealed
	if ok, err := back.Sealed(); ok || err != nil {
		t.Fatalf("an edited plan is taken as sealed (%v)", err)
	}
	// A plan sealed as before 503eb11 (the digest of its compact JSON).
	legacy := samplePlan()
	legacy.ID = ""
	h := sha256.New()
	if err := legacy.WriteJSON(h, false); err != nil {
		t.Fatal(err)
	}
	legacy.ID = sealedID(h)
	if ok, err := legacy.Sealed(); !ok || err != nil || legacy.ID != sealedID(h) {
		t.Fatalf("a plan sealed by the JSON digest is not taken as sealed (%v), or its id changed", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".*")); len(left) != 0 {
		t.Fatalf("the temporary file is left: %v", left)
	}
}

func TestRoundTripAndDeterminism(t *testing.T) {
	a, err := Marshal(samplePlan())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Marshal(samplePlan())
	if !bytes.Equal(a, b) {
		t.Fatal("same input, different bytes")
	}
	p, err := Unmarshal(a)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Marshal(p)
	if !bytes.Equal(a, again) {
		t.Fatalf("round trip changed the plan:\n%s\n---\n%s", a, again)
	}
	hook := p.Object("ConfigMap litellm-test/hook")
	if hook == nil || !hook.NextApply.Fails || hook.Risk != Critical {
		t.Fatalf("hook: %+v", hook)
	}
	if len(p.Applications) != 2 || p.Summary.Objects != 2 || p.Summary.Critical != 1 {
		t.Fatalf("apps %+v summary %+v", p.Applications, p.Summary)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good, _ := Marshal(samplePlan())
	s := string(good)
	cases := map[string]struct{ in, want string }{
		"newer":        {strings.Replace(s, "adopt.dev/v1alpha1", "adopt.dev/v2", 1), "this adopt reads adopt.dev/v1alpha1"},
		"other kind":   {"apiVersion: v1\nkind: ConfigMap\n", "not an AdoptionPlan"},
		"truncated":    {s[:len(s)/3] + "\n  - {", "truncated"},
		"app lost obj": {strings.Replace(s, "- ConfigMap litellm-test/hook", "- ConfigMap litellm-test/gone", 1), "not among the plan's objects"},
		"object moved": {strings.Replace(s, "app: adopt-litellm-test-litellm", "app: nowhere", 1), "nowhere"},
	}
	for name, c := range cases {
		_, err := Unmarshal([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", name, err, c.want)
		}
	}
}

func TestCheckCluster(t *testing.T) {
	p := samplePlan()
	if err := CheckCluster(p, "https://127.0.0.1:6443/", "other-name"); err != nil {
		t.Fatal(err)
	}
	if err := CheckCluster(p, "https://prod.example.invalid", "prod"); err == nil || !strings.Contains(err.Error(), p.ID) {
		t.Fatalf("another cluster: %v", err)
	}
}

// TestCheckHub: a plan made with Argo CD on a management cluster takes
// that cluster (however its URL is spelled) and no other; a plan made
// with Argo CD in the cluster itself takes none.
func TestCheckHub(t *testing.T) {
	p := samplePlan()
	if err := CheckHub(p, "https://mgmt.example.invalid", "mgmt"); err == nil || !strings.Contains(err.Error(), "in the cluster itself") {
		t.Errorf("a hub for a plan without one: %v", err)
	}
	p.ArgoCD.Management = &Management{Server: "https://mgmt.example.invalid/", Context: "mgmt"}
	if err := CheckHub(p, "HTTPS://mgmt.example.invalid", "renamed"); err != nil {
		t.Errorf("the plan's hub: %v", err)
	}
	if err := CheckHub(p, "https://other.example.invalid", "other"); err == nil || !strings.Contains(err.Error(), "pick the plan's management cluster") {
		t.Errorf("another hub: %v", err)
	}
}

// FuzzUnmarshal: the plan-file parser never panics, and what it accepts is
// consistent and encodes again.
func FuzzUnmarshal(f *testing.F) {
	good, _ := Marshal(samplePlan())
	f.Add(good)
	f.Add([]byte(`{"apiVersion":"adopt.dev/v1alpha1","kind":"AdoptionPlan","applications":[{"name":"a","objects":["x"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Unmarshal(data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an inconsistent plan: %v", err)
		}
		if _, err := Marshal(p); err != nil {
			t.Fatalf("accepted plan does not encode: %v", err)
		}
	})
}
