package finalize

import (
	"fmt"
	"strings"
)

// Report is the outcome of one finalize (or undo) run.
type Report struct {
	DryRun bool `json:"dryRun" yaml:"dryRun"`
	Undo   bool `json:"undo,omitempty" yaml:"undo,omitempty"`
	// ArgoCD says how Applications were read and which Argo CD it was.
	ArgoCD  *ArgoCD     `json:"argocd,omitempty" yaml:"argocd,omitempty"`
	Apps    []AppReport `json:"applications" yaml:"applications"`
	Objects []Result    `json:"objects" yaml:"objects"`
	// Releases are the Helm releases whose records were retired, or would
	// be (--retire-helm-records), or restored (--undo), by name only.
	Releases []ReleaseReport `json:"helmReleases,omitempty" yaml:"helmReleases,omitempty"`
	// RetireNote says why --retire-helm-records had nothing to do.
	RetireNote string `json:"retireNote,omitempty" yaml:"retireNote,omitempty"`
	Total      Total  `json:"total" yaml:"total"`
}

// ArgoCD is how finalize talked to Argo CD.
type ArgoCD struct {
	// Mode is "kubernetes" (Application resources read through the
	// Kubernetes API) or "api" (through argocd-server).
	Mode string `json:"mode" yaml:"mode"`
	// Server is argocd-server's host:port in API mode, or in Kubernetes
	// mode when syncs are started through it (Options.SyncOnly).
	Server string `json:"server,omitempty" yaml:"server,omitempty"`
	// Version is the Argo CD version, "" when unknown; VersionSource says
	// where it was learnt, or why it is unknown.
	Version       string `json:"version,omitempty" yaml:"version,omitempty"`
	VersionSource string `json:"versionSource" yaml:"versionSource"`
}

func (a *ArgoCD) String() string {
	how := "Applications read through the Kubernetes API"
	if a.Mode == "api" {
		how = "Applications read through argocd-server at " + a.Server + " (Argo CD API mode)"
	} else if a.Server != "" {
		how += ", syncs started through argocd-server at " + a.Server
	}
	v := "Argo CD version unknown (" + a.VersionSource + ")"
	if a.Version != "" {
		v = "Argo CD " + a.Version + " (from " + a.VersionSource + ")"
	}
	return v + "; " + how
}

// AppReport is one Application's state when finalize looked.
type AppReport struct {
	Name   string `json:"name" yaml:"name"`
	Sync   string `json:"sync,omitempty" yaml:"sync,omitempty"`
	Health string `json:"health,omitempty" yaml:"health,omitempty"`
	// Ready is true when the first sync succeeded and health is accepted.
	Ready bool `json:"ready" yaml:"ready"`
	// Waiting says what was still missing when the wait ended.
	Waiting string `json:"waiting,omitempty" yaml:"waiting,omitempty"`
	// Problems explain an unhealthy Application, one line per object or pod.
	Problems []string `json:"problems,omitempty" yaml:"problems,omitempty"`
	// SyncStarted is true when finalize started a sync (set the
	// Application's .operation, or asked argocd-server), with SyncOptions.
	SyncStarted bool     `json:"syncStarted,omitempty" yaml:"syncStarted,omitempty"`
	SyncOptions []string `json:"syncOptions,omitempty" yaml:"syncOptions,omitempty"`
	// Notes are what to do next by hand once the Application is ready (a
	// Helm release's records, which adopt never deletes).
	Notes []string `json:"notes,omitempty" yaml:"notes,omitempty"`
	// Settle is whether it stayed Synced over the settle window after its
	// cleanup (nil when not watched: not ready, a dry run, or --settle 0).
	Settle *Settle `json:"settle,omitempty" yaml:"settle,omitempty"`
}

// Total sums the objects.
type Total struct {
	Objects   int `json:"objects" yaml:"objects"`
	Finalized int `json:"finalized" yaml:"finalized"`
	Already   int `json:"alreadyFinalized" yaml:"alreadyFinalized"`
	Would     int `json:"wouldFinalize" yaml:"wouldFinalize"`
	Restored  int `json:"restored" yaml:"restored"`
	Skipped   int `json:"skipped" yaml:"skipped"`
	Failed    int `json:"failed" yaml:"failed"`
	// BytesBefore and BytesAfter are the annotation bytes of all objects.
	BytesBefore int `json:"annotationBytesBefore" yaml:"annotationBytesBefore"`
	BytesAfter  int `json:"annotationBytesAfter" yaml:"annotationBytesAfter"`
	// RecordsRetired and RecordsRestored count Helm release records.
	RecordsRetired  int `json:"helmRecordsRetired,omitempty" yaml:"helmRecordsRetired,omitempty"`
	RecordsRestored int `json:"helmRecordsRestored,omitempty" yaml:"helmRecordsRestored,omitempty"`
}

// Add appends r and counts it.
func (rep *Report) Add(r Result) {
	rep.Objects = append(rep.Objects, r)
	t := &rep.Total
	t.Objects++
	switch r.Status {
	case StatusFinalized:
		t.Finalized++
	case StatusAlready:
		t.Already++
	case StatusWould:
		t.Would++
	case StatusRestored:
		t.Restored++
	case StatusSkipped:
		t.Skipped++
	case StatusFailed:
		t.Failed++
	}
	if r.Status != StatusSkipped && r.Status != StatusFailed && r.Status != StatusLeftOut {
		t.BytesBefore += r.Before.AnnotationBytes
		t.BytesAfter += r.After.AnnotationBytes
	}
}

// AddRelease appends a Helm release's outcome and counts its records.
func (rep *Report) AddRelease(r ReleaseReport) {
	rep.Releases = append(rep.Releases, r)
	for _, rec := range r.Records {
		switch rec.Status {
		case StatusRetired:
			rep.Total.RecordsRetired++
		case StatusRestored:
			rep.Total.RecordsRestored++
		}
	}
}

// ReleasesIncomplete lists the Helm releases whose records were to be
// retired or restored and were not all.
func (rep *Report) ReleasesIncomplete() []string {
	var out []string
	for _, r := range rep.Releases {
		bad := r.Status == StatusRefused || r.Status == StatusFailed || r.Status == StatusSkipped
		for _, rec := range r.Records {
			bad = bad || rec.Status == StatusFailed
		}
		if bad {
			out = append(out, "Helm release "+r.String())
		}
	}
	return out
}

// Incomplete lists the objects that were skipped or failed.
func (rep *Report) Incomplete() []string {
	var out []string
	for _, r := range rep.Objects {
		if r.Status == StatusSkipped || r.Status == StatusFailed {
			out = append(out, r.Object)
		}
	}
	return out
}

// Counts says how many objects ended how, for the report's last line.
func (rep *Report) Counts() string {
	t := rep.Total
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(t.Finalized, "finalized")
	add(t.Already, "already finalized")
	add(t.Would, "would be finalized")
	add(t.Restored, "restored")
	add(t.Skipped, "skipped")
	add(t.Failed, "failed")
	add(t.RecordsRetired, "Helm records retired")
	add(t.RecordsRestored, "Helm records restored")
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}
