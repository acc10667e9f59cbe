package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
)

// oracleAppSetFiles are the directories and files the oracle's
// ApplicationSets generate from: a hidden directory the directory
// generator's glob matches, an excluded one, a name to normalize, a file
// pattern whose * crosses "/", and a YAML list.
var oracleAppSetFiles = map[string]string{
	"appset/svc/alpha/cm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alpha}\n",
	"appset/svc/Beta_Two/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: beta}\n",
	"appset/svc/skip/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skip}\n",
	"appset/svc/.hidden/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden}\n",
	"appset/clusters/a/config.json":   `{"cluster": {"name": "a", "ns": "Ns_A"}, "tags": ["x", "y"]}`,
	"appset/clusters/b/c/config.json": `{"cluster": {"name": "bc", "ns": "ns-bc"}}`,
	"appset/teams.yaml":               "- cluster: {name: red, ns: Red_NS}\n- cluster: {name: blue, ns: blue}\n",
}

// oracleAppSets are ApplicationSets with Git directory and Git file
// generators, with and without Go templates (REPO is the repo's URL).
var oracleAppSets = []string{`
metadata: {name: dirs}
spec:
  generators:
  - git:
      repoURL: REPO
      revision: main
      directories: [{path: 'appset/svc/*'}, {path: appset/svc/skip, exclude: true}]
  template:
    metadata: {name: '{{path.basenameNormalized}}-dir'}
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: main, path: '{{path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: 'ns-{{path.basenameNormalized}}'}
      info: [{name: base, value: '{{ path.basename }}'}, {name: seg, value: '{{path[2]}}'}, {name: unknown, value: '{{ nope }}'}]`, `
metadata: {name: files-go}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
  - git:
      repoURL: REPO
      revision: HEAD
      files: [{path: 'appset/clusters/*/config.json'}, {path: appset/teams.yaml}]
  template:
    metadata: {name: '{{.cluster.name}}-go'}
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: main, path: '{{.path.path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{.cluster.ns | normalize}}'}
      info: [{name: seg, value: '{{index .path.segments 0}}'}, {name: file, value: '{{.path.filenameNormalized}}'}]`, `
metadata: {name: files-flat}
spec:
  generators:
  - git:
      repoURL: REPO
      revision: HEAD
      files: [{path: 'appset/clusters/*/config.json'}]
      values: {ns: 'v-{{cluster.name}}'}
      template: {metadata: {}, spec: {project: default, destination: {namespace: 'gen-{{cluster.name}}'}}}
  template:
    metadata: {name: '{{cluster.name}}-flat'}
    spec:
      project: default
      source: {repoURL: REPO, targetRevision: main, path: '{{path}}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{values.ns}}'}
      info: [{name: b, value: '{{path.basename}}'}, {name: tag, value: '{{tags.1}}'}, {name: fn, value: '{{path.filename}}'}, {name: v, value: '{{values.ns}}'}]`,
}

var applicationSets = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// testAppSetOracle has Argo CD's real ApplicationSet controller generate
// the Applications of oracleAppSets from the repo and checks that
// argoapp's evaluation of the same ApplicationSets on ix gives the same
// Applications: names, namespace and spec.
func testAppSetOracle(t *testing.T, ctx context.Context, a *ArgoCD, ix *gitindex.Index, repoURL string) {
	if err := a.StartApplicationSetController(ctx); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(a.cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range oracleAppSets {
		doc = "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\n" + strings.ReplaceAll(doc, "REPO", fmt.Sprintf("%q", repoURL))
		if err := a.CreateApplication(ctx, []byte(doc)); err != nil {
			t.Fatal(err)
		}
		var set argoapp.AppSet
		u := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &u); err != nil {
			t.Fatal(err)
		}
		set.Namespace, set.Name = a.Namespace, (&unstructured.Unstructured{Object: u}).GetName()
		// The plane is shared and its sets have fixed names: a set left
		// behind would keep its Applications coming back after the test,
		// and a second run (-count=2) would read the first's status.
		// Cleanups run last first: the set goes before sharedArgoCD
		// deletes the Applications it generated.
		t.Cleanup(func() {
			_ = dyn.Resource(applicationSets).Namespace(a.Namespace).Delete(context.Background(), set.Name, metav1.DeleteOptions{})
		})
		b, _ := json.Marshal(u["spec"])
		if err := json.Unmarshal(b, &set.Spec); err != nil {
			t.Fatal(err)
		}
		t.Run("ApplicationSet "+set.Name, func(t *testing.T) {
			// The controller has generated every Application once its
			// status says the resources are up to date.
			var cond string
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				got, err := dyn.Resource(applicationSets).Namespace(a.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
				b, _ := json.Marshal(conds)
				cond = string(b)
				for _, c := range conds {
					m, _ := c.(map[string]any)
					if m["type"] == "ResourcesUpToDate" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("ApplicationSet %s: not up to date (%s): %v\n%s", set.Name, cond, err, lastLines(a.LogTail("argocd-applicationset-controller", 3000), 10))
			}
			list, err := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).Namespace(a.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			argo := map[string]string{}
			for _, app := range list.Items {
				for _, o := range app.GetOwnerReferences() {
					if o.Kind == "ApplicationSet" && o.Name == set.Name {
						argo[app.GetNamespace()+"/"+app.GetName()] = specJSON(t, app.Object["spec"])
					}
				}
			}
			gen, skipped := set.Generate(func(url, rev string) (argoapp.Tree, error) {
				if !argoapp.SameRepo(url, repoURL) {
					return nil, fmt.Errorf("reads %s", url)
				}
				return ix.AtRevision(ctx, rev)
			})
			if len(skipped) > 0 {
				t.Fatalf("adopt did not evaluate: %q", skipped)
			}
			ours := map[string]string{}
			for _, d := range gen {
				u := unstructured.Unstructured{Object: d.Object}
				ours[u.GetNamespace()+"/"+u.GetName()] = specJSON(t, d.Object["spec"])
			}
			if len(argo) == 0 {
				t.Fatalf("Argo CD generated no Application (%s)", cond)
			}
			if got, want := joinedKeys(ours), joinedKeys(argo); got != want {
				t.Errorf("adopt generates\n%s\nArgo CD generated\n%s", got, want)
			}
			for k, spec := range argo {
				if ours[k] != "" && ours[k] != spec {
					t.Errorf("%s: adopt's spec\n%s\nArgo CD's\n%s", k, ours[k], spec)
				}
			}
		})
	}
}

// specJSON is an Application spec read with Argo CD's types, as JSON.
func specJSON(t *testing.T, spec any) string {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var s v1alpha1.ApplicationSpec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func joinedKeys(m map[string]string) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, "\n")
}
