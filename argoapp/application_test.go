package argoapp

import (
	"context"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
	"github.com/adopt-dev/adopt/templates"
)

// cp is the package's real control plane, started once in TestMain.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

// argoCDCRD reads the Application CRD from the argo-cd v2.14.21 module that
// go.mod requires (it is in the module cache once the project builds).
func argoCDCRD(t *testing.T) []byte {
	t.Helper()
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		cache = filepath.Join(filepath.SplitList(build.Default.GOPATH)[0], "pkg", "mod")
	}
	p := filepath.Join(cache, "github.com", "argoproj", "argo-cd", "v2@v2.14.21", "manifests", "crds", "application-crd.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("Application CRD: %v. Run: go mod download github.com/argoproj/argo-cd/v2@v2.14.21", err)
	}
	return b
}

func sample() ApplicationData {
	return ApplicationData{
		Name: "adopt-litellm-test", Namespace: "argocd", Project: "default", PlanID: "3f9a1c0b7d2e",
		Objects:           []string{"ConfigMap litellm-test/litellm-test-usage-hook"},
		RepoURL:           "https://git.example.invalid/org/gitops.git",
		Path:              "k8s/system",
		TargetRevision:    "main",
		Include:           Glob([]string{"litellm-test-usage-hook-cm.yaml"}),
		Exclude:           Glob([]string{"secret-a.yaml", "secret-b.yaml"}),
		DestinationServer: InClusterServer, DestinationNamespace: "litellm-test",
		SyncOptions: []string{SyncOptionServerSideApply},
	}
}

func loadTemplate(t *testing.T, dir string) *templates.Set {
	t.Helper()
	s, err := templates.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func render(t *testing.T, s *templates.Set, d ApplicationData) ([]byte, error) {
	t.Helper()
	tpl, err := s.Load(templates.Application)
	if err != nil {
		t.Fatal(err)
	}
	return RenderApplication(tpl, d)
}

// TestRenderedApplicationsPassServerSideDryRun renders the Application in
// each supported shape and creates it with dryRun=All against the real
// kube-apiserver with Argo CD v2.14.21's Application CRD installed.
func TestRenderedApplicationsPassServerSideDryRun(t *testing.T) {
	ctx := context.Background()
	if out, err := cp.Kubectl(ctx, argoCDCRD(t), "apply", "--server-side", "--field-manager=test", "-f", "-"); err != nil {
		t.Fatalf("install Application CRD: %v: %s", err, out)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn, err := dynamic.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// kubectl wait fails on a CRD that has no conditions yet; poll instead.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(crds).Get(ctx, "applications.argoproj.io", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Application CRD not established: %v", err)
	}
	if _, err := cp.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	apps := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).Namespace("argocd")

	byName := sample()
	byName.DestinationName, byName.DestinationServer, byName.Include, byName.Exclude = "in-cluster", "", "", ""
	auto := sample()
	auto.AutoSync, auto.Prune = true, true
	cluster := sample()
	cluster.Name, cluster.DestinationNamespace = "adopt-cluster", ""
	s := loadTemplate(t, "")
	for name, d := range map[string]ApplicationData{"server+include+exclude": sample(), "destination-name": byName, "auto-sync+prune": auto, "cluster-scoped": cluster} {
		t.Run(name, func(t *testing.T) {
			out, err := render(t, s, d)
			if err != nil {
				t.Fatal(err)
			}
			var u unstructured.Unstructured
			if err := yaml.Unmarshal(out, &u.Object); err != nil {
				t.Fatal(err)
			}
			created, err := apps.Create(ctx, &u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			if err != nil {
				t.Fatalf("server-side dry-run create refused the Application: %v\n%s", err, out)
			}
			opts, _, _ := unstructured.NestedStringSlice(created.Object, "spec", "syncPolicy", "syncOptions")
			if strings.Join(opts, ",") != SyncOptionServerSideApply {
				t.Errorf("syncOptions %v", opts)
			}
			if len(created.GetFinalizers()) != 0 {
				t.Errorf("finalizers %v", created.GetFinalizers())
			}
			_, automated, _ := unstructured.NestedMap(created.Object, "spec", "syncPolicy", "automated")
			if automated != d.AutoSync {
				t.Errorf("automated = %v, want %v", automated, d.AutoSync)
			}
			if created.GetLabels()[PlanIDLabel] != d.PlanID {
				t.Errorf("plan id label %v", created.GetLabels())
			}
			inc, _, _ := unstructured.NestedString(created.Object, "spec", "source", "directory", "include")
			if inc != d.Include {
				t.Errorf("include %q, want %q", inc, d.Include)
			}
		})
	}
	if _, err := apps.Get(ctx, "adopt-litellm-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a dry run created the Application: %v", err)
	}
}

// TestOverrideTemplateIsValidated: a team's template with a typo, a
// resources finalizer, no server-side apply, or sneaked-in automation is
// refused with a clear error.
func TestOverrideTemplateIsValidated(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("..", "templates", templates.Application))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"unknown field": {"  project:", "  projekt: x\n  project:", `unknown field "projekt"`},
		"finalizer":     {"  labels:", "  finalizers: [resources-finalizer.argocd.argoproj.io]\n  labels:", "would delete the adopted objects"},
		"no SSA":        {"    - {{ quote . }}", "    - Validate=false", "lacks ServerSideApply=true"},
		"automation":    {"  syncPolicy:", "  syncPolicy:\n    automated: {}", "--auto-sync was not given"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			text := strings.Replace(string(base), tc.from, tc.to, 1)
			if text == string(base) {
				t.Fatal("fixture did not change the template")
			}
			if err := os.WriteFile(filepath.Join(dir, templates.Application), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			s := loadTemplate(t, dir)
			if !strings.HasSuffix(s.Source(templates.Application), templates.Application) {
				t.Fatalf("override not used: %s", s.Source(templates.Application))
			}
			_, err := render(t, s, sample())
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want one line with %q, got %v", tc.want, err)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	if Glob(nil) != "" || Glob([]string{"a.yaml"}) != "a.yaml" || Glob([]string{"a.yaml", "b.yaml"}) != "{a.yaml,b.yaml}" {
		t.Fatal("glob")
	}
}

// TestGlobNames: GlobNames reads back what Glob writes.
func TestGlobNames(t *testing.T) {
	for _, names := range [][]string{nil, {"a.yaml"}, {"a.yaml", "b.yaml"}} {
		if got := GlobNames(Glob(names)); strings.Join(got, "|") != strings.Join(names, "|") {
			t.Errorf("GlobNames(Glob(%v)) = %v", names, got)
		}
	}
}
