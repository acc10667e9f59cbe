package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestMarker: a pull request body's record reads back as written, with or
// without the fields added later (plan=, seen=), and a body edited around
// it still holds it.
func TestMarker(t *testing.T) {
	d, p, s := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	for _, m := range []Mark{
		{Digest: d, Head: "0123abcd", Plan: p, Seen: s},
		{Digest: d, Head: "0123abcd"}, // a pull request opened before plan= and seen=
		{Digest: d, Head: "", Plan: p},
	} {
		body := "Adopts 3 objects.\n\n" + Trailer(m) + "\n\n(edited by a reviewer)"
		got, ok := readMarker(body)
		if !ok || got != m {
			t.Errorf("readMarker(%q) = %+v, %v; want %+v", Trailer(m), got, ok, m)
		}
	}
	if _, ok := readMarker("no record <!-- adopt-reconcile digest=sha256:short head=1 -->"); ok {
		t.Errorf("a malformed record was read")
	}
}

// TestOneRunnerIdentity (issue 43): a run named otherwise than the runs
// whose records the cluster holds refuses before it asks anything, naming
// both names and the fix; the same name, or a cluster with no records,
// goes on.
func TestOneRunnerIdentity(t *testing.T) {
	recs := map[string]Record{"adopt/prod-eu/payments": {}, "adopt/prod-eu/search": {}}
	err := sameCluster("cluster", recs)
	if !errors.Is(err, ErrOtherName) || !strings.Contains(err.Error(), "adopt/prod-eu/") || !strings.Contains(err.Error(), `named "cluster"`) ||
		!strings.Contains(err.Error(), "--cluster-name prod-eu") {
		t.Errorf("a second name: %v", err)
	}
	if _, err := Run(context.Background(), Options{Plan: &plan.Plan{}, Cluster: "cluster", Records: recs}, Seams{}); !errors.Is(err, ErrOtherName) {
		t.Errorf("Run with a second name: %v; want ErrOtherName before any seam is used", err)
	}
	for _, ok := range []struct {
		name string
		recs map[string]Record
	}{{"prod-eu", recs}, {"prod-eu", nil}, {"new", map[string]Record{}}} {
		if err := sameCluster(ok.name, ok.recs); err != nil {
			t.Errorf("sameCluster(%q, %d records): %v", ok.name, len(ok.recs), err)
		}
	}
}

// TestPlanDigestIgnoresTheApplicationCount (issue 43, cost): a new
// Argo CD Application elsewhere changes only the plan's note, which does
// not shape a group's branch: the digest stays, so no open pull request's
// record is rewritten. What does shape it (the root that syncs the apps
// directory) changes the digest.
func TestPlanDigestIgnoresTheApplicationCount(t *testing.T) {
	p := &plan.Plan{ArgoCD: plan.ArgoCD{Installed: true, Note: "2 Argo CD Applications found"}}
	d := PlanDigest(p, "s")
	p.ArgoCD.Note = "3 Argo CD Applications found"
	if PlanDigest(p, "s") != d {
		t.Error("the Application count changed the digest")
	}
	p.ArgoCD.Root = &plan.Root{}
	if PlanDigest(p, "s") == d {
		t.Error("a root changed nothing in the digest")
	}
}

// TestSubKeepsTheGroupsOwn: a group's plan holds its Applications'
// objects and, of what the plan left out, only what is in their
// namespaces: the pull request and the store name no other namespace's
// Secret.
func TestSubKeepsTheGroupsOwn(t *testing.T) {
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind}
	for _, ns := range []string{"shop", "cart"} {
		ob := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: "settings"}, App: "adopt-" + ns}
		p.Objects = append(p.Objects, ob)
		p.Applications = append(p.Applications, plan.Application{Name: "adopt-" + ns, Namespace: ns, Objects: []string{ob.Ref.String()}})
		p.Skipped = append(p.Skipped, plan.Skipped{Kind: "Secret", Namespace: ns, Name: "db", Reason: "a Secret"})
	}
	p.Skipped = append(p.Skipped, plan.Skipped{Kind: "Node", Name: "n1", Reason: "cluster-scoped"})
	sub, err := Sub(p, p.Applications[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Objects) != 1 || sub.Objects[0].Namespace != "shop" || len(sub.Skipped) != 1 || sub.Skipped[0].Namespace != "shop" {
		t.Errorf("the shop group's plan holds objects %+v and skipped %+v; want shop's only", sub.Objects, sub.Skipped)
	}
	if len(p.Skipped) != 3 {
		t.Errorf("Sub changed the plan it was given")
	}
}
