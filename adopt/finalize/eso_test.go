package finalize_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestESOPushProveAndDropLastApplied runs finalize's part of the External
// Secrets form on the real operator and a real API server: Mark pushes
// the hand-applied Secret's value to the store and proves it reads back
// (journaled push-pending, pushed); the ExternalSecret is applied as Argo
// CD's first sync would; Prove finds the same Secret taken over with the
// same data, then removes last-applied-configuration (journaled pending,
// finalized, keeping nothing of it). A second Mark pushes nothing; a
// later run's Prove, which did not push, compares the Secret's changes
// since the plan with the data the takeover wrote. The journal never
// holds the canary, in plaintext or base64.
func TestESOPushProveAndDropLastApplied(t *testing.T) {
	const canary = "finalize-eso-canary-Zr4m"
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns, _, d, _ := esoWithStore(ctx, t)
	k := cp.Clientset()
	y := "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: " + ns + ", labels: {app: db}}\nstringData: {password: " + canary + "}\n"
	if _, err := cp.Kubectl(ctx, []byte(y), "apply", "-f", "-"); err != nil {
		t.Fatal("kubectl apply of the Secret failed") // its output would echo the manifest
	}
	live, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(t.TempDir(), "plan.yaml.journal")
	j, err := finalize.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	store := esoform.Store{Kind: esoform.KindSecretStore, Namespace: ns, Name: "vault"}
	target := finalize.SealedTarget{Target: finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: "shop"},
		UID: string(live.UID), SealedAt: live.ResourceVersion, Form: plan.SecretFormESO, Store: store.String(), RemoteKey: esoform.RemoteKey(ns, "db")}
	sl := &finalize.Sealer{Kube: k, Dynamic: d, Journal: func() *finalize.Journal { return j }}
	note, err := sl.Mark(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(note, "read back through the store equal") {
		t.Fatalf("Mark said %q", note)
	}
	es, err := esoform.Manifest(store, target.RemoteKey, live)
	if err != nil {
		t.Fatal(err)
	}
	m, err := es.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, m, "apply", "--server-side", "--field-manager=argocd-controller", "-f", "-"); err != nil {
		t.Fatalf("apply the ExternalSecret: %v: %s", err, out)
	}
	res := sl.Prove(ctx, target)
	if res.Status != finalize.StatusFinalized || !strings.Contains(res.Reason, "byte-identical to what was pushed") || !strings.Contains(res.Reason, "last-applied-configuration removed") {
		t.Fatalf("Prove = %s: %s", res.Status, res.Reason)
	}
	after, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != live.UID || string(after.Data["password"]) != canary || after.Annotations[budget.LastAppliedKey] != "" {
		t.Fatal("after Prove the Secret is another, has other data, or still carries last-applied-configuration")
	}
	if note, err := sl.Mark(ctx, target); err != nil || !strings.Contains(note, "already controlled") {
		t.Fatalf("a second Mark: %q, %v; want nothing pushed again", note, err)
	}
	// A run that did not push (apply --push-secrets or an earlier run
	// did) reads the changes since the plan against the data the
	// takeover wrote, and says so.
	later := &finalize.Sealer{Kube: k, Dynamic: d, Journal: func() *finalize.Journal { return nil }}
	if res := later.Prove(ctx, target); res.Status != finalize.StatusFinalized || !strings.Contains(res.Reason, "not compared with the pushed data in this run") ||
		!strings.Contains(res.Reason, "no change made since the plan was written over by the takeover") {
		t.Fatalf("Prove of a run that did not push = %s: %s", res.Status, res.Reason)
	}
	entries, err := j.Entries()
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, e := range entries {
		results = append(results, e.Result)
		if e.Annotation != nil || e.AnnotationHash != "" {
			t.Fatal("the journal keeps something of the Secret's last-applied copy")
		}
	}
	if got := strings.Join(results, ","); got != "push-pending,pushed,taken-over,pending,finalized" {
		t.Fatalf("journal results %s", got)
	}
	raw, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(canary)) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte(canary)))) {
		t.Fatal("the journal holds the canary")
	}
}

// TestESONeeds: the push and the proof need Secrets read, created,
// updated, deleted and watched, and PushSecrets and ExternalSecrets read,
// watched, created and deleted (esoform.PushNeeds, and the watch), in
// each namespace of a Secret of form eso; a sealed Secret or a dry run
// needs none of it.
func TestESONeeds(t *testing.T) {
	ref := func(ns string) finalize.Target {
		return finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}}
	}
	ts := []finalize.SealedTarget{{Target: ref("a"), Form: plan.SecretFormESO}, {Target: ref("a"), Form: plan.SecretFormESO}, {Target: ref("b"), Form: plan.SecretFormSealed}}
	needs := finalize.ESONeeds(ts, false)
	if len(needs) != 13 || len(needs) != len(esoform.PushNeeds())+1 {
		t.Fatalf("%d needs, want 13 (5 on secrets, 4 on each resource, namespace a only): %v", len(needs), needs)
	}
	for _, n := range needs {
		if n.Namespace != "a" {
			t.Errorf("need %v outside namespace a", n)
		}
	}
	if n := finalize.ESONeeds(ts, true); len(n) != 0 {
		t.Errorf("a dry run needs %v", n)
	}
}

// esoWithStore starts the External Secrets Operator on a namespace of its
// own (ns, stopped when t ends) with SecretStore vault, whose kubernetes
// provider keeps its values in storeNS.
func esoWithStore(ctx context.Context, t *testing.T) (ns, storeNS string, d dynamic.Interface, eso *testenv.ExternalSecrets) {
	t.Helper()
	ns, storeNS = cp.Namespace(t), cp.Namespace(t)
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if eso, err = testenv.StartExternalSecrets(ctx, cp, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eso.Stop)
	if err := eso.KubernetesStore(ctx, "vault", storeNS); err != nil {
		t.Fatal(err)
	}
	return ns, storeNS, d, eso
}
