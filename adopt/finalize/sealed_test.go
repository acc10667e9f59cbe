package finalize_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/sealed"
)

// TestSealedMarkAndUndo: on a real API server, Mark refuses a Secret
// changed since it was sealed (nothing written), marks it at the sealed
// resourceVersion and journals it; a second Mark changes nothing; --undo
// (Unmark of the journal's Marked) removes the mark while no SealedSecret
// controls the Secret, and leaves it once one does; once the controller
// replaced the mark with its template's annotations, Mark has nothing to do.
func TestSealedMarkAndUndo(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	k := cp.Clientset()
	s, err := k.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, StringData: map[string]string{"password": "canary-mark-Vb7"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := finalize.OpenJournal(filepath.Join(t.TempDir(), "plan.yaml.journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	sl := &finalize.Sealer{Kube: k, Journal: func() *finalize.Journal { return j }}
	target := finalize.SealedTarget{Target: finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "db"}, App: "shop"}, UID: string(s.UID), SealedAt: "1"}
	if _, err := sl.Mark(ctx, target); err == nil || !strings.Contains(err.Error(), "changed since it was sealed") {
		t.Fatalf("Mark of a Secret changed since it was sealed: %v, want a refusal", err)
	}
	if live, _ := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); live.Annotations[sealed.ManagedAnnotation] != "" {
		t.Fatal("a refused Mark wrote the mark")
	}
	target.SealedAt = s.ResourceVersion
	for range 2 {
		if _, err := sl.Mark(ctx, target); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := j.Entries()
	if err != nil {
		t.Fatal(err)
	}
	marked := finalize.Marked(entries)
	if len(marked) != 1 {
		t.Fatalf("the journal records %d marks, want 1 (the second Mark finds it there)", len(marked))
	}
	if r := sl.Unmark(ctx, marked[0]); r.Status != finalize.StatusRestored {
		t.Fatalf("undo of the mark: %s %s", r.Status, r.Reason)
	}
	live, err := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil || live.Annotations[sealed.ManagedAnnotation] != "" {
		t.Fatalf("after undo the Secret carries %q (%v)", live.Annotations[sealed.ManagedAnnotation], err)
	}
	if entries, _ = j.Entries(); len(finalize.Marked(entries)) != 0 {
		t.Error("after undo the journal still lists the mark: a second undo would run")
	}

	// Marked again, then taken over: undo leaves the mark to the controller.
	target.SealedAt = live.ResourceVersion
	if _, err := sl.Mark(ctx, target); err != nil {
		t.Fatal(err)
	}
	live, _ = k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	yes := true
	live.OwnerReferences = []metav1.OwnerReference{{APIVersion: sealed.APIVersion, Kind: sealed.Kind, Name: "db", UID: "0d7c1f5e-0000-4000-8000-000000000001", Controller: &yes}}
	if _, err := k.CoreV1().Secrets(ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	entries, _ = j.Entries()
	if r := sl.Unmark(ctx, finalize.Marked(entries)[0]); r.Status != finalize.StatusSkipped || !strings.Contains(r.Reason, "--cascade=orphan") {
		t.Errorf("undo after the takeover: %s %s, want it skipped, naming the orphaning delete", r.Status, r.Reason)
	}
	if live, _ := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); live.Annotations[sealed.ManagedAnnotation] != "true" {
		t.Error("undo after the takeover removed the mark")
	}
	// The controller's template then replaced the mark (issue 45: a
	// reconcile run marked and waited, a person synced): a later Mark, its
	// sealedAt now old, finds the Secret taken over and writes nothing.
	live, _ = k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	delete(live.Annotations, sealed.ManagedAnnotation)
	if live, err = k.CoreV1().Secrets(ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if note, err := sl.Mark(ctx, target); err != nil || !strings.Contains(note, "already controlled by SealedSecret") {
		t.Errorf("Mark of a Secret taken over since: %q, %v; want nothing to mark", note, err)
	}
	if after, _ := k.CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{}); after.ResourceVersion != live.ResourceVersion {
		t.Error("Mark wrote to a Secret its SealedSecret controls")
	}
	b, _ := j.Entries()
	for _, e := range b {
		if strings.Contains(e.Target.Name+e.ResourceVersion+e.Result, "canary") || e.Annotation != nil {
			t.Errorf("journal entry %+v holds more than metadata", e)
		}
	}
}
