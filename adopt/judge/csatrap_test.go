package judge

import (
	"sort"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/argoapp"
)

// handApplied is a live ConfigMap as client-side kubectl apply leaves it:
// a last-applied copy of lastApplied bytes plus other annotations.
func handApplied(lastApplied int, others map[string]string) *discover.Object {
	ann := map[string]string{budget.LastAppliedKey: strings.Repeat("x", lastApplied)}
	for k, v := range others {
		ann[k] = v
	}
	return &discover.Object{
		Type:        discover.Type{Version: "v1", Kind: "ConfigMap"},
		Namespace:   "litellm-test",
		Name:        "usage-hook",
		Annotations: ann,
		Budget:      budget.MeasureBudget(ann),
		Managers:    []discover.Manager{{Manager: CSAManager, Operation: "Update"}},
	}
}

var annotationTracking = argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey}

// TestCSAMigrationBoundary checks the arithmetic at the cap: a migration
// that writes exactly 262144 bytes of annotations is allowed by the API
// server, one byte more is refused.
func TestCSAMigrationBoundary(t *testing.T) {
	ref := objref.Ref{Kind: "ConfigMap", Namespace: "litellm-test", Name: "usage-hook"}
	mark := TrackingMark(annotationTracking, "litellm-test", ref)
	id := mark.Annotations[argoapp.AnnotationTrackingID]
	if id != "litellm-test:/ConfigMap:litellm-test/usage-hook" {
		t.Fatalf("tracking id %q", id)
	}
	others := map[string]string{"team": "sre"}
	// The marked configuration's JSON gains `,"argocd.argoproj.io/tracking-id":"<id>"`
	// inside its existing annotations.
	growth := len(`,"` + argoapp.AnnotationTrackingID + `":"` + id + `"`)
	fixed := len("team") + len("sre") + len(argoapp.AnnotationTrackingID) + len(id) + len(budget.LastAppliedKey) + growth
	atCap := budget.AnnotationCap - fixed

	for _, tc := range []struct {
		name      string
		applied   int
		wantBytes int
		wantFails bool
	}{
		{"one byte under the cap", atCap - 1, budget.AnnotationCap - 1, false},
		{"exactly the cap", atCap, budget.AnnotationCap, false},
		{"one byte over the cap", atCap + 1, budget.AnnotationCap + 1, true},
		{"the incident: Git copy 4.8 KB larger", 257270 - 60 + 4800, 257270 - 60 + 4800 + fixed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := handApplied(1000, others) // the old last-applied's size does not matter: it is replaced
			got := PredictCSAMigration(o, SyncTarget{AppliedBytes: tc.applied, Annotations: others, Mark: mark})
			if !got.Runs || got.Bytes != tc.wantBytes || got.Fails != tc.wantFails {
				t.Errorf("PredictCSAMigration = %+v, want runs, %d B, fails %v", got, tc.wantBytes, tc.wantFails)
			}
		})
	}
}

func TestCSAMigrationDoesNotRun(t *testing.T) {
	o := handApplied(250000, nil)
	o.Managers = []discover.Manager{{Manager: "kubectl", Operation: "Apply"}, {Manager: "kubectl-last-applied", Operation: "Apply"}}
	if got := PredictCSAMigration(o, SyncTarget{AppliedBytes: 300000}); got.Runs || got.Fails || got.Bytes != 0 {
		t.Errorf("server-side applied object: %+v, want no migration", got)
	}
	o = handApplied(250000, nil)
	if got := PredictCSAMigration(o, SyncTarget{}); !got.Runs || got.Fails || got.Bytes != 0 {
		t.Errorf("unknown configuration size: %+v, want runs but nothing predicted", got)
	}
}

// TestCSAMigrationJSONGrowth checks the JSON arithmetic against encoding
// the marked configuration: the predicted last-applied size must equal
// budget.AppliedConfig of the manifest with Argo CD's marks set in it.
func TestCSAMigrationJSONGrowth(t *testing.T) {
	ref := objref.Ref{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "api"}
	withID := argoapp.Tracking{Method: argoapp.TrackingAnnotationAndLabel, InstanceLabelKey: "app.kubernetes.io/instance", InstallationID: "prod-1"}
	label := argoapp.Tracking{Method: argoapp.TrackingLabel, InstanceLabelKey: "argocd.argoproj.io/instance"}
	for _, tc := range []struct {
		name        string
		annotations map[string]any
		labels      map[string]any
		tracking    argoapp.Tracking
	}{
		{"no annotations", nil, nil, annotationTracking},
		{"other annotations", map[string]any{"a": "b", "note": `quote " and <tag> & é`}, nil, annotationTracking},
		{"only a last-applied", map[string]any{budget.LastAppliedKey: "{}"}, nil, annotationTracking},
		{"a stale tracking id replaced", map[string]any{argoapp.AnnotationTrackingID: "old:apps/Deployment:web/api"}, nil, annotationTracking},
		{"annotation+label and installation id", map[string]any{"a": "b"}, map[string]any{"app": "api"}, withID},
		{"label tracking, no labels", nil, nil, label},
		{"label tracking, label replaced", nil, map[string]any{"argocd.argoproj.io/instance": "someone-else"}, label},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := func(ann, labels map[string]any) map[string]any {
				meta := map[string]any{"name": "api"}
				if ann != nil {
					meta["annotations"] = ann
				}
				if labels != nil {
					meta["labels"] = labels
				}
				return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": map[string]any{"replicas": int64(2)}}
			}
			mark := TrackingMark(tc.tracking, "api", ref)
			plain, err := budget.AppliedConfig(manifest(tc.annotations, tc.labels), "web")
			if err != nil {
				t.Fatal(err)
			}
			marked, err := budget.AppliedConfig(manifest(setAll(tc.annotations, mark.Annotations), setAll(tc.labels, mark.Labels)), "web")
			if err != nil {
				t.Fatal(err)
			}
			growth := jsonGrowth("annotations", strings2(tc.annotations), mark.Annotations) + jsonGrowth("labels", strings2(tc.labels), mark.Labels)
			if len(plain)+growth != len(marked) {
				t.Errorf("predicted %d+%d = %d B, encoding gives %d B:\n%s", len(plain), growth, len(plain)+growth, len(marked), marked)
			}
		})
	}
}

func setAll(base map[string]any, add map[string]string) map[string]any {
	if base == nil && len(add) == 0 {
		return nil
	}
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}

func strings2(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.(string)
	}
	return out
}

func TestTrackingMark(t *testing.T) {
	ref := objref.Ref{Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	for _, tc := range []struct {
		tracking    argoapp.Tracking
		annotations string
		labels      string
	}{
		{annotationTracking, "argocd.argoproj.io/tracking-id=app:/ConfigMap:ns/cm", ""},
		{argoapp.Tracking{Method: argoapp.TrackingLabel}, "", "app.kubernetes.io/instance=app"},
		{argoapp.Tracking{Method: argoapp.TrackingAnnotationAndLabel, InstanceLabelKey: "team/app", InstallationID: "i1"},
			"argocd.argoproj.io/installation-id=i1,argocd.argoproj.io/tracking-id=app:/ConfigMap:ns/cm", "team/app=app"},
	} {
		m := TrackingMark(tc.tracking, "app", ref)
		if got := flat(m.Annotations); got != tc.annotations {
			t.Errorf("%s: annotations %q, want %q", tc.tracking.Method, got, tc.annotations)
		}
		if got := flat(m.Labels); got != tc.labels {
			t.Errorf("%s: labels %q, want %q", tc.tracking.Method, got, tc.labels)
		}
	}
}

func flat(m map[string]string) string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestCSAMigrationRenamed: an object whose first-sync migration writes
// exactly the cap under its plan's Application name passes it under the
// name an ApplicationSet generates (<cluster>-<app>): the prefix is in the
// tracking id (twice: the annotation and its copy inside last-applied) and
// the instance label (inside last-applied). Renamed must give the bytes
// PredictCSAMigration gives with the generated name's mark, for every
// tracking method, including annotation+label's truncated label.
func TestCSAMigrationRenamed(t *testing.T) {
	ref := objref.Ref{Kind: "ConfigMap", Namespace: "litellm-test", Name: "usage-hook"}
	others := map[string]string{"team": "sre"}
	const app, prefix = "adopt-litellm-test", "eu-west-1-"
	long := strings.Repeat("c", 50) + "-" // 51 + 18 > 63: annotation+label cuts the label
	for _, tc := range []struct {
		name     string
		tracking argoapp.Tracking
		cluster  string
		// grows is what the generated name adds, from the rule's parts.
		grows int
	}{
		{"annotation", annotationTracking, prefix, 2 * len(prefix)},
		{"label", argoapp.Tracking{Method: argoapp.TrackingLabel}, prefix, len(prefix)},
		{"annotation+label", argoapp.Tracking{Method: argoapp.TrackingAnnotationAndLabel}, prefix, 3 * len(prefix)},
		{"annotation+label, label cut at 63", argoapp.Tracking{Method: argoapp.TrackingAnnotationAndLabel}, long,
			2*len(long) + len(argoapp.TruncatedLabel(long+app)) - len(app)},
		{"annotation with an installation id", argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstallationID: "prod-1"}, prefix, 2 * len(prefix)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := handApplied(1000, others)
			predict := func(name string, applied int) CSAMigration {
				return PredictCSAMigration(o, SyncTarget{AppliedBytes: applied, Annotations: others, Mark: TrackingMark(tc.tracking, name, ref)})
			}
			// Size the configuration so the plan's name lands exactly on the cap.
			probe := predict(app, 100000)
			applied := 100000 + budget.AnnotationCap - probe.Bytes
			atCap := predict(app, applied)
			if atCap.Bytes != budget.AnnotationCap || atCap.Fails {
				t.Fatalf("under %s: %+v, want exactly %d B, not failing", app, atCap, budget.AnnotationCap)
			}
			generated := tc.cluster + app
			want := predict(generated, applied)
			got := atCap.Renamed(tc.tracking, ref, app, generated)
			if got != want {
				t.Errorf("Renamed = %+v, PredictCSAMigration with %s = %+v", got, generated, want)
			}
			if got.Bytes != budget.AnnotationCap+tc.grows || !got.Fails {
				t.Errorf("under %s: %d B (fails %v), want %d B over the cap", generated, got.Bytes, got.Fails, budget.AnnotationCap+tc.grows)
			}
		})
	}
	if got := (CSAMigration{Runs: true}).Renamed(annotationTracking, ref, app, prefix+app); got.Bytes != 0 || got.Fails {
		t.Errorf("an unknown size stays unknown: %+v", got)
	}
}

// TestTruncatedLabel: Argo CD's rule for annotation+label's label.
func TestTruncatedLabel(t *testing.T) {
	for in, want := range map[string]string{
		"short":                           "short",
		strings.Repeat("a", 63):           strings.Repeat("a", 63),
		strings.Repeat("a", 64):           strings.Repeat("a", 63),
		strings.Repeat("a", 61) + "--b-c": strings.Repeat("a", 61),
	} {
		if got := argoapp.TruncatedLabel(in); got != want {
			t.Errorf("TruncatedLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
