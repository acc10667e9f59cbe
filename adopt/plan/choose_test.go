package plan

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// estate is what was applied by hand from a repo: each object's live body
// (the render it was applied from, in its namespace), in apply order.
type estate struct {
	objs   []discover.Object
	bodies map[string]map[string]any // by namespace/kind/name
}

// applyK adds what `kubectl apply -k dir -n ns` creates: dir's render, each
// object in ns unless the render names one; edit may change a body.
func (e *estate) applyK(t *testing.T, ix *gitindex.Index, dir, ns string, edit func(kind, name string, body map[string]any)) {
	t.Helper()
	ms, err := ix.Render(dir, gitindex.Directory{})
	if err != nil || len(ms) == 0 {
		t.Fatalf("render %s: %d objects, %v", dir, len(ms), err)
	}
	e.apply(t, ms, ns, edit)
}

// apply adds what `kubectl apply` of the manifests ms creates.
func (e *estate) apply(t *testing.T, ms []*gitindex.Manifest, ns string, edit func(kind, name string, body map[string]any)) {
	t.Helper()
	for _, m := range ms {
		b, _ := json.Marshal(m.Object)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		meta := body["metadata"].(map[string]any)
		if meta["namespace"] == nil {
			meta["namespace"] = ns
		}
		if edit != nil {
			edit(m.Kind, m.Name, body)
		}
		typ := discover.Type{Group: m.Group, Version: "v1", Kind: m.Kind, Resource: strings.ToLower(m.Kind) + "s", Namespaced: true}
		o := discover.Object{Type: typ, Namespace: meta["namespace"].(string), Name: m.Name,
			Managers: []discover.Manager{{Manager: "kubectl-client-side-apply", Operation: "Update"}}}
		e.objs = append(e.objs, o)
		e.bodies[o.Namespace+"/"+o.Type.Kind+"/"+o.Name] = body
	}
}

func (e *estate) plan(ix *gitindex.Index) *Plan { return e.planWith(ix, nil) }

func (e *estate) planWith(ix *gitindex.Index, cfg *config.Config) *Plan {
	bodies := func(objs []discover.Object, want func(*discover.Object) bool, fn func(*discover.Object, map[string]any, error)) {
		for i := range objs {
			if o := &objs[i]; want(o) {
				fn(o, e.bodies[o.Namespace+"/"+o.Type.Kind+"/"+o.Name], nil)
			}
		}
	}
	return Build(Inputs{Result: &discover.Result{Objects: e.objs}, Tracking: argoapp.TrackingFromConfig(nil, "argocd", ""),
		Cluster: Cluster{Server: "https://127.0.0.1:6443"}, Index: ix, Bodies: bodies, Config: cfg})
}

// loadRepo indexes a copy of a testdata repo (outside any Git work tree,
// so it is read as it is on disk), with files added.
func loadRepo(t *testing.T, src string, files map[string]string) *gitindex.Index {
	t.Helper()
	if src != "" {
		more, err := testenv.ReadFiles(src)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(files, more)
	}
	dst := t.TempDir()
	if err := testenv.WriteFiles(dst, files); err != nil {
		t.Fatal(err)
	}
	ix, err := gitindex.Load(context.Background(), gitindex.Source{Location: dst})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestChooseByContent: shop/base is applied on its own (kubectl apply -k
// shop/base -n shop-dev) and is the base of prod (with a Component) and
// staging (no name prefix: the issue 28 case); guestbook reads plain files
// in directories without a kustomization. Each object goes to the
// kustomization whose render equals live, a tie goes to the one nothing
// the rest of its namespace came from, a hand edit to the closest render,
// and the Git match says why. Nothing the repo holds is exported, and no Application points at a
// directory of a kustomization's inputs.
func TestChooseByContent(t *testing.T) {
	ix := loadRepo(t, "../gitindex/testdata/inputs", map[string]string{})
	e := &estate{bodies: map[string]map[string]any{}}
	e.applyK(t, ix, "shop/base", "shop-dev", nil)
	e.applyK(t, ix, "shop/overlays/prod", "", nil)
	e.applyK(t, ix, "shop/overlays/staging", "", func(kind, name string, body map[string]any) {
		if kind == "ConfigMap" {
			body["data"].(map[string]any)["greeting"] = "edited by hand"
		}
	})
	e.applyK(t, ix, "guestbook", "guestbook", nil)
	p := e.plan(ix)

	for _, c := range []struct {
		ns, kind, name, kust, reason string
		drift                        string
	}{
		{"shop-dev", "ConfigMap", "shop-cfg", "shop/base", "", ""},
		{"shop-dev", "Deployment", "shop", "shop/base", "", ""},
		{"shop-dev", "Service", "shop", "shop/base", "", ""},
		// The base renders it too, equal to live: the overlay is the one
		// the namespace's other objects (its Deployment, the Component's
		// ConfigMap) match alone.
		{"shop-prod", "ConfigMap", "shop-cfg", "shop/overlays/prod",
			"equals live; shop/base equals live, built on by shop/overlays/prod, shop/overlays/staging; chosen because other objects in shop-prod match it alone", ""},
		{"shop-prod", "Deployment", "shop", "shop/overlays/prod",
			"equals live; shop/base differs (spec.replicas), built on by shop/overlays/prod, shop/overlays/staging", ""},
		{"shop-prod", "Service", "shop", "shop/overlays/prod", "match it alone", ""},
		{"shop-prod", "ConfigMap", "shop-metrics", "shop/overlays/prod", "", ""},
		// The base's render is not equal (mode: base): never the base.
		{"shop-staging", "Deployment", "shop", "shop/overlays/staging", "match it alone", ""},
		{"shop-staging", "ConfigMap", "shop-cfg", "shop/overlays/staging",
			"closest to live (differs: data.greeting): none of the 2 manifests and renders that define it equals live; shop/base differs (data.greeting, data.mode), built on by shop/overlays/prod, shop/overlays/staging", "data.greeting"},
		{"guestbook", "Deployment", "lobby-ui", "guestbook", "", ""},
		{"guestbook", "Service", "lobby-ui", "guestbook", "", ""},
	} {
		o := p.objectNamed(c.ns, c.kind, c.name)
		if o == nil {
			t.Errorf("%s %s/%s not in the plan", c.kind, c.ns, c.name)
			continue
		}
		if o.Git == nil || o.Git.Kustomization != c.kust || o.Git.Path != c.kust+"/kustomization.yaml" || o.Git.Line != 0 || len(o.Ambiguous) > 0 {
			t.Errorf("%s %s/%s: matched %+v (ambiguous %+v), want the render of %s", c.kind, c.ns, c.name, o.Git, o.Ambiguous, c.kust)
			continue
		}
		if !strings.Contains(o.Git.Reason, c.reason) || c.reason == "" && o.Git.Reason != "" {
			t.Errorf("%s %s/%s: reason %q, want %q", c.kind, c.ns, c.name, o.Git.Reason, c.reason)
		}
		if o.Drift == nil || strings.Join(o.Drift.Fields, ",") != c.drift {
			t.Errorf("%s %s/%s: drift %+v, want %q", c.kind, c.ns, c.name, o.Drift, c.drift)
		}
		app := p.appOf(o)
		if app == nil || app.Source != "git" || app.SourcePath != c.kust || !app.Kustomize || len(app.Include) > 0 {
			t.Errorf("%s %s/%s: Application %+v, want a kustomize source at %s", c.kind, c.ns, c.name, app, c.kust)
		}
		for _, f := range o.Findings {
			if f.Code == CodeAmbiguous || f.Code == CodeNotInGit {
				t.Errorf("%s %s/%s: %s", c.kind, c.ns, c.name, f.Message)
			}
		}
	}
	for _, o := range p.Objects {
		if o.Git == nil || o.App == "" {
			t.Errorf("%s: Git %+v, Application %q", o.Ref.String(), o.Git, o.App)
		}
	}
	for _, a := range p.Applications {
		if a.Source == "export" || strings.HasPrefix(a.SourcePath, "guestbook/") {
			t.Errorf("Application %s: %s at %s", a.Name, a.Source, a.SourcePath)
		}
	}
	if p.Summary.NotInGit != 0 || p.Summary.Ambiguous != 0 || p.Summary.Objects != len(e.objs) {
		t.Errorf("summary %+v", p.Summary)
	}
}

// TestTieStaysAmbiguous: two kustomizations nothing builds on render the
// same object, both equal to live. adopt cannot tell which was applied:
// the object stays ambiguous, each candidate says how it compares, and it
// gets no Application, so nothing is exported.
func TestTieStaysAmbiguous(t *testing.T) {
	ix, e := twins(t)
	p := e.plan(ix)
	o := p.objectNamed("twins", "ConfigMap", "twin")
	if o == nil || o.Git != nil || len(o.Ambiguous) != 2 || o.App != "" {
		t.Fatalf("twin: %+v", o)
	}
	for i, want := range []string{"a", "b"} {
		if g := o.Ambiguous[i]; g.Kustomization != want || g.Reason != "equals live" {
			t.Errorf("candidate %d: %+v, want the render of %s, equal to live", i, g, want)
		}
	}
	var msg string
	for _, f := range o.Findings {
		if f.Code == CodeAmbiguous {
			msg = f.Message
		}
	}
	if !strings.Contains(msg, "the render of a, which equals live; the render of b, which equals live") || !strings.Contains(msg, "nothing is exported") {
		t.Errorf("finding %q", msg)
	}
	if len(p.Applications) != 0 {
		t.Errorf("Applications %+v, want none", p.Applications)
	}
}

// TestAdoptYAMLChoosesAmongTies (issue 35, ambiguity): the tie of
// TestTieStaysAmbiguous, with adopt.yaml's sources naming b for objects
// in twins: b is synced, the plan says which entry chose it, and b's
// Application is proposed. An entry for another namespace, or naming a
// path that is not among the object's definitions, chooses nothing.
func TestAdoptYAMLChoosesAmongTies(t *testing.T) {
	ix, e := twins(t)
	cfg, err := config.Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nsources:\n- {path: a, namespaces: [elsewhere]}\n- {path: c}\n- {path: b/, namespaces: [twins]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := e.planWith(ix, cfg)
	o := p.objectNamed("twins", "ConfigMap", "twin")
	if o == nil || o.Git == nil || o.Git.Kustomization != "b" || len(o.Ambiguous) != 0 || !strings.Contains(o.Git.Reason, "chosen in adopt.yaml (sources[2])") {
		t.Fatalf("twin: %+v (git %+v)", o, o.Git)
	}
	if a := p.appOf(o); a == nil || a.SourcePath != "b" || !a.Kustomize {
		t.Errorf("twin's Application: %+v, want one at the kustomization b", a)
	}
	if _, err := config.Parse([]byte("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nsources:\n- {path: ../up}\n")); err == nil || !strings.Contains(err.Error(), "sources[0]") {
		t.Errorf("a path outside the repo: %v", err)
	}
}

// twins is a repo where the kustomizations a and b render the same
// ConfigMap, applied from a into namespace twins.
func twins(t *testing.T) (*gitindex.Index, *estate) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: twin}\ndata: {k: v}\n"
	ix := loadRepo(t, "", map[string]string{
		"a/kustomization.yaml": "resources: [cm.yaml]\n", "a/cm.yaml": cm,
		"b/kustomization.yaml": "resources: [cm.yaml]\n", "b/cm.yaml": cm,
	})
	e := &estate{bodies: map[string]map[string]any{}}
	e.applyK(t, ix, "a", "twins", nil)
	return ix, e
}

func (p *Plan) objectNamed(ns, kind, name string) *Object {
	for i := range p.Objects {
		if o := &p.Objects[i]; o.Namespace == ns && o.Kind == kind && o.Name == name {
			return o
		}
	}
	return nil
}

func (p *Plan) appOf(o *Object) *Application {
	for i := range p.Applications {
		if p.Applications[i].Name == o.App {
			return &p.Applications[i]
		}
	}
	return nil
}

// TestTiesFollowTheNamespace: web/dev builds on web/base and changes only
// web-flags; web/only moves the base to namespace only. Applied with
// kubectl apply -k web/base -n team-a, web-cfg (which dev renders alike)
// goes with web-flags, which only the base renders alike: to the base, not
// to the overlay nothing builds on. Applied from web/dev, both go to
// web/dev. Applied from web/only, where nothing decides by content, the
// kustomization nothing builds on takes web-flags, and web-cfg follows it.
func TestTiesFollowTheNamespace(t *testing.T) {
	ix := loadRepo(t, "", map[string]string{
		"web/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"web/base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-cfg}\ndata: {mode: base}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-flags}\ndata: {debug: \"false\"}\n",
		"web/dev/kustomization.yaml":  "resources: [../base]\npatches: [{path: flags.yaml}]\n",
		"web/dev/flags.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-flags}\ndata: {debug: \"true\"}\n",
		"web/only/kustomization.yaml": "namespace: only\nresources: [../base]\n",
	})
	e := &estate{bodies: map[string]map[string]any{}}
	e.applyK(t, ix, "web/base", "team-a", nil)
	e.applyK(t, ix, "web/dev", "team-b", nil)
	e.applyK(t, ix, "web/only", "", nil)
	p := e.plan(ix)
	for _, c := range []struct{ ns, name, kust, reason string }{
		{"team-a", "web-flags", "web/base", "equals live; web/dev differs (data.debug)"},
		{"team-a", "web-cfg", "web/base", "chosen because other objects in team-a match it alone"},
		{"team-b", "web-flags", "web/dev", "equals live; web/base differs (data.debug), built on by web/dev, web/only"},
		{"team-b", "web-cfg", "web/dev", "chosen because other objects in team-b match it alone"},
		{"only", "web-flags", "web/only", "chosen as the only one of them that no other kustomization builds on"},
		{"only", "web-cfg", "web/only", "chosen because other objects in only match it alone"},
	} {
		o := p.objectNamed(c.ns, "ConfigMap", c.name)
		if o == nil || o.Git == nil || o.Git.Kustomization != c.kust || !strings.Contains(o.Git.Reason, c.reason) || o.Drift == nil || !o.Drift.Identical() {
			t.Errorf("%s/%s: %+v (ambiguous %+v), want %s: %q", c.ns, c.name, o.Git, o.Ambiguous, c.kust, c.reason)
		}
	}
}

// TestInputsDirectoryInclude: app/base holds a file app/kustomization.yaml
// reads and one it does not (extra.yaml, applied by hand with kubectl
// apply -f). extra's Application points at app/base with
// directory.include, so it never syncs the kustomization's input too.
func TestInputsDirectoryInclude(t *testing.T) {
	ix := loadRepo(t, "", map[string]string{
		"app/kustomization.yaml": "resources: [base/cm.yaml]\n",
		"app/base/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-cfg}\ndata: {k: v}\n",
		"app/base/extra.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {k: v}\n",
	})
	e := &estate{bodies: map[string]map[string]any{}}
	e.applyK(t, ix, "app", "team", nil)
	e.apply(t, ix.FilesIn("app/base")["app/base/extra.yaml"], "team", nil)
	p := e.plan(ix)
	cfg, extra := p.objectNamed("team", "ConfigMap", "app-cfg"), p.objectNamed("team", "ConfigMap", "extra")
	if cfg == nil || cfg.Git == nil || cfg.Git.Kustomization != "app" || len(cfg.Ambiguous) > 0 {
		t.Fatalf("app-cfg: %+v", cfg)
	}
	if extra == nil || extra.Git == nil || extra.Git.Path != "app/base/extra.yaml" {
		t.Fatalf("extra: %+v", extra)
	}
	if a := p.appOf(extra); a == nil || a.SourcePath != "app/base" || a.Kustomize || strings.Join(a.Include, ",") != "extra.yaml" {
		t.Fatalf("extra's Application %+v, want app/base with include extra.yaml", a)
	}
}
