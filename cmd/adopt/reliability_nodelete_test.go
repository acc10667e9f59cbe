package main

// Nothing deleted (issue 8): a full plan -> apply -> Argo CD-style sync ->
// finalize run on the real control plane, with every request adopt sends
// counted by a proxy in front of the API server, watches on the adopted
// types and on Applications, and every object of the namespaces listed
// before and after by UID. A static check keeps delete calls out of the
// product code.

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// uids lists every object of every listable namespaced type in the
// namespaces, by "resource ns/name".
func uids(t *testing.T, namespaces ...string) map[string]string {
	t.Helper()
	lists, err := cp.Clientset().Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	cfg := cp.RESTConfig()
	cfg.WarningHandler = rest.NoWarnings{} // listing v1 Endpoints warns
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !hasVerb(r.Verbs, "list") {
				continue
			}
			for _, ns := range namespaces {
				items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatalf("list %s in %s: %v", r.Name, ns, err)
				}
				for _, it := range items.Items {
					out[r.Name+"."+gv.Group+" "+ns+"/"+it.GetName()] = string(it.GetUID())
				}
			}
		}
	}
	return out
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// watchUntil records the events of one type in ns from now until it sees
// the object named sentinel added; the caller creates it after the run, so
// every event of the run comes before it.
type recorder struct {
	events []string
	done   chan struct{}
}

func watchUntil(t *testing.T, ctx context.Context, gvr schema.GroupVersionResource, ns, sentinel string) *recorder {
	t.Helper()
	c := dynClient(t).Resource(gvr).Namespace(ns)
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				rec.events = append(rec.events, string(ev.Type)+" (not an object)")
				continue
			}
			rec.events = append(rec.events, string(ev.Type)+" "+gvr.Resource+" "+u.GetName())
			if ev.Type == watch.Added && u.GetName() == sentinel {
				return
			}
		}
		rec.events = append(rec.events, "watch ended before the sentinel")
	}()
	return rec
}

func TestNothingIsDeletedThroughAFullRun(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound on hanging, not an assertion
	defer cancel()
	ns := cp.Namespace(t)
	// Hand-applied the runbook way: client-side, then server-side.
	hand := `apiVersion: v1
kind: ConfigMap
metadata: {name: hook}
data: {usage_hook.py: "print('v1')\n"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`
	kc(t, []byte(hand), "-n", ns, "apply", "-f", "-")
	kc(t, []byte(hand), "-n", ns, "apply", "--server-side", "-f", "-")

	proxy := startStallProxy(t, cp.Server, true, "", "", 0, false) // stallAt 0: only counts
	kcfg := filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := testenv.WriteKubeconfig(kcfg, proxy.URL, testenv.AdminUser, cp.AdminToken); err != nil {
		t.Fatal(err)
	}
	via := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := adopt(t, append([]string{"--kubeconfig", kcfg}, args...)...)
		return out + errOut, code
	}

	before := uids(t, ns, argoNS)
	const sentinel = "zz-sentinel"
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	depGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	watches := []*recorder{
		watchUntil(t, ctx, cmGVR, ns, sentinel),
		watchUntil(t, ctx, depGVR, ns, sentinel),
		watchUntil(t, ctx, argoapp.ApplicationGVR, argoNS, sentinel+"-"+ns),
	}

	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if out, code := via("plan", "-n", ns, "-q", "--out", planFile); code != ExitOK {
		t.Fatalf("plan: exit %d: %s", code, out)
	}
	p := readPlan(t, planFile)
	if len(p.Applications) != 1 || len(p.Objects) != 2 {
		t.Fatalf("plan: %d Applications, %d objects; want 1 and 2", len(p.Applications), len(p.Objects))
	}
	app := p.Applications[0].Name
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	url, err := g.CreateRepo("gitops", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := via("apply", "--plan", planFile, "--repo", url, "--author", "T <t@example.invalid>", "-q"); code != ExitOK {
		t.Fatalf("apply: exit %d: %s", code, out)
	}

	// Argo CD's first sync: server-side apply of the exported manifests from
	// the branch, as argocd-controller, with the tracking id.
	tip := tipOf(t, g.BarePath("gitops"), "adopt/"+apply.AdoptionID(p))
	for _, ob := range p.Objects {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(fileText(t, tip, p.Applications[0].SourcePath+"/"+export.FileName(ob.Group, ob.Kind, ob.Name))), &m); err != nil {
			t.Fatal(err)
		}
		m["metadata"].(map[string]any)["namespace"] = ns
		argoApply(t, m, app+":"+ob.Group+"/"+ob.Kind+":"+ns+"/"+ob.Name)
	}
	putApplication(t, app, ns, syncedStatus("Healthy"))

	if out, code := via("finalize", "--plan", planFile, "--poll-interval", "100ms", "-q"); code != ExitOK || !strings.Contains(out, "finalized") {
		t.Fatalf("finalize: exit %d: %s", code, out)
	}

	// Every request adopt sent: no DELETE, and no write but finalize's
	// patches of the two objects and its access reviews.
	if d := proxy.Forwarded("DELETE"); len(d) != 0 {
		t.Errorf("adopt sent DELETE requests: %v", d)
	}
	patched := proxy.Forwarded("PATCH")
	if len(patched) != 2 || patched["/api/v1/namespaces/"+ns+"/configmaps/hook"] == 0 || patched["/apis/apps/v1/namespaces/"+ns+"/deployments/web"] == 0 {
		t.Errorf("PATCH requests %v, want one path per adopted object", patched)
	}
	for _, m := range []string{"PUT", "POST"} {
		for path := range proxy.Forwarded(m) {
			if !strings.HasSuffix(path, "/selfsubjectaccessreviews") {
				t.Errorf("adopt sent %s %s", m, path)
			}
		}
	}

	// Sentinels close the watches: each stream delivered the whole run.
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+sentinel+"}\n---\n"+
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: "+sentinel+"}\nspec:\n  selector: {matchLabels: {app: s}}\n  template:\n    metadata: {labels: {app: s}}\n    spec: {containers: [{name: s, image: s}]}\n"), "-n", ns, "create", "-f", "-")
	putApplication(t, sentinel+"-"+ns, ns, nil)
	var all []string
	for _, w := range watches {
		select {
		case <-w.done:
		case <-ctx.Done():
			t.Fatal("a watch never saw its sentinel")
		}
		all = append(all, w.events...)
	}
	// In argocd, only this test's Applications (named from ns) are its to
	// watch: the parallel tests' are deleted when they end.
	theirs := func(kind, name string) bool { return kind == "applications" && !strings.Contains(name, ns) }
	for _, e := range all {
		if f := strings.Fields(e); len(f) == 3 && theirs(f[1], f[2]) {
			continue
		}
		if strings.HasPrefix(e, string(watch.Deleted)) || strings.HasPrefix(e, string(watch.Error)) || strings.HasPrefix(e, "watch ended") {
			t.Errorf("watch: %s", e)
		}
	}
	for _, want := range []string{"MODIFIED configmaps hook", "MODIFIED deployments web", "ADDED applications " + app} {
		if !slices.Contains(all, want) {
			t.Errorf("the watches did not see %q: %v", want, all)
		}
	}

	after := uids(t, ns, argoNS)
	for ref, uid := range before {
		if name, ok := strings.CutPrefix(ref, "applications.argoproj.io "+argoNS+"/"); ok && theirs("applications", name) {
			continue
		}
		if after[ref] != uid {
			t.Errorf("%s was deleted (uid %s before, %q after)", ref, uid, after[ref])
		}
	}
}

// TestNoDeleteInProductCode fails on any call of a method named Delete or
// DeleteCollection, and any DELETE HTTP verb, in the non-test Go code
// outside internal/testenv (which tears down what tests set up), but two
// files: the guarded delete of a Helm release record in
// adopt/finalize/retire.go, reached only with finalize
// --retire-helm-records, and adopt/esoform/push.go, which deletes only the
// objects its own push created (the probe ExternalSecret and its Secret,
// the PushSecret with deletionPolicy None, the labelled copy), each found
// by its owner or label and deleted with a uid precondition.
func TestNoDeleteInProductCode(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	const retire, push = "adopt/finalize/retire.go", "adopt/esoform/push.go"
	retireDeletes, pushDeletes := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/testenv" || rel == "testdata" || strings.HasSuffix(rel, "/testdata") || (rel != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Delete" || sel.Sel.Name == "DeleteCollection") {
					if rel == retire && sel.Sel.Name == "Delete" {
						retireDeletes++
						break
					}
					if rel == push && sel.Sel.Name == "Delete" {
						pushDeletes++
						break
					}
					t.Errorf("%s: a %s call; adopt never deletes (but a Helm record, in %s)", fset.Position(x.Pos()), sel.Sel.Name, retire)
				}
			case *ast.SelectorExpr:
				if x.Sel.Name == "MethodDelete" {
					t.Errorf("%s: http.MethodDelete; adopt never deletes", fset.Position(x.Pos()))
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING && (x.Value == `"DELETE"` || x.Value == "`DELETE`") {
					t.Errorf("%s: the DELETE verb; adopt never deletes", fset.Position(x.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("scanned only %d Go files under %s: the walk is broken", files, root)
	}
	if retireDeletes != 1 {
		t.Errorf("%s makes %d Delete calls, want exactly 1 (the guarded delete of one Helm record)", retire, retireDeletes)
	}
	if pushDeletes != 3 {
		t.Errorf("%s makes %d Delete calls, want exactly 3 (its own probe's Secret, its own copy, and deleteObject for its probe ExternalSecret and PushSecret)", push, pushDeletes)
	}
}
