package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// retireCanary is the password a Helm release holds in its values: the
// journal must hold it (inside the record, to put it back), nothing adopt
// prints may.
const retireCanary = "retire-CANARY-9c8d7e6f"

// adoptedRelease is a Helm release installed and upgraded by the real helm
// CLI (two revisions, the values holding retireCanary), planned by adopt
// plan, and synced the way Argo CD's first sync does (server-side apply
// by argocd-controller with the tracking id; the Application's status as
// its controller writes it).
type adoptedRelease struct {
	h        *testenv.Helm
	ns       string
	planFile string
	app      *plan.Application
	records  objref.Ref // the storage resource, Name empty
	scan     *leakScan
	// kubeconfig is the one the plan was made through, and finalize runs
	// with.
	kubeconfig string
}

// adoptRelease makes an adoptedRelease in a new namespace, with Helm's
// storage driver (HELM_DRIVER: "secret" or "configmap"), its plan made
// through kubeconfig (cp's, or a proxy's in front of it).
func adoptRelease(ctx context.Context, t *testing.T, driver string, kubeconfig func(*adoptedRelease) string) *adoptedRelease {
	t.Helper()
	r := &adoptedRelease{ns: cp.Namespace(t), scan: &leakScan{texts: map[string]string{}, secrets: map[string]string{"the release's password": retireCanary}}}
	h, repo := servedChart(ctx, t, cp, "web")
	r.h = h
	t.Setenv("HELM_DRIVER", driver)
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	helmRun(ctx, t, h, "repo", "add", "stable", repo.URL)
	helmRun(ctx, t, h, "upgrade", "--install", "web", "stable/web", "--version", "1.2.3", "-n", r.ns, "--set", "auth.password="+retireCanary)
	helmRun(ctx, t, h, "upgrade", "--install", "web", "stable/web", "--version", "1.2.3", "-n", r.ns, "--reuse-values", "--set", "greeting=two")

	r.planFile = filepath.Join(t.TempDir(), "plan.yaml")
	r.kubeconfig = kubeconfig(r)
	out, errOut, code := r.run(t, r.kubeconfig, "plan", "-n", r.ns, "--argocd-version", "v3.2.6", "--out", r.planFile, "-q")
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("plan: exit %d: %s%s", code, out, errOut)
	}
	p := readPlan(t, r.planFile)
	for i := range p.Applications {
		if a := &p.Applications[i]; a.Helm != nil && a.Helm.ReleaseName == "web" {
			r.app = a
		}
	}
	if r.app == nil {
		t.Fatalf("no Application for Helm release web: %+v; findings %+v", p.Applications, p.Findings)
	}
	want := map[string]string{"secret": helmrelease.StorageSecret, "configmap": helmrelease.StorageConfigMap}[driver]
	if hs := r.app.Helm; hs.Revision != 2 || len(hs.Records) != 2 || hs.Storage != want {
		t.Fatalf("the plan's release: revision %d, records %v, storage %s; want 2, 2 records, %s", hs.Revision, hs.Records, hs.Storage, want)
	}
	r.records = finalize.HelmReleases(finalize.Selection{Apps: []plan.Application{*r.app}})[0].Ref("")

	// Argo CD's first sync: argocd-controller applies each object it syncs
	// (the Secret is left out of Git and of sync), with the tracking id.
	for _, ref := range r.app.Objects {
		ob := p.Object(ref)
		if ob.IsSecret() {
			continue
		}
		m := map[string]any{"apiVersion": objref.Ref{Group: ob.Group, Version: ob.Version}.GVR().GroupVersion().String(), "kind": ob.Kind,
			"metadata": map[string]any{"name": ob.Name, "namespace": ob.Namespace}}
		argoApply(t, m, r.app.Name+":"+ob.Group+"/"+ob.Kind+":"+ob.Namespace+"/"+ob.Name)
	}
	putApplication(t, r.app.Name, r.ns, syncedStatus("Healthy"))
	return r
}

// run runs adopt with kubeconfig and adds what it printed to the leak scan.
func (r *adoptedRelease) run(t *testing.T, kubeconfig string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runAdopt(t, "adopt", append([]string{"--kubeconfig", kubeconfig}, args...), strings.NewReader(""), &out, &errb)
	r.scan.add(strings.Join(args, " ")+": stdout", out.String())
	r.scan.add(strings.Join(args, " ")+": stderr", errb.String())
	return out.String(), errb.String(), code
}

func (r *adoptedRelease) finalize(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return r.run(t, r.kubeconfig, append([]string{"finalize", "--plan", r.planFile, "--poll-interval", "100ms", "--settle", "100ms"}, args...)...)
}

// list returns the release's records by name.
func (r *adoptedRelease) list(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	l, err := dynClient(t).Resource(r.records.GVR()).Namespace(r.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		out[l.Items[i].GetName()] = &l.Items[i]
	}
	return out
}

// helmView is what helm says of the release: list, values and manifest.
func (r *adoptedRelease) helmView(ctx context.Context, t *testing.T) [3]string {
	t.Helper()
	list := helmRun(ctx, t, r.h, "list", "-n", r.ns, "-q")
	values, err := r.h.Run(ctx, "get", "values", "web", "-n", r.ns, "-o", "json")
	if err != nil {
		return [3]string{list, "", ""}
	}
	manifest := helmRun(ctx, t, r.h, "get", "manifest", "web", "-n", r.ns)
	return [3]string{list, values, manifest}
}

func recordContent(u *unstructured.Unstructured) map[string]any {
	return map[string]any{"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "type": u.Object["type"], "data": u.Object["data"], "binaryData": u.Object["binaryData"]}
}

// TestFinalizeRetireHelmRecords, for Helm's Secret and ConfigMap storage,
// with the real helm CLI on the real API server: finalize without the
// flag deletes nothing; with --retire-helm-records, once the Application
// is Synced and Healthy and the objects are finalized, both revisions'
// records are deleted, each journaled whole (mode 0600); `helm list` no
// longer shows the release and `helm uninstall` finds nothing, the objects
// unchanged; a re-run is a no-op that says so; --undo creates the records
// again with the same labels, type and data, and `helm list`, `helm get
// values` and `helm get manifest` say what they said before; the password
// in the release's values is in the journal and in nothing adopt printed.
func TestFinalizeRetireHelmRecords(t *testing.T) {
	for _, driver := range []string{"secret", "configmap"} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			r := adoptRelease(ctx, t, driver, func(*adoptedRelease) string { return cp.Kubeconfig })
			before := r.list(t)
			if len(before) != 2 {
				t.Fatalf("%d records after install and upgrade, want 2", len(before))
			}
			view := r.helmView(ctx, t)
			if !strings.Contains(view[0], "web") || !strings.Contains(view[1], retireCanary) {
				t.Fatalf("helm before: list %q; values hold the password: %v", view[0], strings.Contains(view[1], retireCanary))
			}
			uids := map[string]types.UID{}
			for _, ref := range r.app.Objects {
				uids[ref] = objectUID(t, readPlan(t, r.planFile).Object(ref).Ref)
			}

			// Without the flag: finalized, nothing deleted, the flag named.
			out, errOut, code := r.finalize(t)
			if code != ExitOK || !strings.Contains(out, "--retire-helm-records") {
				t.Fatalf("finalize: exit %d\n%s%s", code, out, errOut)
			}
			if n := len(r.list(t)); n != 2 {
				t.Fatalf("finalize without --retire-helm-records left %d of 2 records", n)
			}

			out, errOut, code = r.finalize(t, "--retire-helm-records", "--dry-run")
			if code != ExitOK || !strings.Contains(out, "would-retire") || len(r.list(t)) != 2 {
				t.Fatalf("dry run: exit %d, %d records left\n%s%s", code, len(r.list(t)), out, errOut)
			}

			out, errOut, code = r.finalize(t, "--retire-helm-records")
			t.Logf("finalize --retire-helm-records:\n%s%s", out, errOut)
			if code != ExitOK || strings.Count(out, "retired") < 3 || !strings.Contains(out, "2 Helm records retired") {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if left := r.list(t); len(left) != 0 {
				t.Fatalf("records left: %v", left)
			}
			if list := helmRun(ctx, t, r.h, "list", "-n", r.ns, "-q"); strings.TrimSpace(list) != "" {
				t.Fatalf("helm list still shows %q", list)
			}
			if out, err := r.h.Run(ctx, "uninstall", "web", "-n", r.ns); err == nil || !strings.Contains(out, "not found") {
				t.Fatalf("helm uninstall after retiring: %v: %s", err, out)
			}
			for ref, uid := range uids {
				if got := objectUID(t, readPlan(t, r.planFile).Object(ref).Ref); got != uid {
					t.Fatalf("%s: UID %s, was %s: helm uninstall touched it", ref, got, uid)
				}
			}
			journal := r.planFile + ".journal"
			fi, err := os.Stat(journal)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("journal mode %v (%v), want 0600", fi.Mode().Perm(), err)
			}
			entries, err := finalize.ReadJournal(journal)
			if err != nil {
				t.Fatal(err)
			}
			held := finalize.Retired(entries)
			if len(held) != 2 {
				t.Fatalf("journal: %d retired records, want 2", len(held))
			}
			for _, rel := range journalRelease(t, journal) {
				if !strings.Contains(rel, retireCanary) {
					t.Fatal("a retired record in the journal does not hold the release's values")
				}
			}
			for _, e := range held {
				var u unstructured.Unstructured
				if err := u.UnmarshalJSON(e.Record); err != nil || !reflect.DeepEqual(recordContent(&u), recordContent(before[e.Target.Name])) {
					t.Fatalf("the journal does not hold %s whole (%v)", e.Target.Name, err)
				}
			}

			// Re-running is a no-op that says so.
			out, errOut, code = r.finalize(t, "--retire-helm-records")
			if code != ExitOK || !strings.Contains(out, "already-retired") || !strings.Contains(out, "nothing to do") {
				t.Fatalf("second run: exit %d\n%s%s", code, out, errOut)
			}

			out, errOut, code = r.finalize(t, "--undo")
			t.Logf("finalize --undo:\n%s%s", out, errOut)
			if code != ExitOK || !strings.Contains(out, "2 records restored") {
				t.Fatalf("undo: exit %d\n%s%s", code, out, errOut)
			}
			after := r.list(t)
			for n, b := range before {
				a, ok := after[n]
				if !ok || !reflect.DeepEqual(recordContent(a), recordContent(b)) {
					t.Fatalf("%s: restored %v, not as it was", n, ok)
				}
			}
			if got := r.helmView(ctx, t); got != view {
				t.Fatalf("helm after undo differs from before:\n%q\nwant\n%q", got, view)
			}
			out, errOut, code = r.finalize(t, "--undo")
			if code != ExitOK || strings.Contains(out, "restored") {
				t.Fatalf("second undo: exit %d\n%s%s", code, out, errOut)
			}

			r.scan.check(t)
			if b, _ := os.ReadFile(journal); !strings.Contains(string(b), `"record":`) {
				t.Fatal("the journal holds no record")
			}
		})
	}
}

// journalRelease is the release a journal's retired records hold, as Helm
// decodes it (base64 of the gzip of its JSON; a Secret's data in base64 once
// more), one per record: the journal must hold it whole for --undo.
func journalRelease(t *testing.T, journal string) []string {
	t.Helper()
	entries, err := finalize.ReadJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range finalize.Retired(entries) {
		var rec struct {
			Kind string
			Data map[string]string
		}
		if err := json.Unmarshal(e.Record, &rec); err != nil {
			t.Fatal(err)
		}
		enc := rec.Data["release"]
		if rec.Kind == "Secret" {
			b, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				t.Fatal(err)
			}
			enc = string(b)
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		rel, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(rel))
	}
	return out
}

func objectUID(t *testing.T, ref objref.Ref) types.UID {
	t.Helper()
	u, err := dynClient(t).Resource(ref.GVR()).Namespace(ref.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u.GetUID()
}

// TestFinalizeRetireRefusedWhileHelmUpgrades: the delete of the newest
// record is held in a proxy in front of the real API server while the real
// helm CLI upgrades the release (a third revision; the second's record
// rewritten as superseded). The delete's UID and resourceVersion
// precondition refuses it: every record stays, the release is refused and
// named, exit 4, and --undo has nothing to put back.
func TestFinalizeRetireRefusedWhileHelmUpgrades(t *testing.T) {
	ctx := context.Background()
	var fp *testenv.FaultProxy
	r := adoptRelease(ctx, t, "secret", func(r *adoptedRelease) string {
		var err error
		fp, err = testenv.StartFaultProxy(cp, t.TempDir(), testenv.Fault{Kind: testenv.Hold, Path: "/namespaces/" + r.ns + "/secrets/" + helmrelease.RecordName("web", 2), Times: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fp.Close)
		return fp.Kubeconfig
	})
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", []string{"--kubeconfig", fp.Kubeconfig, "finalize", "--plan", r.planFile, "--poll-interval", "100ms", "--settle", "0", "--retire-helm-records"}, strings.NewReader(""), &out, &errb)
		done <- result{out.String(), errb.String(), code}
	}()
	select {
	case <-fp.Holding():
	case res := <-done:
		t.Fatalf("finalize ended before its delete was held: exit %d\n%s%s", res.code, res.out, res.errOut)
	}
	helmRun(ctx, t, r.h, "upgrade", "web", "stable/web", "--version", "1.2.3", "-n", r.ns, "--reuse-values", "--set", "greeting=three")
	fp.Release()
	res := <-done
	t.Logf("finalize --retire-helm-records during helm upgrade: exit %d\n%s%s", res.code, res.out, res.errOut)
	r.scan.add("finalize: stdout", res.out)
	r.scan.add("finalize: stderr", res.errOut)
	if res.code != ExitPartial || !strings.Contains(res.out, "changed since it was read") || !strings.Contains(res.out, "refused") ||
		!strings.Contains(res.errOut, "Helm release "+r.ns+"/web") {
		t.Fatalf("exit %d, want %d with the refusal", res.code, ExitPartial)
	}
	if n := len(r.list(t)); n != 3 {
		t.Fatalf("%d records left, want all 3", n)
	}
	if list := helmRun(ctx, t, r.h, "history", "web", "-n", r.ns); !strings.Contains(list, "deployed") || strings.Count(list, "\n") != 4 {
		t.Fatalf("helm history after the refusal:\n%s", list)
	}
	out, errOut, code := r.finalize(t, "--undo")
	if code != ExitOK || strings.Contains(out, "restored") {
		t.Fatalf("undo after a refusal: exit %d\n%s%s", code, out, errOut)
	}
	r.scan.check(t)
}

// TestFinalizeRetireWithoutHelmAndWithoutRights: a plan with no Helm
// release and the flag deletes nothing and says so; a user who may not
// delete the release's records is refused before any change, the missing
// verb and resource named.
func TestFinalizeRetireWithoutHelmAndWithoutRights(t *testing.T) {
	_, planFile := syncedConfigMap(t)
	out, errOut, code := adopt(t, "finalize", "--plan", planFile, "--poll-interval", "100ms", "--settle", "0", "--retire-helm-records", "-o", "json")
	var rep finalize.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if !strings.Contains(rep.RetireNote, "no selected Application") || !strings.Contains(rep.RetireNote, "nothing was deleted") || len(rep.Releases) != 0 || rep.Total.Finalized != 1 {
		t.Fatalf("report: note %q, releases %+v, total %+v", rep.RetireNote, rep.Releases, rep.Total)
	}

	ctx := context.Background()
	r := adoptRelease(ctx, t, "secret", func(*adoptedRelease) string { return cp.Kubeconfig })
	_, errOut, code = adopt(t, "--kubeconfig", cp.ViewerKubeconfig, "finalize", "--plan", r.planFile, "--retire-helm-records")
	if code != ExitError || !strings.Contains(errOut, "missing permissions, nothing was changed") || !strings.Contains(errOut, "delete secrets in "+r.ns) {
		t.Fatalf("as viewer: exit %d: %s", code, errOut)
	}
	if n := len(r.list(t)); n != 2 {
		t.Fatalf("%d records left, want 2", n)
	}
}

// TestFinalizeRetireOnlyWhenHealthy: an adopted release whose Application
// is Synced but Progressing keeps its records: not ready, its objects are
// left and the release skipped; with --allow-health Progressing the
// objects are finalized, but the records still stay, since retiring asks
// for Healthy. Both exit 4 and say why the release was skipped.
func TestFinalizeRetireOnlyWhenHealthy(t *testing.T) {
	ctx := context.Background()
	r := adoptRelease(ctx, t, "secret", func(*adoptedRelease) string { return cp.Kubeconfig })
	putApplication(t, r.app.Name, r.ns, syncedStatus("Progressing"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "300ms"}, "Application " + r.app.Name + " is not ready"},
		{[]string{"--allow-health", "Progressing"}, "Application " + r.app.Name + " is not Synced and Healthy now (health Progressing)"},
	} {
		out, errOut, code := r.finalize(t, append(tc.args, "--retire-helm-records")...)
		if code != ExitPartial || !strings.Contains(out, "Helm release "+r.ns+"/web: skipped: "+tc.want) || strings.Contains(out, "HELM RECORD") {
			t.Fatalf("%v: exit %d\n%s%s", tc.args, code, out, errOut)
		}
		if n := len(r.list(t)); n != 2 {
			t.Fatalf("%v: %d records left, want 2", tc.args, n)
		}
	}
	r.scan.check(t)
}
