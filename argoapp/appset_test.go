package argoapp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

const appSetRepo = "https://git.example.invalid/org/gitops.git"

// appSetTree builds a real Git repository in a temp dir (v1 tagged, then
// main moves on) and returns an argoapp.TreeAt over it, for the repo appSetRepo.
func appSetTree(t *testing.T) argoapp.TreeAt {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if _, err := testenv.Git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: one\n"
	files := map[string]string{
		"apps/web/cm.yaml":             cm,
		"apps/Api_Server/cm.yaml":      cm,
		"apps/skip/cm.yaml":            cm,
		"apps/web/nested/README.md":    "not a manifest\n",
		".github/workflows/ci.yaml":    "on: push\n",
		"clusters/prod/config.json":    `{"cluster": {"name": "prod", "ns": "prod-ns"}, "tags": ["a", "b"]}`,
		"clusters/stage/config.json":   `{"cluster": {"name": "stage", "ns": "stage-ns"}}`,
		"clusters/deep/x/config.json":  `{"cluster": {"name": "deep", "ns": "deep-ns"}}`,
		"teams/list.yaml":              "- team: red\n- team: blue\n",
		"README.md":                    "# gitops\n",
		"apps/web/nested/deeper/a.txt": "x\n",
	}
	if err := testenv.WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "one")
	git("tag", "v1")
	if err := os.MkdirAll(filepath.Join(dir, "apps/later"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "apps/later/cm.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "two")
	ix, err := gitindex.Load(context.Background(), gitindex.Source{Location: dir})
	if err != nil {
		t.Fatal(err)
	}
	return func(url, rev string) (argoapp.Tree, error) {
		if !argoapp.SameRepo(url, appSetRepo) {
			return nil, fmt.Errorf("it reads %s, not the plan's repo", url)
		}
		return ix.AtRevision(context.Background(), rev)
	}
}

func appSetOf(t *testing.T, doc string) argoapp.AppSet {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(doc, "REPO", appSetRepo)), &u.Object); err != nil {
		t.Fatal(err)
	}
	s := argoapp.AppSet{Namespace: u.GetNamespace(), Name: u.GetName()}
	b, _ := json.Marshal(u.Object["spec"])
	if err := json.Unmarshal(b, &s.Spec); err != nil {
		t.Fatal(err)
	}
	return s
}

// summary is each generated Application as "ns/name path dest-namespace
// project", sorted.
func summary(apps []argoapp.Defined) []string {
	var out []string
	for _, d := range apps {
		u := unstructured.Unstructured{Object: d.Object}
		p, _, _ := unstructured.NestedString(d.Object, "spec", "source", "path")
		ns, _, _ := unstructured.NestedString(d.Object, "spec", "destination", "namespace")
		proj, _, _ := unstructured.NestedString(d.Object, "spec", "project")
		out = append(out, fmt.Sprintf("%s/%s %s %s %s", u.GetNamespace(), u.GetName(), p, ns, proj))
	}
	sort.Strings(out)
	return out
}

// TestAppSetGenerate evaluates Git directory and Git file generators on a
// real repository as Argo CD's ApplicationSet controller does: directory
// globs with path.Match and excludes winning, hidden directories left
// out, the generator's revision, file generator pathspecs whose * crosses
// "/", flattened keys, lists of objects, Go templates, and a generator's
// own template over the ApplicationSet's. Every generator adopt does not
// evaluate is named.
func TestAppSetGenerate(t *testing.T) {
	at := appSetTree(t)
	cases := []struct {
		name, spec string
		want       []string
		skipped    []string
	}{{
		name: "directories",
		spec: `
  generators:
  - git:
      repoURL: REPO
      revision: HEAD
      directories:
      - path: apps/*
      - path: apps/skip
        exclude: true
      - path: .github/*
  template:
    metadata: {name: '{{path.basenameNormalized}}', labels: {from: '{{path[0]}}'}}
    spec:
      project: '{{ unknown }}'
      source: {repoURL: REPO, path: '{{path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{ path.basename }}'}`,
		want: []string{"argocd/api-server apps/Api_Server Api_Server {{ unknown }}", "argocd/later apps/later later {{ unknown }}", "argocd/web apps/web web {{ unknown }}"},
	}, {
		name: "directories at a tag",
		spec: `
  generators:
  - git:
      repoURL: REPO
      revision: v1
      directories: [{path: 'apps/*'}]
      template: {spec: {project: own}}
  template:
    metadata: {name: '{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: REPO, path: '{{path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: x}`,
		want: []string{"argocd/Api_Server apps/Api_Server x own", "argocd/skip apps/skip x own", "argocd/web apps/web x own"},
	}, {
		name: "files",
		spec: `
  generators:
  - git:
      repoURL: REPO
      files: [{path: 'clusters/*/config.json'}, {path: teams/list.yaml}]
      values: {ns: 'ns-{{path.basename}}'}
  template:
    metadata: {name: '{{cluster.name}}{{team}}-{{tags.1}}'}
    spec:
      project: '{{values.ns}}'
      source: {repoURL: REPO, path: 'apps/{{path[1]}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{cluster.ns}}'}`,
		want: []string{
			"argocd/deep{{team}}-{{tags.1}} apps/deep deep-ns ns-x", "argocd/prod{{team}}-b apps/prod prod-ns ns-prod",
			"argocd/stage{{team}}-{{tags.1}} apps/stage stage-ns ns-stage",
			"argocd/{{cluster.name}}blue-{{tags.1}} apps/{{path[1]}} {{cluster.ns}} ns-teams",
			"argocd/{{cluster.name}}red-{{tags.1}} apps/{{path[1]}} {{cluster.ns}} ns-teams",
		},
	}, {
		name: "go template",
		spec: `
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
  - git:
      repoURL: REPO
      directories: [{path: 'apps/*'}, {path: apps/later, exclude: true}]
  template:
    metadata: {name: '{{.path.basename | normalize}}'}
    spec:
      project: '{{index .path.segments 0}}'
      source: {repoURL: REPO, path: '{{.path.path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{.path.basenameNormalized}}'}`,
		want: []string{"argocd/api-server apps/Api_Server api-server apps", "argocd/skip apps/skip skip apps", "argocd/web apps/web web apps"},
	}, {
		name: "not evaluated",
		spec: `
  generators:
  - list: {elements: [{name: a}]}
  - matrix: {generators: []}
  - git: {repoURL: https://git.example.invalid/org/other.git, directories: [{path: '*'}]}
  - git: {repoURL: REPO, revision: nosuchbranch, directories: [{path: '*'}]}
  - git: {repoURL: REPO, files: [{path: 'apps/web/**'}]}
  template:
    metadata: {name: '{{name}}'}
    spec: {project: default, destination: {server: https://kubernetes.default.svc}}`,
		skipped: []string{
			"generator 1 (list) is not evaluated: adopt evaluates Git directory and Git file generators only",
			"generator 2 (matrix) is not evaluated",
			"generator 3 (Git directory) is not evaluated: it reads https://git.example.invalid/org/other.git, not the plan's repo",
			"generator 4 (Git directory) is not evaluated: ",
			"generator 5 (Git file) is not evaluated: apps/web/nested/README.md matches \"apps/web/**\" but adopt cannot read it",
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := appSetOf(t, "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: set, namespace: argocd}\nspec:"+c.spec)
			apps, skipped := s.Generate(at)
			if got := summary(apps); strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("generated:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if len(skipped) != len(c.skipped) {
				t.Fatalf("skipped %q, want %d lines", skipped, len(c.skipped))
			}
			for i, want := range c.skipped {
				if !strings.HasPrefix(skipped[i], "ApplicationSet argocd/set: "+want) {
					t.Errorf("skipped[%d] = %q, want it to start with %q", i, skipped[i], want)
				}
			}
			for _, d := range apps {
				if d.AppSet != "argocd/set" || !strings.HasPrefix(d.Where, "ApplicationSet argocd/set (Git ") {
					t.Errorf("generated %v: AppSet %q, Where %q", d.Object["metadata"], d.AppSet, d.Where)
				}
			}
		})
	}
}

// TestAddGenerated: a generated Application already in the cluster is
// simply existing; the others are pending, with the ApplicationSet named.
func TestAddGenerated(t *testing.T) {
	at := appSetTree(t)
	a := argoapp.NewApplications([]string{"argocd/web"})
	a.Specs = []argoapp.Spec{{Namespace: "argocd", Name: "web"}}
	a.AppSets = []argoapp.AppSet{appSetOf(t, `
metadata: {name: set, namespace: argocd}
spec:
  generators: [{git: {repoURL: REPO, directories: [{path: 'apps/*'}]}}]
  template:
    metadata: {name: '{{path.basename}}'}
    spec: {project: default, source: {repoURL: REPO, path: '{{path}}'}, destination: {server: https://kubernetes.default.svc, namespace: x}}`)}
	if skipped := a.AddGenerated(at, "argocd"); len(skipped) != 0 {
		t.Fatalf("skipped %q", skipped)
	}
	var got []string
	for _, s := range a.Specs {
		got = append(got, s.Key()+" "+s.AppSet+" "+s.Pending)
	}
	want := []string{
		"argocd/web  ",
		"argocd/Api_Server argocd/set ApplicationSet argocd/set (Git directory generator, directory apps/Api_Server)",
		"argocd/later argocd/set ApplicationSet argocd/set (Git directory generator, directory apps/later)",
		"argocd/skip argocd/set ApplicationSet argocd/set (Git directory generator, directory apps/skip)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("specs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
