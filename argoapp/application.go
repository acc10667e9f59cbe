package argoapp

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/yaml"
)

// Sync options and markers an adopted Application must carry or avoid.
const (
	SyncOptionServerSideApply = "ServerSideApply=true"
	// SyncOptionNoCSAMigration turns off Argo CD 3.1.0-3.3.1's
	// client-side-apply migration (see CSAMigrationTrap); other versions
	// do not need it.
	SyncOptionNoCSAMigration = OptionNoClientSideApplyMigrate
	ResourcesFinalizer       = "resources-finalizer.argocd.argoproj.io"
	PlanIDLabel              = "adopt.dev/plan-id"
	InClusterServer          = "https://kubernetes.default.svc"
	// DefaultNamespace is Argo CD's control-plane namespace in a standard
	// install.
	DefaultNamespace = "argocd"
)

// ApplicationData is what the Application template is rendered from.
type ApplicationData struct {
	Name string
	// Namespace is where the Application object lives (Argo CD's namespace).
	Namespace string
	Project   string
	// PlanID is this adoption's id (the label); PlanIDs, when set, are
	// every adoption's of an extended Application, oldest first, ending
	// with PlanID (the annotation; just PlanID when unset).
	PlanID  string
	PlanIDs []string
	// Objects are the adopted objects, by reference, for reviewers.
	Objects        []string
	RepoURL        string
	Path           string
	TargetRevision string
	// Include and Exclude are directory globs; empty means none.
	Include string
	Exclude string
	// DestinationName wins over DestinationServer when set.
	DestinationServer    string
	DestinationName      string
	DestinationNamespace string
	AutoSync             bool
	Prune                bool
	SyncOptions          []string
	// Chart, when set, makes the source a Helm chart in the repository at
	// RepoURL, at TargetRevision (the chart version), instead of Path.
	Chart string
	// HelmReleaseName, when set, gives the source a helm block (a chart
	// repository's chart, or the chart in Git at Path): helm.releaseName;
	// HelmValueFiles is helm.valueFiles (relative to Path); HelmValues is
	// helm.valuesObject as YAML ("" for none; see HelmValuesYAML).
	HelmReleaseName string
	HelmValueFiles  []string
	HelmValues      string
	// IgnoreDifferences are spec.ignoreDifferences entries.
	IgnoreDifferences []IgnoreDifference
}

// IgnoreDifference is one spec.ignoreDifferences entry.
type IgnoreDifference struct {
	Group, Kind, Namespace, Name string
	JSONPointers                 []string
	ManagedFieldsManagers        []string
}

// SyncOptionRespectIgnoreDifferences makes a sync keep the live value of
// every ignored field instead of applying the rendered one.
const SyncOptionRespectIgnoreDifferences = "RespectIgnoreDifferences=true"

// HelmValuesYAML renders values for helm.valuesObject: YAML with sorted
// keys, no trailing newline ("" for no values).
func HelmValuesYAML(values map[string]any) (string, error) {
	if len(values) == 0 {
		return "", nil
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("helm values: %w", err)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// Glob turns file names into a directory include/exclude glob: the name
// itself, or {a,b} for several.
func Glob(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return "{" + strings.Join(names, ",") + "}"
}

// GlobNames is Glob's inverse: the file names a directory include or
// exclude that Glob wrote names (none for "").
func GlobNames(glob string) []string {
	if glob == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(strings.TrimPrefix(glob, "{"), "}"), ",")
}

// RenderApplication executes the template and validates the result: it
// must decode into Argo CD's v1alpha1.Application with no unknown field,
// sync with server-side apply, carry no resources finalizer (deleting the
// Application must never delete the adopted objects), and automate sync or
// prune only when asked.
func RenderApplication(t *template.Template, d ApplicationData) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render Application %s: %w", d.Name, err)
	}
	out := b.Bytes()
	app, err := DecodeApplication(out)
	if err != nil {
		return nil, fmt.Errorf("template %s rendered an invalid Application %s: %w. Fix the template", t.Name(), d.Name, err)
	}
	if err := checkApplication(app, d); err != nil {
		return nil, fmt.Errorf("template %s rendered an unsafe Application %s: %w. Fix the template", t.Name(), d.Name, err)
	}
	return out, nil
}

// DecodeApplication decodes YAML strictly into v1alpha1.Application.
func DecodeApplication(data []byte) (*v1alpha1.Application, error) {
	var app v1alpha1.Application
	if err := yaml.UnmarshalStrict(data, &app); err != nil {
		return nil, err
	}
	if app.APIVersion != "argoproj.io/v1alpha1" || app.Kind != "Application" {
		return nil, fmt.Errorf("apiVersion %q kind %q, want argoproj.io/v1alpha1 Application", app.APIVersion, app.Kind)
	}
	return &app, nil
}

func checkApplication(app *v1alpha1.Application, d ApplicationData) error {
	switch {
	case app.Name == "":
		return fmt.Errorf("metadata.name is empty")
	case app.Spec.Source == nil && len(app.Spec.Sources) == 0:
		return fmt.Errorf("spec.source is missing")
	case app.Spec.Destination.Server == "" && app.Spec.Destination.Name == "":
		return fmt.Errorf("spec.destination needs server or name")
	case app.Spec.Project == "":
		return fmt.Errorf("spec.project is empty")
	}
	for _, src := range append(app.Spec.Sources, sourceOf(app)...) {
		if src.Path == "" && src.Chart == "" {
			return fmt.Errorf("source %s has neither a path nor a chart: it would sync the repository's root", src.RepoURL)
		}
	}
	if d.Chart != "" || d.HelmReleaseName != "" {
		src := app.Spec.Source
		switch {
		case d.Chart != "" && (src == nil || src.Chart != d.Chart || src.TargetRevision != d.TargetRevision || src.Path != ""):
			return fmt.Errorf("spec.source is not chart %s at %s", d.Chart, d.TargetRevision)
		case d.Chart == "" && (src == nil || src.Path != d.Path || src.TargetRevision != d.TargetRevision || src.Chart != "" || src.Directory != nil):
			return fmt.Errorf("spec.source is not the chart in Git at %s, %s", d.Path, d.TargetRevision)
		case src.Helm == nil || src.Helm.ReleaseName != d.HelmReleaseName:
			return fmt.Errorf("spec.source.helm.releaseName is not %s", d.HelmReleaseName)
		case !slices.Equal(src.Helm.ValueFiles, d.HelmValueFiles):
			return fmt.Errorf("spec.source.helm.valueFiles is not %v", d.HelmValueFiles)
		case (d.HelmValues != "") != (src.Helm.ValuesObject != nil):
			return fmt.Errorf("spec.source.helm.valuesObject does not match the values given")
		}
	}
	for _, f := range app.Finalizers {
		if strings.HasPrefix(f, ResourcesFinalizer) {
			return fmt.Errorf("it carries the %s finalizer, so deleting it would delete the adopted objects", f)
		}
	}
	sp := app.Spec.SyncPolicy
	if sp == nil || !sp.SyncOptions.HasOption(SyncOptionServerSideApply) {
		return fmt.Errorf("spec.syncPolicy.syncOptions lacks %s", SyncOptionServerSideApply)
	}
	if len(d.IgnoreDifferences) > 0 && !sp.SyncOptions.HasOption(SyncOptionRespectIgnoreDifferences) {
		return fmt.Errorf("spec.syncPolicy.syncOptions lacks %s, so the first sync would overwrite the ignored fields", SyncOptionRespectIgnoreDifferences)
	}
	if len(app.Spec.IgnoreDifferences) != len(d.IgnoreDifferences) {
		return fmt.Errorf("spec.ignoreDifferences has %d entries, want %d", len(app.Spec.IgnoreDifferences), len(d.IgnoreDifferences))
	}
	for i, got := range app.Spec.IgnoreDifferences {
		want := d.IgnoreDifferences[i]
		if got.Group != want.Group || got.Kind != want.Kind || got.Namespace != want.Namespace || got.Name != want.Name ||
			!slices.Equal(got.JSONPointers, want.JSONPointers) || !slices.Equal(got.ManagedFieldsManagers, want.ManagedFieldsManagers) || len(got.JQPathExpressions) > 0 {
			return fmt.Errorf("spec.ignoreDifferences[%d] is not the entry given (%s %s %s/%s)", i, want.Group, want.Kind, want.Namespace, want.Name)
		}
	}
	if sp.Automated != nil && !d.AutoSync {
		return fmt.Errorf("automated sync is set but --auto-sync was not given")
	}
	if sp.Automated != nil && sp.Automated.Prune && !d.Prune {
		return fmt.Errorf("automated prune is set but --prune was not given")
	}
	return nil
}

func sourceOf(app *v1alpha1.Application) []v1alpha1.ApplicationSource {
	if app.Spec.Source == nil {
		return nil
	}
	return []v1alpha1.ApplicationSource{*app.Spec.Source}
}
