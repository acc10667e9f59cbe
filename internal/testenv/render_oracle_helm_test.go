package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
)

// The render oracle's Helm half: charts in Git, rendered by Argo CD's
// repo-server with helm template and by adopt with plan.RenderSource, on
// the same Argo CD and repo as testRenderOracle's other sources.

// oracleChartDir is where the web chart lies in the oracle's repo.
const oracleChartDir = "charts/web"

// oracleHelmFiles are the web chart (cmd/adopt/testdata/charts/web, which
// requires auth.password) with a values file beside it, and a values file
// elsewhere in the repo that a multi-source Application reads through a
// ref source.
func oracleHelmFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{
		// Its port is set by nothing else: without the values file the
		// Service says 8080.
		oracleChartDir + "/values-prod.yaml": `greeting: from-values-prod
auth: {user: values-prod-user}
service: {port: 8081}
`,
		// Everything the multi-source render says comes from here; the
		// chart fails without its password.
		"envs/prod/web.yaml": `greeting: from-envs-prod
auth: {user: envs-user, password: envs-secret}
service: {port: 9443}
`,
	}
	for p, c := range oracleSourceFiles {
		files[p] = c
	}
	chart := filepath.Join("..", "..", "cmd", "adopt", "testdata", "charts", "web")
	err := filepath.WalkDir(chart, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(chart, p)
		files[oracleChartDir+"/"+filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if files[oracleChartDir+"/templates/objects.yaml"] == "" || files[oracleChartDir+"/Chart.yaml"] == "" {
		t.Fatalf("the web chart was not copied from %s", chart)
	}
	return files
}

// oracleSourceFiles are the repo-server's rules for one source (issue
// 35): the caps chart reads the cluster's API versions, a values file
// from the repo's root, one named by $ARGOCD_APP_NAME and parameters
// with $ARGOCD_APP_* in them, has a CRD that skipCrds leaves out, and
// parameter override files (.argocd-source.yaml for every Application
// at its path, .argocd-source-<app>.yaml for one). The both directory is
// a kustomization and a chart: the tool is chosen by precedence, or
// named.
var oracleSourceFiles = map[string]string{
	"charts/caps/Chart.yaml": "apiVersion: v2\nname: caps\nversion: 0.1.0\n",
	"charts/caps/values.yaml": `fromRoot: "no"
byName: "no"
env: none
rev: none
fromOverride: "no"
`,
	"charts/caps/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.oracle.adopt.dev}
spec:
  group: oracle.adopt.dev
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
	"charts/caps/templates/caps.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
data:
  applications: {{ .Capabilities.APIVersions.Has "argoproj.io/v1alpha1/Application" | quote }}
  argoproj: {{ .Capabilities.APIVersions.Has "argoproj.io/v1alpha1" | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "oracle.adopt.dev/v1" | quote }}
  fromRoot: {{ .Values.fromRoot | quote }}
  byName: {{ .Values.byName | quote }}
  env: {{ .Values.env | quote }}
  rev: {{ .Values.rev | quote }}
  fromOverride: {{ .Values.fromOverride | quote }}
`,
	"charts/caps/values-oracle-helm-caps.yaml": "byName: \"yes\"\n",
	"envs/caps/root.yaml":                      "fromRoot: \"yes\"\n",
	// Every Application at charts/caps: a merge patch of its source.
	"charts/caps/.argocd-source.yaml": "helm:\n  valuesObject: {fromOverride: all}\n",
	// oracle-helm-caps alone: its release is renamed.
	"charts/caps/.argocd-source-oracle-helm-caps.yaml": "helm:\n  releaseName: caps-over\n",
	"both/Chart.yaml": "apiVersion: v2\nname: both\nversion: 0.1.0\n",
	"both/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: both-from-helm}
data: {tool: helm}
`,
	"both/kustomization.yaml": "resources: [cm.yaml]\n",
	"both/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: both-from-kustomize}
data: {tool: kustomize}
`,
}

// oracleHelmApp is one Application whose source plan.RenderSource
// renders (a chart, or a path whose tool is chosen), with the identities
// Argo CD must render for it.
type oracleHelmApp struct {
	app     string
	path    string
	sources func(repoURL string) string
	want    []string
}

var oracleHelmApps = []oracleHelmApp{
	{
		// values-prod.yaml gives the port, valuesObject the user (over
		// values-prod.yaml's) and a greeting the parameter overrides; the
		// password is a parameter with forceString (12345 would otherwise
		// be a number, which b64enc refuses); the greeting holds a comma.
		app: "oracle-helm-web",
		sources: func(repoURL string) string {
			return fmt.Sprintf(`source:
    repoURL: %q
    path: %s
    targetRevision: main
    helm:
      releaseName: web-rel
      valueFiles: [values-prod.yaml]
      valuesObject:
        greeting: from-values-object
        auth: {user: object-user}
      parameters:
      - {name: greeting, value: "hello, prod"}
      - {name: auth.password, value: "12345", forceString: true}`, repoURL, oracleChartDir)
		},
		want: []string{"ConfigMap /web-rel-cfg", "Secret /web-rel-auth", "Service /web-rel"},
	},
	{
		// The release is the Application's name; the values come from
		// the ref source alone.
		app: "oracle-helm-multi",
		sources: func(repoURL string) string {
			return fmt.Sprintf(`sources:
  - repoURL: %q
    path: %s
    targetRevision: main
    helm:
      valueFiles: [$values/envs/prod/web.yaml]
  - {repoURL: %q, targetRevision: main, ref: values}`, repoURL, oracleChartDir, repoURL)
		},
		want: []string{"ConfigMap /oracle-helm-multi-cfg", "Secret /oracle-helm-multi-auth", "Service /oracle-helm-multi"},
	},
	{
		// A values file from the repo's root, one named by the
		// Application, parameters with $ARGOCD_APP_*, skipCrds; the
		// override files rename the release and set a value.
		app:  "oracle-helm-caps",
		path: "charts/caps",
		sources: func(repoURL string) string {
			return fmt.Sprintf(`source:
    repoURL: %q
    path: charts/caps
    targetRevision: main
    helm:
      skipCrds: true
      valueFiles: [/envs/caps/root.yaml, values-$ARGOCD_APP_NAME.yaml]
      parameters:
      - {name: env, value: "ns-$ARGOCD_APP_NAMESPACE"}
      - {name: rev, value: "$ARGOCD_APP_REVISION_SHORT_8"}`, repoURL)
		},
		want: []string{"ConfigMap /caps-over-caps"},
	},
	{
		// No helm settings: the CRD is rendered, and only
		// .argocd-source.yaml applies.
		app:  "oracle-helm-caps-crds",
		path: "charts/caps",
		sources: func(repoURL string) string {
			return fmt.Sprintf("source: {repoURL: %q, path: charts/caps, targetRevision: main}", repoURL)
		},
		want: []string{"ConfigMap /oracle-helm-caps-crds-caps", "CustomResourceDefinition apiextensions.k8s.io/widgets.oracle.adopt.dev"},
	},
	{
		// A kustomization and a chart: kustomize wins.
		app:  "oracle-both",
		path: "both",
		sources: func(repoURL string) string {
			return fmt.Sprintf("source: {repoURL: %q, path: both, targetRevision: main}", repoURL)
		},
		want: []string{"ConfigMap /both-from-kustomize"},
	},
	{
		// Named: Helm.
		app:  "oracle-both-helm",
		path: "both",
		sources: func(repoURL string) string {
			return fmt.Sprintf("source: {repoURL: %q, path: both, targetRevision: main, helm: {releaseName: both}}", repoURL)
		},
		want: []string{"ConfigMap /both-from-helm"},
	},
}

func (h oracleHelmApp) application(repoURL string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
spec:
  project: default
  %s
  destination: {server: https://kubernetes.default.svc, namespace: %s}
`, h.app, h.sources(repoURL), oracleDestNamespace)
}

// testHelmOracle compares, for each Helm Application (already created),
// Argo CD's manifests with plan.RenderSource over the Application as read
// back from the cluster, with Argo CD's own types, and the control plane's
// version as Helm's kube version.
func testHelmOracle(t *testing.T, ctx context.Context, version string, a *ArgoCD, cp *ControlPlane, ix *gitindex.Index, repoURL string) {
	sv, err := cp.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	charts := helmrelease.Renderer{KubeVersion: sv.GitVersion, APIVersions: helmrelease.APIVersions(cp.Clientset().Discovery())}
	revs := plan.Revisions{At: func(rev string) (*gitindex.Index, error) { return ix.AtRevision(ctx, rev) }}
	for _, h := range oracleHelmApps {
		t.Run(h.app, func(t *testing.T) {
			argo := oracleManifests(t, ctx, a, h.app)
			u, err := a.applications().Get(ctx, h.app, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var spec v1alpha1.ApplicationSpec
			b, err := json.Marshal(u.Object["spec"])
			if err == nil {
				err = json.Unmarshal(b, &spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			s := argoapp.Spec{Namespace: u.GetNamespace(), Name: u.GetName(), Destination: spec.Destination.Namespace, Sources: spec.GetSources()}
			var ours []*gitindex.Manifest
			rendered := 0
			for _, src := range s.Sources {
				if src.Path == "" && src.Ref != "" {
					continue // the values source
				}
				ms, err := plan.RenderSource(ix, revs, charts, s, src, repoURL)
				if err != nil {
					t.Fatalf("adopt cannot render %s of %s: %v", src.Path, h.app, err)
				}
				ours = append(ours, ms...)
				rendered++
			}
			if rendered != 1 {
				t.Fatalf("%s: %d chart sources rendered, want 1", h.app, rendered)
			}
			p := h.path
			if p == "" {
				p = oracleChartDir
			}
			compareRender(t, version, oracleSource{app: h.app, path: p, want: h.want}, argo, ours)
		})
	}
}
