// Package status owns `adopt status`: where each object of one or more
// adoption plans stands on its way under Argo CD, and how much of the
// estate Argo CD tracks. It reads (collect.go: the live objects, the
// Applications, the GitOps repo's branches, the pull requests, finalize's
// journal; coverage.go: every user object, counted the way plan counts),
// judges each object's stage from those facts (judge.go, no I/O), and keeps
// a history of small snapshots (history.go) for the report's charts.
//
// It never writes to the cluster, to Git or to the pull-request host, never
// prints (printers render its Report), and never keeps a Secret's values:
// only annotation sizes and tracking marks are read from live objects.
package status

import (
	"fmt"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/gitops"
)

// Stage is how far one object got.
type Stage string

// The stages, in order; Regressed is a finalized object that slid back.
const (
	StagePlanned    Stage = "planned"
	StageInReview   Stage = "in-review"
	StageMerged     Stage = "merged"
	StageAppPresent Stage = "application-present"
	StageSynced     Stage = "synced-healthy"
	StageFinalized  Stage = "finalized"
	StageRegressed  Stage = "regressed"
)

// Stages lists every stage in order.
var Stages = []Stage{StagePlanned, StageInReview, StageMerged, StageAppPresent, StageSynced, StageFinalized, StageRegressed}

// Title is the stage as people read it.
func (s Stage) Title() string {
	switch s {
	case StagePlanned:
		return "planned"
	case StageInReview:
		return "in review"
	case StageMerged:
		return "merged"
	case StageAppPresent:
		return "Application present"
	case StageSynced:
		return "synced and healthy"
	case StageFinalized:
		return "finalized"
	case StageRegressed:
		return "regressed"
	}
	return string(s)
}

// rank orders stages for an Application's row: its least advanced object.
func (s Stage) rank() int {
	for i, x := range Stages {
		if x == s {
			return i
		}
	}
	return -1
}

// Report is one status run.
type Report struct {
	Time  time.Time `json:"time" yaml:"time"`
	Plans []PlanRef `json:"plans" yaml:"plans"`
	// Coverage is nil when it was not counted (--no-coverage).
	Coverage *Coverage `json:"coverage,omitempty" yaml:"coverage,omitempty"`
	Counts   Counts    `json:"counts" yaml:"counts"`
	// Stuck counts objects that will not move on without someone acting.
	Stuck int `json:"stuck" yaml:"stuck"`
	// Clusters are the counts per cluster of a fleet plan, in context
	// order (empty for plans of their own).
	Clusters     []ClusterCounts `json:"clusters,omitempty" yaml:"clusters,omitempty"`
	Objects      []Object        `json:"objects" yaml:"objects"`
	Applications []App           `json:"applications" yaml:"applications"`
	// Notes say what could not be read, and so what the stages rest on.
	Notes []string `json:"notes,omitempty" yaml:"notes,omitempty"`
	// History are the recorded snapshots, oldest first (this run's last
	// when it was recorded). Printers use it for the charts.
	History []Snapshot `json:"-" yaml:"-"`
}

// ClusterCounts are one fleet cluster's objects per stage.
type ClusterCounts struct {
	Cluster string `json:"cluster" yaml:"cluster"`
	Counts  Counts `json:"counts" yaml:"counts"`
	Stuck   int    `json:"stuck" yaml:"stuck"`
}

// PlanRef names a plan the report covers.
type PlanRef struct {
	ID      string `json:"id" yaml:"id"`
	File    string `json:"file" yaml:"file"`
	Cluster string `json:"cluster" yaml:"cluster"`
	// Context is the fleet plan's cluster the plan is ("" for a plan of
	// its own).
	Context string `json:"context,omitempty" yaml:"context,omitempty"`
	// Branch is the adoption branch, Base the branch it merges into.
	Branch string `json:"branch" yaml:"branch"`
	Base   string `json:"base,omitempty" yaml:"base,omitempty"`
	// Journal is finalize's journal read for it ("" when there is none).
	Journal string `json:"journal,omitempty" yaml:"journal,omitempty"`
}

// Counts are objects per stage.
type Counts struct {
	Planned    int `json:"planned" yaml:"planned"`
	InReview   int `json:"inReview" yaml:"inReview"`
	Merged     int `json:"merged" yaml:"merged"`
	AppPresent int `json:"applicationPresent" yaml:"applicationPresent"`
	Synced     int `json:"syncedHealthy" yaml:"syncedHealthy"`
	Finalized  int `json:"finalized" yaml:"finalized"`
	Regressed  int `json:"regressed" yaml:"regressed"`
}

// Of is the count of stage s.
func (c Counts) Of(s Stage) int {
	switch s {
	case StagePlanned:
		return c.Planned
	case StageInReview:
		return c.InReview
	case StageMerged:
		return c.Merged
	case StageAppPresent:
		return c.AppPresent
	case StageSynced:
		return c.Synced
	case StageFinalized:
		return c.Finalized
	case StageRegressed:
		return c.Regressed
	}
	return 0
}

func (c *Counts) add(s Stage) {
	switch s {
	case StagePlanned:
		c.Planned++
	case StageInReview:
		c.InReview++
	case StageMerged:
		c.Merged++
	case StageAppPresent:
		c.AppPresent++
	case StageSynced:
		c.Synced++
	case StageFinalized:
		c.Finalized++
	case StageRegressed:
		c.Regressed++
	}
}

// Total is every object counted.
func (c Counts) Total() int {
	n := 0
	for _, s := range Stages {
		n += c.Of(s)
	}
	return n
}

// Object is one planned object's stage.
type Object struct {
	Ref       string `json:"ref" yaml:"ref"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Cluster is the fleet plan's cluster (context) it is on ("" for a
	// plan of its own).
	Cluster string `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	Plan    string `json:"plan" yaml:"plan"`
	App     string `json:"app" yaml:"app"`
	Stage   Stage  `json:"stage" yaml:"stage"`
	// Stuck is set when the object will not move on by waiting.
	Stuck bool `json:"stuck,omitempty" yaml:"stuck,omitempty"`
	// Reason is one line on where it stands or why it is stuck; Next the
	// command (or step) that moves it on ("" when finalized).
	Reason string `json:"reason,omitempty" yaml:"reason,omitempty"`
	Next   string `json:"next,omitempty" yaml:"next,omitempty"`
	// FinalizedAt is when finalize's journal says it removed the
	// annotation (zero when it did not).
	FinalizedAt time.Time `json:"finalizedAt,omitzero" yaml:"finalizedAt,omitempty"`
	// Revision is the Application's last synced revision.
	Revision string `json:"revision,omitempty" yaml:"revision,omitempty"`
	// Budget is the live object's annotation budget (the plan's when the
	// object could not be read).
	Budget budget.Budget `json:"budget" yaml:"budget"`
	Level  budget.Level  `json:"level" yaml:"level"`
}

// App is one proposed Application's row.
type App struct {
	Name string `json:"name" yaml:"name"`
	// Cluster is the fleet plan's cluster (context) it deploys to ("" for
	// a plan of its own).
	Cluster string `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	Plan    string `json:"plan" yaml:"plan"`
	// Stage is its least advanced object's stage.
	Stage   Stage            `json:"stage" yaml:"stage"`
	Objects int              `json:"objects" yaml:"objects"`
	Branch  string           `json:"branch" yaml:"branch"`
	PR      *gitops.PRStatus `json:"pullRequest,omitempty" yaml:"pullRequest,omitempty"`
	// Present is true when the Application exists in the cluster.
	Present  bool   `json:"present" yaml:"present"`
	Sync     string `json:"sync,omitempty" yaml:"sync,omitempty"`
	Health   string `json:"health,omitempty" yaml:"health,omitempty"`
	Revision string `json:"revision,omitempty" yaml:"revision,omitempty"`
	// Ignore says what the plan records of its ignoreDifferences (written,
	// or turned off), and Ignored has one line per entry.
	Ignore  string   `json:"ignore,omitempty" yaml:"ignore,omitempty"`
	Ignored []string `json:"ignored,omitempty" yaml:"ignored,omitempty"`
}

// Coverage is how much of the estate Argo CD tracks: tracked objects of
// all user objects (what plan neither skips nor excludes).
type Coverage struct {
	Tracked int `json:"tracked" yaml:"tracked"`
	Objects int `json:"objects" yaml:"objects"`
	// Percent is Tracked/Objects, rounded down to one decimal.
	Percent    float64             `json:"percent" yaml:"percent"`
	Namespaces []NamespaceCoverage `json:"namespaces" yaml:"namespaces"`
	// Scope is the namespaces counted ("all namespaces", or a list).
	Scope string `json:"scope" yaml:"scope"`
}

// NamespaceCoverage is one namespace's coverage ("" is cluster-scoped).
type NamespaceCoverage struct {
	// Cluster is the fleet plan's cluster (context; "" for a plan of its
	// own).
	Cluster   string  `json:"cluster,omitempty" yaml:"cluster,omitempty"`
	Namespace string  `json:"namespace" yaml:"namespace"`
	Tracked   int     `json:"tracked" yaml:"tracked"`
	Objects   int     `json:"objects" yaml:"objects"`
	Percent   float64 `json:"percent" yaml:"percent"`
}

// Percent is n of total in %, rounded down to one decimal (0 of 0 is 0).
func Percent(n, total int) float64 {
	if total <= 0 {
		return 0
	}
	return float64(n*1000/total) / 10
}

// Failing is why the report fails --fail-on's kinds ("stuck",
// "regressed"): one phrase per kind it has, as "3 stuck"; none when it
// passes.
func (r *Report) Failing(kinds []string) []string {
	var why []string
	for _, k := range kinds {
		switch {
		case k == "stuck" && r.Stuck > 0:
			why = append(why, fmt.Sprintf("%d stuck", r.Stuck))
		case k == "regressed" && r.Counts.Regressed > 0:
			why = append(why, fmt.Sprintf("%d regressed", r.Counts.Regressed))
		}
	}
	return why
}
