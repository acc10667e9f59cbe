package plan

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/gitindex"
)

// TestOneDirectoryManyNamespaces: manifests without a namespace, applied
// by hand from one directory into several namespaces (kubectl apply -n a
// -f guestbook; kubectl apply -n b -f guestbook; the same with -k), are
// one Application per namespace, each with that destination namespace.
// One Application over both would have no destination for them. A
// directory whose manifests name their own namespaces stays one
// Application, and one that mixes both goes to its namespace-less
// objects' namespace.
func TestOneDirectoryManyNamespaces(t *testing.T) {
	cm := func(name, ns string) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s + "data: {a: b}\n"
	}
	ix := loadRepo(t, "", map[string]string{
		"guestbook/ui.yaml":       cm("guestbook-ui", ""),
		"guestbook/svc.yaml":      cm("guestbook-svc", ""),
		"kust/kustomization.yaml": "resources: [one.yaml]\n",
		"kust/one.yaml":           cm("kust-one", ""),
		"fixed/a.yaml":            cm("fixed-a", "team-a"),
		"fixed/b.yaml":            cm("fixed-b", "team-b"),
		"mixed/free.yaml":         cm("mixed-free", ""),
		"mixed/pinned.yaml":       cm("mixed-pinned", "pinned"),
	})
	e := &estate{bodies: map[string]map[string]any{}}
	for _, ns := range []string{"dev", "staging"} {
		ms, err := ix.Render("guestbook", gitindex.Directory{})
		if err != nil {
			t.Fatal(err)
		}
		e.apply(t, ms, ns, nil)
		e.applyK(t, ix, "kust", ns, nil)
	}
	for _, d := range []string{"fixed", "mixed"} {
		ms, err := ix.Render(d, gitindex.Directory{})
		if err != nil {
			t.Fatal(err)
		}
		e.apply(t, ms, "tools", nil)
	}
	p := e.plan(ix)

	var got []string
	for _, a := range p.Applications {
		got = append(got, fmt.Sprintf("%s %s %q: %s", a.Source, a.SourcePath, a.Namespace, strings.Join(a.Objects, ",")))
	}
	sort.Strings(got)
	want := []string{
		`git fixed "": ConfigMap team-a/fixed-a,ConfigMap team-b/fixed-b`,
		`git guestbook "dev": ConfigMap dev/guestbook-svc,ConfigMap dev/guestbook-ui`,
		`git guestbook "staging": ConfigMap staging/guestbook-svc,ConfigMap staging/guestbook-ui`,
		`git kust "dev": ConfigMap dev/kust-one`,
		`git kust "staging": ConfigMap staging/kust-one`,
		`git mixed "tools": ConfigMap pinned/mixed-pinned,ConfigMap tools/mixed-free`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Applications:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	names := map[string]bool{}
	for _, a := range p.Applications {
		if names[a.Name] {
			t.Errorf("two Applications named %s", a.Name)
		}
		names[a.Name] = true
	}
}
