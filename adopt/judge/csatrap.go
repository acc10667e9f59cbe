package judge

import (
	"encoding/json"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/argoapp"
)

// CSAManager is the field manager of client-side `kubectl apply`. Argo CD's
// ClientSideApplyMigration runs for a live object that has it.
const CSAManager = "kubectl-client-side-apply"

// CSAMigration predicts the client-side apply that Argo CD 3.1.0 to 3.3.1
// performs, as manager kubectl-client-side-apply, before the first
// server-side sync of an object that manager still owns
// (ClientSideApplyMigration, on by default). That apply writes the synced
// configuration into last-applied-configuration next to the other
// annotations. Whether a version does this is argoapp.CSAMigrationTrap.
type CSAMigration struct {
	// Runs is set when the object has the kubectl-client-side-apply
	// manager, so the migration would run.
	Runs bool `json:"runs" yaml:"runs"`
	// Bytes is the annotation total after that apply; 0 when it does not
	// run or the configuration's size is unknown.
	Bytes int `json:"bytes,omitempty" yaml:"bytes,omitempty"`
	// Fails is set when Bytes exceeds the cap: the first sync would fail
	// with "Too long: may not be more than 262144 bytes".
	Fails bool `json:"fails" yaml:"fails"`
}

// SyncTarget is the configuration Argo CD applies: the Git manifest when the
// object is in Git, otherwise the live object's configuration (which apply
// exports).
type SyncTarget struct {
	// AppliedBytes is the size of the last-applied value kubectl would
	// write for it before Argo CD marks it (budget.AppliedConfig of the
	// manifest, or discover.AppliedBytes of the live object); 0 when
	// unknown.
	AppliedBytes int
	// Annotations and Labels are the configuration's own; a
	// last-applied-configuration among them is ignored.
	Annotations, Labels map[string]string
	// Mark is what Argo CD adds to it before applying (TrackingMark).
	Mark Mark
}

// Mark is the tracking Argo CD writes into every object it syncs.
type Mark struct {
	Annotations, Labels map[string]string
}

// TrackingMark is what Argo CD adds to an object of Application app under
// tracking t: the tracking id (annotation methods), the instance label
// (label methods) and the installation id when argocd-cm sets one. app is
// the Application's name in Argo CD's own namespace, as apply creates it.
func TrackingMark(t argoapp.Tracking, app string, r objref.Ref) Mark {
	m := Mark{Annotations: map[string]string{}, Labels: map[string]string{}}
	if t.Method == argoapp.TrackingAnnotation || t.Method == argoapp.TrackingAnnotationAndLabel || t.Method == "" {
		id := argoapp.TrackingID{AppName: app, Ref: r}
		m.Annotations[argoapp.AnnotationTrackingID] = id.String()
	}
	if t.Method == argoapp.TrackingLabel || t.Method == argoapp.TrackingAnnotationAndLabel {
		key := t.InstanceLabelKey
		if key == "" {
			key = argoapp.DefaultInstanceLabelKey
		}
		m.Labels[key] = app
		if t.Method == argoapp.TrackingAnnotationAndLabel {
			m.Labels[key] = argoapp.TruncatedLabel(app)
		}
	}
	if t.InstallationID != "" {
		m.Annotations[argoapp.AnnotationInstallationID] = t.InstallationID
	}
	return m
}

// PredictCSAMigration computes CSAMigration for live object o synced to
// target. The annotations after that apply are o's annotations without
// last-applied, with the target's and the mark's set over them, plus a new
// last-applied holding the marked target. Annotations the old last-applied
// lists but the target drops would be removed by the three-way merge; they
// are still counted, so the prediction errs towards failing.
func PredictCSAMigration(o *discover.Object, target SyncTarget) CSAMigration {
	m := CSAMigration{Runs: CSAMigrationRuns(o)}
	if !m.Runs || target.AppliedBytes <= 0 {
		return m
	}
	total := o.Budget.AnnotationBytes - o.Budget.LastAppliedBytes
	for k, v := range overlay(target.Annotations, target.Mark.Annotations) {
		if old, ok := o.Annotations[k]; ok {
			total -= len(k) + len(old)
		}
		total += len(k) + len(v)
	}
	applied := target.AppliedBytes +
		jsonGrowth("annotations", target.Annotations, target.Mark.Annotations) +
		jsonGrowth("labels", target.Labels, target.Mark.Labels)
	m.Bytes = total + len(budget.LastAppliedKey) + applied
	m.Fails = m.Bytes > budget.AnnotationCap
	return m
}

// Renamed is m for the same object and target when Argo CD names the
// Application to instead of from (an ApplicationSet's generated name): the
// tracking mark holds the name, in the tracking id annotation (counted once
// among the annotations and once inside last-applied) and the instance
// label (inside last-applied), so PredictCSAMigration's bytes change by the
// marks' difference and nothing else.
func (m CSAMigration) Renamed(t argoapp.Tracking, r objref.Ref, from, to string) CSAMigration {
	if !m.Runs || m.Bytes <= 0 {
		return m
	}
	a, b := TrackingMark(t, from, r), TrackingMark(t, to, r)
	for k, v := range b.Annotations {
		m.Bytes += len(v) - len(a.Annotations[k]) + jsonLen(v) - jsonLen(a.Annotations[k])
	}
	for k, v := range b.Labels {
		m.Bytes += jsonLen(v) - jsonLen(a.Labels[k])
	}
	m.Fails = m.Bytes > budget.AnnotationCap
	return m
}

// CSAMigrationRuns reports whether the migration would run for o: it has
// the kubectl-client-side-apply manager. When it would not, the prediction
// is the zero CSAMigration with nothing to compute.
func CSAMigrationRuns(o *discover.Object) bool {
	for _, mf := range o.Managers {
		if mf.Manager == CSAManager {
			return true
		}
	}
	return false
}

// overlay is base with add set over it, last-applied left out.
func overlay(base, add map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	delete(out, budget.LastAppliedKey)
	return out
}

// jsonGrowth is how many bytes setting add in metadata.<field> adds to
// the compact JSON of a configuration whose metadata.<field> is have. A
// field that was absent (or held only last-applied) gains
// `"field":{...}` and the comma before the next metadata key (metadata
// always has a name).
func jsonGrowth(field string, have, add map[string]string) int {
	n := 0
	count := 0
	for k := range have {
		if k != budget.LastAppliedKey {
			count++
		}
	}
	for k, v := range add {
		if old, ok := have[k]; ok && k != budget.LastAppliedKey {
			n += jsonLen(v) - jsonLen(old)
			continue
		}
		if count == 0 {
			n += jsonLen(field) + len(":{}") + len(",")
		} else {
			n += len(",")
		}
		n += jsonLen(k) + len(":") + jsonLen(v)
		count++
	}
	return n
}

// jsonLen is the length of s as a JSON string, quotes and escapes included.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}
