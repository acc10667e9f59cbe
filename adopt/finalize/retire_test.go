package finalize_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rspb "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/objref"
)

// recordEntries are a record's journal lines as a run writes them.
func recordEntries(name, rv, run string, results ...string) []finalize.Entry {
	var out []finalize.Entry
	for _, r := range results {
		e := finalize.Entry{Run: run, Target: finalize.Target{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: name}, App: "web"},
			ResourceVersion: rv, Release: "web", Result: r}
		if r == "pending" {
			e.Record = []byte(`{"kind":"Secret"}`)
		}
		out = append(out, e)
	}
	return out
}

// TestRetiredFromTheJournal: a record is to restore when its delete was
// journaled as retired, or its pending line is settled by nothing; not
// when the delete was refused or an undo restored it since; and the
// annotation entries' Removed never returns a record.
func TestRetiredFromTheJournal(t *testing.T) {
	var entries []finalize.Entry
	entries = append(entries, recordEntries("sh.helm.release.v1.web.v2", "10", "a", "pending", "retired")...)
	entries = append(entries, recordEntries("sh.helm.release.v1.web.v1", "9", "a", "pending", "not-applied")...)
	entries = append(entries, recordEntries("sh.helm.release.v1.web.v3", "11", "a", "pending")...)
	entries = append(entries, recordEntries("sh.helm.release.v1.web.v4", "12", "a", "pending", "retired", "restored")...)
	got := finalize.Retired(entries)
	var names []string
	for _, e := range got {
		if e.Result != "pending" || len(e.Record) == 0 {
			t.Errorf("%s: entry %s without the record", e.Target.Name, e.Result)
		}
		names = append(names, e.Target.Name)
	}
	if want := []string{"sh.helm.release.v1.web.v2", "sh.helm.release.v1.web.v3"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("Retired = %v, want %v", names, want)
	}
	if r := finalize.Removed(entries); len(r) != 0 {
		t.Fatalf("Removed returns record entries: %+v", r)
	}
}

// helmRecords writes revisions 1..n of release web in ns with Helm's own
// storage driver (the code helm install and upgrade run), the values
// holding secret; revision n deployed, the others superseded.
func helmRecords(t *testing.T, ns, storage, secret string, n int) driver.Driver {
	t.Helper()
	var d driver.Driver = driver.NewSecrets(cp.Clientset().CoreV1().Secrets(ns))
	if storage == helmrelease.StorageConfigMap {
		d = driver.NewConfigMaps(cp.Clientset().CoreV1().ConfigMaps(ns))
	}
	for v := 1; v <= n; v++ {
		status := rspb.StatusSuperseded
		if v == n {
			status = rspb.StatusDeployed
		}
		r := rspb.Mock(&rspb.MockReleaseOptions{Name: "web", Version: v, Namespace: ns, Status: status})
		r.Config = map[string]any{"auth": map[string]any{"password": secret}, "revision": v}
		if err := d.Create(helmrelease.RecordName("web", v), r); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// recordContent is what --undo must give back of a record: labels,
// annotations, type and data.
func recordContent(u *unstructured.Unstructured) map[string]any {
	return map[string]any{"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "type": u.Object["type"], "data": u.Object["data"], "binaryData": u.Object["binaryData"]}
}

func listRecords(t *testing.T, r objref.Ref) map[string]*unstructured.Unstructured {
	t.Helper()
	l, err := dyn(t).Resource(r.GVR()).Namespace(r.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		out[l.Items[i].GetName()] = &l.Items[i]
	}
	return out
}

func retirer(t *testing.T, j *finalize.Journal) *finalize.Retirer {
	d := dyn(t)
	return &finalize.Retirer{Journal: j, Client: func(tg finalize.Target) finalize.RecordClient { return d.Resource(tg.GVR()).Namespace(tg.Namespace) }}
}

// TestRetireAndRestoreHelmRecords, for each of Helm's storage drivers, on
// the real API server with records Helm's own driver wrote: retiring
// deletes every revision, newest first, each journaled whole before its
// delete in a journal of mode 0600; Helm's driver then finds no release; a
// second run finds nothing and says so; a journal written with a wider
// mode is narrowed to 0600; undo creates every record again with the same
// labels, type and data, and Helm's driver reads the same releases back;
// a second undo is a no-op; a record made again in between (a new helm
// install) is not overwritten.
func TestRetireAndRestoreHelmRecords(t *testing.T) {
	for _, storage := range []string{helmrelease.StorageSecret, helmrelease.StorageConfigMap} {
		t.Run(storage, func(t *testing.T) {
			ctx := context.Background()
			ns := cp.Namespace(t)
			d := helmRecords(t, ns, storage, "pw-CANARY-retire", 2)
			h := finalize.HelmRelease{App: "web", Name: "web", Namespace: ns, Storage: storage, Revision: 2,
				Records: []string{helmrelease.RecordName("web", 1), helmrelease.RecordName("web", 2)}}
			before := listRecords(t, h.Ref(""))
			if len(before) != 2 {
				t.Fatalf("%d records, want 2", len(before))
			}
			path := filepath.Join(t.TempDir(), "plan.yaml.journal")
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			j, err := finalize.OpenJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			rep := retirer(t, j).Retire(ctx, h)
			if rep.Status != finalize.StatusRetired || len(rep.Records) != 2 || rep.Records[0].Object != h.Ref(helmrelease.RecordName("web", 2)).String() {
				t.Fatalf("retire: %+v", rep)
			}
			if left := listRecords(t, h.Ref("")); len(left) != 0 {
				t.Fatalf("records left: %v", left)
			}
			if rels, err := d.List(func(*rspb.Release) bool { return true }); err != nil || len(rels) != 0 {
				t.Fatalf("Helm's driver still lists %d releases (%v)", len(rels), err)
			}
			again := retirer(t, j).Retire(ctx, h)
			if again.Status != finalize.StatusAlreadyRetired || !strings.Contains(again.Reason, "nothing to do") {
				t.Fatalf("second run: %+v", again)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("journal mode %v (%v), want 0600", fi.Mode().Perm(), err)
			}
			entries, err := finalize.ReadJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			retired := finalize.Retired(entries)
			if len(retired) != 2 {
				t.Fatalf("journal: %d records to restore, want 2", len(retired))
			}
			for _, e := range retired {
				var u unstructured.Unstructured
				if err := u.UnmarshalJSON(e.Record); err != nil {
					t.Fatal(err)
				}
				if b := before[e.Target.Name]; b == nil || !reflect.DeepEqual(u.Object, b.Object) {
					t.Errorf("the journal does not hold %s as it was read", e.Target.Name)
				}
			}

			// A new install made revision 1 again meanwhile: it is not
			// overwritten, the other record comes back.
			clash := before[helmrelease.RecordName("web", 1)].DeepCopy()
			for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
				unstructured.RemoveNestedField(clash.Object, "metadata", f)
			}
			clash.SetLabels(map[string]string{"owner": "helm", "name": "web", "status": "deployed", "version": "1", "new": "install"})
			made, err := dyn(t).Resource(h.Ref("").GVR()).Namespace(ns).Create(ctx, clash, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			j, err = finalize.OpenJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			rt := retirer(t, j)
			for _, e := range retired {
				res := rt.Restore(ctx, e)
				switch e.Target.Name {
				case helmrelease.RecordName("web", 1):
					if res.Status != finalize.StatusFailed || !strings.Contains(res.Reason, "exists again") || !strings.Contains(res.Reason, "not overwritten") {
						t.Errorf("restore over a new record: %+v", res)
					}
				default:
					if res.Status != finalize.StatusRestored {
						t.Errorf("restore: %+v", res)
					}
				}
			}
			if got := listRecords(t, h.Ref(""))[helmrelease.RecordName("web", 1)]; got.GetResourceVersion() != made.GetResourceVersion() {
				t.Fatal("undo overwrote a record made since")
			}
			if err := dyn(t).Resource(h.Ref("").GVR()).Namespace(ns).Delete(ctx, made.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			entries, err = j.Entries()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range finalize.Retired(entries) {
				if res := rt.Restore(ctx, e); res.Status != finalize.StatusRestored {
					t.Errorf("restore once the new record is gone: %+v", res)
				}
			}
			after := listRecords(t, h.Ref(""))
			for n, b := range before {
				a, ok := after[n]
				if !ok {
					t.Fatalf("%s not restored", n)
				}
				if !reflect.DeepEqual(recordContent(a), recordContent(b)) {
					t.Errorf("%s restored with other content:\n%v\nwant\n%v", n, recordContent(a), recordContent(b))
				}
				if a.GetUID() == b.GetUID() {
					t.Errorf("%s: same UID after a delete and create?", n)
				}
			}
			for v := 1; v <= 2; v++ {
				r, err := d.Get(helmrelease.RecordName("web", v))
				if err != nil {
					t.Fatal(err)
				}
				if r.Version != v || r.Config["auth"].(map[string]any)["password"] != "pw-CANARY-retire" {
					t.Errorf("Helm reads revision %d back as %d, config %v", v, r.Version, r.Config)
				}
			}
			entries, err = j.Entries()
			if err != nil {
				t.Fatal(err)
			}
			if left := finalize.Retired(entries); len(left) != 0 {
				t.Fatalf("after undo, %d records still to restore: a second undo would act", len(left))
			}
		})
	}
}

// racingRecords is the real client with one fault a real part cannot time
// on demand: Helm writes a record between the list and the delete.
type racingRecords struct {
	finalize.RecordClient
	race    func()
	deletes int
}

func (r *racingRecords) Delete(ctx context.Context, n string, o metav1.DeleteOptions, sub ...string) error {
	r.deletes++
	if r.deletes == 1 {
		r.race()
	}
	return r.RecordClient.Delete(ctx, n, o, sub...)
}

// TestRetireRefusesAReleaseHelmStillUses: a revision the plan did not see
// refuses the whole release with nothing deleted; a record that changed
// between the list and its delete (the delete's UID and resourceVersion
// precondition) is not deleted, nor is any after it, and the release is
// refused, naming the record.
func TestRetireRefusesAReleaseHelmStillUses(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	helmRecords(t, ns, helmrelease.StorageSecret, "pw", 3)
	h := finalize.HelmRelease{App: "web", Name: "web", Namespace: ns, Storage: helmrelease.StorageSecret, Revision: 2,
		Records: []string{helmrelease.RecordName("web", 1), helmrelease.RecordName("web", 2)}}
	j, err := finalize.OpenJournal(filepath.Join(t.TempDir(), "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	rep := retirer(t, j).Retire(ctx, h)
	if rep.Status != finalize.StatusRefused || !strings.Contains(rep.Reason, "revision 3") || !strings.Contains(rep.Reason, "still used") {
		t.Fatalf("a revision made since the plan: %+v", rep)
	}
	if n := len(listRecords(t, h.Ref(""))); n != 3 {
		t.Fatalf("%d records left, want all 3", n)
	}

	h.Revision, h.Records = 3, append(h.Records, helmrelease.RecordName("web", 3))
	rt := retirer(t, j)
	real := rt.Client
	race := &racingRecords{RecordClient: real(finalize.Target{Ref: h.Ref("")}), race: func() {
		kubectl(t, nil, "-n", ns, "label", "secret", helmrelease.RecordName("web", 3), "status=superseded", "--overwrite")
	}}
	rt.Client = func(finalize.Target) finalize.RecordClient { return race }
	rep = rt.Retire(ctx, h)
	if rep.Status != finalize.StatusRefused || !strings.Contains(rep.Reason, "changed since it was read") || !strings.Contains(rep.Reason, helmrelease.RecordName("web", 3)) {
		t.Fatalf("a record changed under the delete: %+v", rep)
	}
	if n := len(listRecords(t, h.Ref(""))); n != 3 {
		t.Fatalf("%d records left, want all 3", n)
	}
	for _, r := range rep.Records {
		if r.Status != finalize.StatusKept {
			t.Errorf("%s: %s, want kept", r.Object, r.Status)
		}
	}
	entries, err := j.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if r := finalize.Retired(entries); len(r) != 0 {
		t.Fatalf("the refused delete is to restore: %+v", r[0].Target)
	}
	if _, err := cp.Clientset().CoreV1().Secrets(ns).Get(ctx, helmrelease.RecordName("web", 3), metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("the changed record was deleted")
	}
}
