package apply

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/templates"
)

// mapTree is a checked-out tree held in memory.
type mapTree map[string]string

func (m mapTree) Files() ([]string, error) {
	var out []string
	for f := range m {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

func (m mapTree) ReadFile(p string) ([]byte, error) { return []byte(m[p]), nil }

// contractPlan records a setting of every kind adopt.yaml has, each
// different from apply's defaults.
func contractPlan() *plan.Plan {
	hook := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "hook"}, App: "adopt-shop"}
	web := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "web"}, App: "adopt-shop-git",
		Git: &plan.GitMatch{Path: "clusters/prod/shop/web.yaml", Line: 1}}
	return &plan.Plan{
		APIVersion: plan.APIVersion, Kind: plan.Kind, ID: "plan-0123456789abcdef",
		Cluster:  plan.Cluster{Server: "https://127.0.0.1:6443"},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, Namespace: "argocd-mgmt", Version: "v2.14.21"},
		Settings: plan.Settings{GroupBy: plan.GroupAuto, RepoURL: "ssh://git@git.example.invalid/org/gitops.git",
			AppsDir: "clusters/prod/apps", ExportDir: "clusters/prod/adopted", Project: "platform", Destination: "name:prod"},
		Applications: []plan.Application{
			{Name: "adopt-shop", Namespace: "shop", Project: "platform", Source: "export", RepoURL: "ssh://git@git.example.invalid/org/gitops.git",
				DestinationName: "prod", SourcePath: "clusters/prod/adopted/shop", Objects: []string{hook.Ref.String()}},
			{Name: "adopt-shop-git", Namespace: "shop", Project: "platform", Source: "git", RepoURL: "ssh://git@git.example.invalid/org/gitops.git",
				DestinationName: "prod", SourcePath: "clusters/prod/shop", Objects: []string{web.Ref.String()}},
		},
		Objects: []plan.Object{hook, web},
	}
}

func fetchConfigMap(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "7", "uid": "u-1"},
		"data":     map[string]any{"k": "v"},
	}}
	return u, nil
}

func newApplier(t testing.TB, p *plan.Plan, mutate func(*Options)) *Applier {
	t.Helper()
	set, err := templates.New("")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Plan: p, Secrets: export.SecretsSkip, CSAMigration: CSAAuto, Templates: set, Fetch: fetchConfigMap,
		Version: argoapp.DetectedVersion{Version: argoapp.Version{Major: 2, Minor: 14, Patch: 21}, Source: "test"}}
	if mutate != nil {
		mutate(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Export(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Target("https://other.example.invalid/not-the-plan.git", "main")
	return a
}

// TestAppliedApplicationEqualsThePlan renders a plan with no cluster and
// no Git server and checks each committed Application, setting by setting,
// against what the plan records.
func TestAppliedApplicationEqualsThePlan(t *testing.T) {
	p := contractPlan()
	a := newApplier(t, p, nil)
	c, err := a.Build(mapTree{"clusters/prod/shop/web.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pa := range p.Applications {
		file := path.Join(p.Settings.AppsDir, pa.Name+".yaml")
		data, ok := c.Files[file]
		if !ok {
			t.Fatalf("no %s among %v", file, keys(c.Files))
		}
		app, err := argoapp.DecodeApplication(data)
		if err != nil {
			t.Fatal(err)
		}
		src := app.Spec.Source
		for _, f := range []struct{ field, got, want string }{
			{"metadata.namespace", app.Namespace, p.Tracking.Namespace},
			{"spec.project", app.Spec.Project, pa.Project},
			{"spec.destination.name", app.Spec.Destination.Name, pa.DestinationName},
			{"spec.destination.server", app.Spec.Destination.Server, ""},
			{"spec.destination.namespace", app.Spec.Destination.Namespace, pa.Namespace},
			{"spec.source.repoURL", src.RepoURL, pa.RepoURL},
			{"spec.source.path", src.Path, pa.SourcePath},
			{"spec.source.targetRevision", src.TargetRevision, "main"},
			{"adopt.dev/objects", app.Annotations["adopt.dev/objects"], strings.Join(pa.Objects, ", ")},
		} {
			if f.got != f.want {
				t.Errorf("%s: %s = %q, plan says %q", pa.Name, f.field, f.got, f.want)
			}
		}
	}
	// The exported object lands under the plan's export directory.
	if _, ok := c.Files["clusters/prod/adopted/shop/configmap-hook.yaml"]; !ok {
		t.Errorf("export not under the plan's exportDir: %v", keys(c.Files))
	}
	for f := range c.Files {
		if strings.HasPrefix(f, "argocd/") || strings.HasPrefix(f, "apps/") || strings.HasPrefix(f, "adopted/") {
			t.Errorf("%s is under a default directory, not the plan's", f)
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOverridesThatContradictThePlanAreRefused: each content flag that
// differs from the plan is refused naming the plan's value; the same value
// again is fine.
func TestOverridesThatContradictThePlanAreRefused(t *testing.T) {
	p := contractPlan()
	for _, tc := range []struct {
		ov   Overrides
		want string
	}{
		{Overrides{ArgoCDNamespace: "argocd"}, `records tracking.namespace "argocd-mgmt"`},
		{Overrides{AppsDir: "argocd/apps/"}, `records appsDir "clusters/prod/apps"`},
		{Overrides{RepoURL: "https://git.example.invalid/org/gitops.git"}, `records repoURL "ssh://git@git.example.invalid/org/gitops.git"`},
		{Overrides{DestServer: argoapp.InClusterServer}, `records destination "name prod"`},
		{Overrides{DestName: "staging"}, `records destination "name prod"`},
	} {
		err := tc.ov.Check(p)
		var ce *ContractError
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a ContractError saying %s", tc.ov, err, tc.want)
		}
	}
	same := Overrides{ArgoCDNamespace: "argocd-mgmt", AppsDir: "clusters/prod/apps/", RepoURL: "ssh://git@git.example.invalid/org/gitops.git", DestName: "prod"}
	if err := same.Check(p); err != nil {
		t.Errorf("repeating the plan: %v", err)
	}
	if err := (Overrides{RepoURL: "https://bot:ghp_s3cretT0ken@git.example.invalid/org/gitops.git"}).Validate(); err == nil || strings.Contains(err.Error(), "ghp_s3cretT0ken") {
		t.Errorf("a --repo-url with a token: %v", err)
	}
}

// TestHelmAndRootPathArePlansApplyRefuses: a Helm-sourced Application is
// never rendered as raw exports, and no Application syncs the repo root.
func TestHelmAndRootPathArePlansApplyRefuses(t *testing.T) {
	p := contractPlan()
	p.Applications[0].Source, p.Applications[0].Helm = "helm", &plan.HelmSource{ReleaseName: "web"}
	if err := Check(p); err == nil || !strings.Contains(err.Error(), "Helm-sourced") {
		t.Errorf("helm: %v", err)
	}
	p = contractPlan()
	p.Applications[0].SourcePath = ""
	a := newApplier(t, p, nil)
	if _, err := a.Build(mapTree{}); err == nil || !strings.Contains(err.Error(), "repository's root") {
		t.Errorf("root path: %v", err)
	}
}

// TestCSAMigrationDecision: the option follows the version; with the
// version unknown and an object at risk, apply refuses with the remedy.
func TestCSAMigrationDecision(t *testing.T) {
	trapped := func() *plan.Plan {
		p := contractPlan()
		p.Objects[0].CSAMigration = judge.CSAMigration{Fails: true, Bytes: 262_300}
		return p
	}
	has := func(a *Applier) bool {
		c, err := a.Build(mapTree{})
		if err != nil {
			t.Fatal(err)
		}
		app, err := argoapp.DecodeApplication(c.Files["clusters/prod/apps/adopt-shop.yaml"])
		if err != nil {
			t.Fatal(err)
		}
		return app.Spec.SyncPolicy.SyncOptions.HasOption(argoapp.SyncOptionNoCSAMigration)
	}
	v := func(maj, min, patch int) argoapp.DetectedVersion {
		return argoapp.DetectedVersion{Version: argoapp.Version{Major: maj, Minor: min, Patch: patch}, Source: "test"}
	}
	if !has(newApplier(t, trapped(), func(o *Options) { o.Version = v(3, 2, 6) })) {
		t.Error("v3.2.6, trapped: option missing")
	}
	if has(newApplier(t, trapped(), func(o *Options) { o.Version = v(2, 14, 21) })) {
		t.Error("v2.14.21: option set")
	}
	if has(newApplier(t, trapped(), func(o *Options) { o.Version = v(3, 3, 2) })) {
		t.Error("v3.3.2: option set")
	}
	if !has(newApplier(t, contractPlan(), func(o *Options) { o.CSAMigration = CSADisable })) {
		t.Error("--csa-migration=disable: option missing")
	}
	unknown := newApplier(t, trapped(), func(o *Options) { o.Version = argoapp.DetectedVersion{Source: "no StatefulSet"} })
	_, err := unknown.Build(mapTree{})
	var ce *ContractError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--argocd-version") || !strings.Contains(err.Error(), "--csa-migration=disable") || !strings.Contains(err.Error(), "Nothing was written") {
		t.Errorf("unknown version, trapped: %v", err)
	}
	if has(newApplier(t, trapped(), func(o *Options) { o.Version = argoapp.DetectedVersion{}; o.CSAMigration = CSAKeep })) {
		t.Error("unknown version, keep: option set")
	}
}

// helmPlan adds a Helm-sourced Application (release web in shop) with a
// redacted password to the contract plan.
func helmPlan() *plan.Plan {
	p := contractPlan()
	cm := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "web-cfg"}, App: "adopt-shop-web", HelmRelease: "web"}
	sec := plan.Object{Ref: objref.Ref{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: "web-auth"}, App: "adopt-shop-web", HelmRelease: "web"}
	p.Objects = append(p.Objects, cm, sec)
	p.Applications = append(p.Applications, plan.Application{
		Name: "adopt-shop-web", Namespace: "shop", Project: "platform", Source: "helm", DestinationName: "prod",
		Helm: &plan.HelmSource{ReleaseName: "web", Chart: "web", Version: "1.2.3", RepoURL: "https://charts.example.invalid/stable",
			Values:       map[string]any{"replicas": 2, "auth": map[string]any{"user": "alice", "password": "adopt:redacted:auth.password"}},
			Placeholders: []string{"auth.password"}, KeepSecrets: []string{"shop/web-auth"}},
		Objects: []string{cm.Ref.String(), sec.Ref.String()},
	})
	return p
}

// helmApplication is helmPlan's Application in files, which must export no
// object of its release.
func helmApplication(t *testing.T, files map[string][]byte) (*v1alpha1.Application, []byte) {
	t.Helper()
	for f := range files {
		if strings.Contains(f, "web-cfg") || strings.Contains(f, "web-auth") {
			t.Errorf("a Helm release's object was exported raw to %s", f)
		}
	}
	data := files["clusters/prod/apps/adopt-shop-web.yaml"]
	app, err := argoapp.DecodeApplication(data)
	if err != nil {
		t.Fatalf("%v in\n%s", err, data)
	}
	return app, data
}

// TestHelmApplicationIsTheChartSource: a Helm-sourced Application names the
// chart, its version, the release name and the plan's values, keeps the
// chart's Secret data from live, never has a path, and no object of the
// release is exported.
func TestHelmApplicationIsTheChartSource(t *testing.T) {
	p := helmPlan()
	fetched := map[string]bool{}
	a := newApplier(t, p, func(o *Options) {
		o.Fetch = func(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
			fetched[ns+"/"+name] = true
			return fetchConfigMap(ctx, gvr, ns, name)
		}
	})
	c, err := a.Build(mapTree{"clusters/prod/shop/web.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"})
	if err != nil {
		t.Fatal(err)
	}
	if fetched["shop/web-cfg"] || fetched["shop/web-auth"] {
		t.Errorf("a Helm release's object was read to be exported: %v", fetched)
	}
	app, _ := helmApplication(t, c.Files)
	src := app.Spec.Source
	for _, f := range []struct{ field, got, want string }{
		{"repoURL", src.RepoURL, "https://charts.example.invalid/stable"},
		{"chart", src.Chart, "web"},
		{"path", src.Path, ""},
		{"targetRevision", src.TargetRevision, "1.2.3"},
		{"helm.releaseName", src.Helm.ReleaseName, "web"},
		{"destination.namespace", app.Spec.Destination.Namespace, "shop"},
		{"destination.name", app.Spec.Destination.Name, "prod"},
	} {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.field, f.got, f.want)
		}
	}
	var values map[string]any
	if err := json.Unmarshal(src.Helm.ValuesObject.Raw, &values); err != nil {
		t.Fatal(err)
	}
	if got := values["auth"].(map[string]any)["password"]; got != "adopt:redacted:auth.password" {
		t.Errorf("password value %v, want the placeholder", got)
	}
	if values["replicas"] != float64(2) {
		t.Errorf("replicas %v", values["replicas"])
	}
	sp := app.Spec.SyncPolicy
	if sp.Automated != nil || !sp.SyncOptions.HasOption("ServerSideApply=true") || !sp.SyncOptions.HasOption("RespectIgnoreDifferences=true") {
		t.Errorf("sync policy %+v", sp)
	}
	if len(app.Spec.IgnoreDifferences) != 1 || app.Spec.IgnoreDifferences[0].Name != "web-auth" || app.Spec.IgnoreDifferences[0].Kind != "Secret" ||
		strings.Join(app.Spec.IgnoreDifferences[0].JSONPointers, ",") != "/data,/stringData" {
		t.Errorf("ignoreDifferences %+v", app.Spec.IgnoreDifferences)
	}
	if len(app.Finalizers) != 0 {
		t.Errorf("finalizers %v", app.Finalizers)
	}
	// A plan whose Helm Application lacks its chart repository is refused.
	p = helmPlan()
	p.Applications[2].Helm.RepoURL = ""
	if err := Check(p); err == nil || !strings.Contains(err.Error(), "chart source unknown") {
		t.Errorf("no repoURL: %v", err)
	}
}

// TestHelmApplicationFromChartInGit: a Helm-sourced Application whose chart
// is in the GitOps repo is a Git source of the plan's repo at the chart's
// directory and the branch apply writes to, with the release name, the
// chart's values file or the inline values, and the release namespace; no
// chart field, no directory settings, and no object exported.
func TestHelmApplicationFromChartInGit(t *testing.T) {
	for name, tc := range map[string]struct {
		valueFiles []string
		values     map[string]any
	}{
		"values file":   {valueFiles: []string{"values-production.yaml"}},
		"inline values": {values: map[string]any{"auth": map[string]any{"password": "adopt:redacted:auth.password"}}},
		"no values":     {},
	} {
		t.Run(name, func(t *testing.T) {
			p := helmPlan()
			h := p.Applications[2].Helm
			h.RepoURL, h.Path, h.ValueFiles, h.Values = "", "charts/web", tc.valueFiles, tc.values
			c, err := newApplier(t, p, nil).Build(mapTree{"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.2.3\n"})
			if err != nil {
				t.Fatal(err)
			}
			app, data := helmApplication(t, c.Files)
			src := app.Spec.Source
			for _, f := range []struct{ field, got, want string }{
				{"repoURL", src.RepoURL, "ssh://git@git.example.invalid/org/gitops.git"},
				{"path", src.Path, "charts/web"},
				{"chart", src.Chart, ""},
				{"targetRevision", src.TargetRevision, "main"},
				{"helm.releaseName", src.Helm.ReleaseName, "web"},
				{"helm.valueFiles", strings.Join(src.Helm.ValueFiles, ","), strings.Join(tc.valueFiles, ",")},
				{"destination.namespace", app.Spec.Destination.Namespace, "shop"},
			} {
				if f.got != f.want {
					t.Errorf("%s = %q, want %q\n%s", f.field, f.got, f.want, data)
				}
			}
			if src.Directory != nil {
				t.Errorf("directory %+v on a chart source", src.Directory)
			}
			if (src.Helm.ValuesObject != nil) != (tc.values != nil) {
				t.Errorf("valuesObject %v, want values %v", src.Helm.ValuesObject, tc.values)
			}
			if src.Helm.ValuesObject != nil && !strings.Contains(string(src.Helm.ValuesObject.Raw), "adopt:redacted:auth.password") {
				t.Errorf("valuesObject %s", src.Helm.ValuesObject.Raw)
			}
		})
	}
}
