package finalize_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/argoapp"
)

const name = "litellm-test-usage-hook"

// cmManifest is a ConfigMap manifest (JSON, which kubectl reads as YAML).
func cmManifest(ns string, data, annotations map[string]string) []byte {
	md := map[string]any{"name": name, "namespace": ns}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data})
	return b
}

func app(ns string) string { return "adopt-" + ns }

func trackingID(ns string) string { return app(ns) + ":/ConfigMap:" + ns + "/" + name }

// gitCopy is the manifest Argo CD applies: the hand-applied one plus the
// tracking id.
func gitCopy(ns string, data map[string]string) []byte {
	return cmManifest(ns, data, map[string]string{"team": "platform", argoapp.AnnotationTrackingID: trackingID(ns)})
}

func kubectl(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	if out, err := cp.Kubectl(context.Background(), stdin, args...); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// argoSync applies the way Argo CD v2 does, through kubectl (which migrates
// client-side-apply ownership first).
func argoSync(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	kubectl(t, gitCopy(ns, data), "-n", ns, "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-")
}

// argoSyncNoMigration applies the way Argo CD v3 does with
// ClientSideApplyMigration=false: a plain server-side apply.
func argoSyncNoMigration(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(gitCopy(ns, data), &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn(t).Resource(cmGVR).Namespace(ns).Apply(context.Background(), name, u, metav1.ApplyOptions{FieldManager: finalize.ArgoCDManager, Force: true}); err != nil {
		t.Fatal(err)
	}
}

var cmGVR = objref.Ref{Version: "v1", Resource: "configmaps"}.GVR()

func dyn(t *testing.T) dynamic.Interface {
	d, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func get(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn(t).Resource(cmGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func target(ns string) finalize.Target {
	return finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: app(ns)}
}

func finalizer(t *testing.T) *finalize.Finalizer {
	d := dyn(t)
	tr := argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey}
	return &finalize.Finalizer{
		Client:   func(tg finalize.Target) finalize.Client { return d.Resource(tg.GVR()).Namespace(tg.Namespace) },
		Tracking: &tr,
	}
}

// comparable strips what finalize may change.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", budget.LastAppliedKey)
	return c.Object
}

// handOwned lists hand-apply managers that still own a field Argo CD owns.
func handOwned(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, e := range u.GetManagedFields() {
		if e.Manager == finalize.ArgoCDManager {
			continue
		}
		one := []metav1.ManagedFieldsEntry{e}
		if _, own, err := finalize.DropShared(append(one, argoEntries(u)...), finalize.ArgoCDManager, append(finalize.HandManagers(), finalize.CSAManager)); err != nil {
			t.Fatal(err)
		} else if len(own.Removed)+len(own.Trimmed) > 0 {
			out = append(out, e.Manager)
		}
	}
	return out
}

func argoEntries(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range u.GetManagedFields() {
		if e.Manager == finalize.ArgoCDManager {
			out = append(out, e)
		}
	}
	return out
}

// bigData returns data whose client-side apply lands the object's
// annotations at want bytes: it applies once, measures, and corrects.
func applyAtBudget(t *testing.T, ns string, want int) {
	t.Helper()
	data := map[string]string{"a": "1", "b": "2", "usage_hook.py": strings.Repeat("x", 240000)}
	ann := map[string]string{"team": "platform"}
	kubectl(t, cmManifest(ns, data, ann), "-n", ns, "apply", "-f", "-")
	got := budget.AnnotationBytes(get(t, ns).GetAnnotations())
	data["usage_hook.py"] = strings.Repeat("x", 240000+want-got)
	kubectl(t, cmManifest(ns, data, ann), "-n", ns, "apply", "-f", "-")
	if got := budget.AnnotationBytes(get(t, ns).GetAnnotations()); got != want {
		t.Fatalf("starting state: annotations are %d B, want %d B", got, want)
	}
}

var small = map[string]string{"a": "1", "b": "2"}

type syncFunc = func(t *testing.T, ns string, data map[string]string)

// testCase builds a starting state with the real kubectl, then Argo CD's
// first sync.
type testCase struct {
	name string
	// start builds the hand-applied state and runs the first sync.
	start func(t *testing.T, ns string)
	// bug is true when, without finalize, a key deleted in Git survives
	// the next sync.
	bug bool
	// want is the first finalize's status.
	want finalize.Status
	// sync is how the next sync applies (argoSync when nil).
	sync syncFunc
}

func (tc testCase) next() syncFunc {
	if tc.sync == nil {
		return argoSync
	}
	return tc.sync
}

var cases = []testCase{
	{
		name: "client-side apply at 98.1% of the cap, Argo CD v2 sync (kubectl migrates)",
		start: func(t *testing.T, ns string) {
			applyAtBudget(t, ns, 257270)
			argoSync(t, ns, bigDataOf(t, ns))
		},
		want: finalize.StatusAlready,
	},
	{
		name: "client-side apply at 98.1% of the cap, sync without client-side-apply migration",
		start: func(t *testing.T, ns string) {
			applyAtBudget(t, ns, 257270)
			argoSyncNoMigration(t, ns, bigDataOf(t, ns))
		},
		bug:  true,
		want: finalize.StatusFinalized,
		sync: argoSyncNoMigration,
	},
	{
		name: "runbook server-side apply after client-side apply",
		start: func(t *testing.T, ns string) {
			m := cmManifest(ns, small, map[string]string{"team": "platform"})
			kubectl(t, m, "-n", ns, "apply", "-f", "-")
			kubectl(t, m, "-n", ns, "apply", "--server-side", "-f", "-")
			argoSync(t, ns, small)
		},
		bug:  true,
		want: finalize.StatusFinalized,
	},
	{
		name: "kubectl create then kubectl annotate",
		start: func(t *testing.T, ns string) {
			m := cmManifest(ns, small, map[string]string{"team": "platform"})
			kubectl(t, m, "-n", ns, "create", "-f", "-")
			kubectl(t, nil, "-n", ns, "annotate", "cm", name, budget.LastAppliedKey+"="+string(m))
			argoSync(t, ns, small)
		},
		bug:  true,
		want: finalize.StatusFinalized,
	},
}

// bigDataOf is the live data, which is what Git holds in these cases.
func bigDataOf(t *testing.T, ns string) map[string]string {
	d, _, _ := unstructured.NestedStringMap(get(t, ns).Object, "data")
	return d
}

func TestFinalizeThenKeyDeletedInGitIsDeleted(t *testing.T) {
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := cp.Namespace(t)
			tc.start(t, ns)
			data := bigDataOf(t, ns)
			before := get(t, ns)

			res := finalizer(t).Object(ctx, target(ns))
			if res.Status != tc.want {
				t.Fatalf("status %s (%s), want %s", res.Status, res.Reason, tc.want)
			}
			after := get(t, ns)
			t.Logf("%s: annotations %s B (%.1f%%) -> %s B (%.1f%%), managers %+v",
				res.Object, fmt(res.Before.AnnotationBytes), res.Before.PercentOfCap, fmt(res.After.AnnotationBytes), res.After.PercentOfCap, res.Managers)
			if _, ok := after.GetAnnotations()[budget.LastAppliedKey]; ok {
				t.Fatalf("annotation still there after finalize")
			}
			if got := after.GetAnnotations()["team"]; got != "platform" {
				t.Fatalf("other annotation lost: team=%q", got)
			}
			if got := after.GetAnnotations()[argoapp.AnnotationTrackingID]; got != trackingID(ns) {
				t.Fatalf("tracking id changed: %q", got)
			}
			if !reflect.DeepEqual(comparable(before), comparable(after)) {
				t.Fatalf("finalize changed more than the annotation and managedFields:\nbefore %v\nafter  %v", comparable(before), comparable(after))
			}
			if h := handOwned(t, after); len(h) > 0 {
				t.Fatalf("hand-apply managers still own Argo CD's fields: %v (managedFields %v)", h, after.GetManagedFields())
			}
			if res.After.AnnotationBytes != budget.AnnotationBytes(after.GetAnnotations()) {
				t.Fatalf("reported %d B after, live is %d B", res.After.AnnotationBytes, budget.AnnotationBytes(after.GetAnnotations()))
			}

			// Re-running is safe: nothing to do, nothing written.
			again := finalizer(t).Object(ctx, target(ns))
			if again.Status != finalize.StatusAlready {
				t.Fatalf("second run: %s (%s), want %s", again.Status, again.Reason, finalize.StatusAlready)
			}
			if rv := get(t, ns).GetResourceVersion(); rv != after.GetResourceVersion() {
				t.Fatalf("second run wrote to the object: resourceVersion %s -> %s", after.GetResourceVersion(), rv)
			}

			// The decisive check: Git deletes key a; the next sync deletes it.
			delete(data, "a")
			tc.next()(t, ns, data)
			if _, ok := get(t, ns).Object["data"].(map[string]any)["a"]; ok {
				t.Fatalf("after finalize, key a deleted in Git survived the next sync: managedFields %v", get(t, ns).GetManagedFields())
			}
		})
		t.Run(tc.name+" (without finalize)", func(t *testing.T) {
			ns := cp.Namespace(t)
			tc.start(t, ns)
			data := bigDataOf(t, ns)
			delete(data, "a")
			tc.next()(t, ns, data)
			_, survived := get(t, ns).Object["data"].(map[string]any)["a"]
			if survived != tc.bug {
				t.Fatalf("without finalize, key a deleted in Git survived=%v, want %v: the case does not show what it claims", survived, tc.bug)
			}
		})
	}
}

func fmt(n int) string {
	s := strings.Builder{}
	d := []byte(strconvItoa(n))
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			s.WriteByte(',')
		}
		s.WriteByte(c)
	}
	return s.String()
}

func strconvItoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// racingClient is the real client with one fault a real part cannot time on
// demand: another writer changes the object between finalize's read and its
// patch.
type racingClient struct {
	finalize.Client
	race     func()
	firstErr error
	patches  int
}

func (r *racingClient) Patch(ctx context.Context, n string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.patches++
	if r.patches == 1 {
		r.race()
		u, err := r.Client.Patch(ctx, n, pt, data, o, sub...)
		r.firstErr = err
		return u, err
	}
	return r.Client.Patch(ctx, n, pt, data, o, sub...)
}

func TestConcurrentWriterIsNotLost(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cases[2].start(t, ns)
	f := finalizer(t)
	real := f.Client(target(ns))
	rc := &racingClient{Client: real, race: func() {
		kubectl(t, nil, "-n", ns, "label", "cm", name, "touched-by=someone-else")
		kubectl(t, []byte(`{"data":{"c":"3"}}`), "-n", ns, "patch", "cm", name, "--type=merge", "--patch-file=/dev/stdin")
	}}
	f.Client = func(finalize.Target) finalize.Client { return rc }
	res := f.Object(ctx, target(ns))
	if res.Status != finalize.StatusFinalized {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	if rc.firstErr == nil {
		t.Fatalf("the first patch succeeded although the object changed under it: the guard did not fire")
	}
	t.Logf("first patch refused as it must be: %v", rc.firstErr)
	if res.Attempts != 2 {
		t.Fatalf("attempts %d, want 2 (re-read once)", res.Attempts)
	}
	u := get(t, ns)
	if u.GetLabels()["touched-by"] != "someone-else" {
		t.Fatalf("the concurrent label was lost: %v", u.GetLabels())
	}
	if c, _, _ := unstructured.NestedString(u.Object, "data", "c"); c != "3" {
		t.Fatalf("the concurrent data change was lost: %v", u.Object["data"])
	}
	if _, ok := u.GetAnnotations()[budget.LastAppliedKey]; ok {
		t.Fatalf("annotation still there")
	}
}

func TestRetriesAreBounded(t *testing.T) {
	ns := cp.Namespace(t)
	cases[2].start(t, ns)
	f := finalizer(t)
	real := f.Client(target(ns))
	n := 0
	rc := &alwaysRacing{Client: real, race: func() {
		n++
		kubectl(t, nil, "-n", ns, "label", "--overwrite", "cm", name, "round="+strconvItoa(n))
	}}
	f.Client = func(finalize.Target) finalize.Client { return rc }
	before := get(t, ns)
	res := f.Object(context.Background(), target(ns))
	if res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, "kept changing") {
		t.Fatalf("status %s (%s), want failed: kept changing", res.Status, res.Reason)
	}
	if strings.Contains(res.Reason, "\n") {
		t.Fatalf("reason is not one line: %q", res.Reason)
	}
	if got := get(t, ns).GetAnnotations()[budget.LastAppliedKey]; got != before.GetAnnotations()[budget.LastAppliedKey] {
		t.Fatalf("annotation changed although every patch was refused")
	}
}

type alwaysRacing struct {
	finalize.Client
	race func()
}

func (r *alwaysRacing) Patch(ctx context.Context, n string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	r.race()
	return r.Client.Patch(ctx, n, pt, data, o, sub...)
}

func TestDryRunChangesNothingAndRedactsSecrets(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	secret := func(extra map[string]string) []byte {
		md := map[string]any{"name": "creds", "namespace": ns}
		if extra != nil {
			md["annotations"] = extra
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md, "stringData": map[string]string{"password": "canary-s3cr3t-value"}})
		return b
	}
	kubectl(t, secret(nil), "-n", ns, "apply", "-f", "-")
	kubectl(t, secret(nil), "-n", ns, "apply", "--server-side", "-f", "-")
	kubectl(t, secret(map[string]string{argoapp.AnnotationTrackingID: app(ns) + ":/Secret:" + ns + "/creds"}), "-n", ns,
		"apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-")
	tg := finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: ns, Name: "creds"}, App: app(ns)}
	d := dyn(t)
	before, err := d.Resource(tg.GVR()).Namespace(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.GetAnnotations()[budget.LastAppliedKey]; !ok {
		t.Fatalf("starting state has no %s", budget.LastAppliedKey)
	}
	f := finalizer(t)
	f.DryRun = true
	res := f.Object(ctx, tg)
	if res.Status != finalize.StatusWould {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	b, _ := json.Marshal(res)
	out := string(b)
	if !strings.Contains(out, `"op":"remove"`) || !strings.Contains(out, `"op":"test"`) || !strings.Contains(out, `\u003credacted\u003e`) || strings.Contains(out, "sha256:") {
		t.Fatalf("dry-run does not show the guarded patch with the Secret's annotation hidden, digest and all: %s", out)
	}
	if strings.Contains(out, "canary-s3cr3t-value") || strings.Contains(out, "Y2FuYXJ5LXMzY3IzdC12YWx1ZQ") {
		t.Fatalf("dry-run output carries the Secret's value: %s", out)
	}
	after, _ := d.Resource(tg.GVR()).Namespace(ns).Get(ctx, "creds", metav1.GetOptions{})
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("dry-run wrote to the object")
	}

	// The journal of a real run keeps no Secret data either.
	jp := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	f.DryRun, f.Journal = false, j
	if res := f.Object(ctx, tg); res.Status != finalize.StatusFinalized {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	j.Close()
	jb, _ := os.ReadFile(jp)
	// Not even a digest or a length (issue 36): they let weak values be
	// guessed offline.
	if strings.Contains(string(jb), "canary-s3cr3t-value") || strings.Contains(string(jb), "Y2FuYXJ5LXMzY3IzdC12YWx1ZQ") ||
		strings.Contains(string(jb), "annotationSHA256") || strings.Contains(string(jb), "annotationBytes") {
		t.Fatalf("journal carries Secret data, a digest or a length: %s", jb)
	}
	entries, err := finalize.ReadJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Undo(ctx, finalize.Removed(entries)[0]); r.Status != finalize.StatusFailed || !strings.Contains(r.Reason, "digest") {
		t.Fatalf("undo of a Secret: %s (%s), want failed: only a digest", r.Status, r.Reason)
	}
}

func TestJournalAndUndo(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cases[2].start(t, ns)
	orig := get(t, ns).GetAnnotations()[budget.LastAppliedKey]
	jp := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := finalize.OpenJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	f := finalizer(t)
	f.Journal = j
	if res := f.Object(ctx, target(ns)); res.Status != finalize.StatusFinalized {
		t.Fatalf("status %s (%s)", res.Status, res.Reason)
	}
	j.Close()
	entries, err := finalize.ReadJournal(jp)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Result != "pending" || entries[1].Result != "finalized" {
		t.Fatalf("journal: %+v", entries)
	}
	removed := finalize.Removed(entries)
	if len(removed) != 1 {
		t.Fatalf("removed: %+v", removed)
	}
	r := f.Undo(ctx, removed[0])
	if r.Status != finalize.StatusRestored {
		t.Fatalf("undo: %s (%s)", r.Status, r.Reason)
	}
	if got := get(t, ns).GetAnnotations()[budget.LastAppliedKey]; got != orig {
		t.Fatalf("undo restored %d B, want the original %d B", len(got), len(orig))
	}
	if r := f.Undo(ctx, removed[0]); r.Status != finalize.StatusAlready {
		t.Fatalf("second undo: %s (%s)", r.Status, r.Reason)
	}
}

func TestRefusesObjectArgoCDHasNotSynced(t *testing.T) {
	ns := cp.Namespace(t)
	kubectl(t, cmManifest(ns, small, nil), "-n", ns, "apply", "-f", "-")
	before := get(t, ns)
	res := finalizer(t).Object(context.Background(), target(ns))
	if res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, "tracking") {
		t.Fatalf("status %s (%s), want failed for missing tracking", res.Status, res.Reason)
	}
	f := finalizer(t)
	f.Tracking = nil
	res = f.Object(context.Background(), target(ns))
	if res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, "ServerSideApply=true") {
		t.Fatalf("status %s (%s), want failed for no server-side sync", res.Status, res.Reason)
	}
	if get(t, ns).GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("a refused object was written")
	}
}
