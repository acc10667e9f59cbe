package reconcile

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestStoreRecord: a group's record is written with its plan, read back
// from the ConfigMap's metadata alone, and a new Save clears what it does
// not say (a finalized mark, a re-proposal, a close as obsolete).
func TestStoreRecord(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewSimpleClientset()
	s := Store{Kube: kube, Namespace: "adopt"}
	p := testPlan(t, "a")
	p.Objects[0].Findings = []plan.Finding{{Code: plan.CodeNotInGit, Severity: plan.Info, Message: "no manifest in the GitOps repo"}}
	p.Objects[0].Git = &plan.GitMatch{Path: "cm.yaml", Line: 1}
	d := "sha256:" + strings.Repeat("d", 64)
	first := Record{Mark: Mark{Digest: d, Head: strings.Repeat("1", 40), Plan: d, Seen: d}, Reproposes: 3, Autoclosed: 5}
	if err := s.Save(ctx, branch, p, first); err != nil {
		t.Fatal(err)
	}
	read := func() Record {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps("adopt").Get(ctx, storeName(branch), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored(cm.ObjectMeta) != branch || cm.Data[planKey] == "" {
			t.Fatalf("ConfigMap %s does not hold the plan of %s", cm.Name, branch)
		}
		return recordOf(cm.ObjectMeta)
	}
	if got := read(); got != first {
		t.Fatalf("record %+v, want %+v", got, first)
	}
	if err := s.MarkFinalized(ctx, branch, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !read().Finalized {
		t.Fatal("MarkFinalized is not in the record")
	}
	// The done group's plan is pruned to what status follows, under its id.
	st, err := s.Load(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	if st.Plan.ID != p.ID || len(st.Plan.Objects) != 1 || st.Plan.Objects[0].Ref != p.Objects[0].Ref || st.Plan.Objects[0].App != "adopt-shop" ||
		len(st.Plan.Applications) != 1 || st.Plan.Objects[0].Findings != nil || st.Plan.Objects[0].Git != nil {
		t.Errorf("the pruned plan: %+v", st.Plan)
	}
	second := Record{Mark: Mark{Digest: d, Head: strings.Repeat("2", 40)}}
	if err := s.Save(ctx, branch, p, second); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != second {
		t.Fatalf("record %+v after a second Save, want %+v", got, second)
	}
}

// TestStoreRecordsOneList: Records reads every group's record with one
// request for the ConfigMaps' metadata only, skipping a ConfigMap that is
// no group's.
func TestStoreRecordsOneList(t *testing.T) {
	d := "sha256:" + strings.Repeat("d", 64)
	other := "adopt/c/other"
	item := func(name, b string, ann map[string]string) metav1.PartialObjectMetadata {
		a := map[string]string{branchAnnotation: b}
		for k, v := range ann {
			a[k] = v
		}
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "adopt", Annotations: a}}
	}
	list := metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		Items: []metav1.PartialObjectMetadata{
			item(storeName(branch), branch, map[string]string{headAnnotation: strings.Repeat("1", 40), digestAnnotation: d, reproposesAnnotation: "7"}),
			item(storeName(other), other, map[string]string{finalizedAnnotation: "2025-01-01T00:00:00Z"}),
			item("not-a-group", "adopt/c/x", nil),
		},
	}
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if r.URL.Path != "/api/v1/namespaces/adopt/configmaps" || !strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") || r.URL.Query().Get("labelSelector") != storeSelector {
			t.Errorf("request %s %s (Accept %s): not one list of metadata", r.Method, r.URL, r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Store{Kube: kube, Namespace: "adopt"}.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Record{
		branch: {Mark: Mark{Head: strings.Repeat("1", 40), Digest: d}, Reproposes: 7},
		other:  {Finalized: true},
	}
	if len(got) != len(want) || got[branch] != want[branch] || got[other] != want[other] {
		t.Errorf("records %+v, want %+v", got, want)
	}
	if requests != 1 {
		t.Errorf("%d requests, want 1", requests)
	}
}
