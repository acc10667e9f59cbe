// Package plan owns the AdoptionPlan: the reviewable document that `adopt
// plan` writes and `apply` and `finalize` read. It builds a plan from what
// discovery collected and the judge decided, and keeps its ordering stable so
// the same cluster always gives the same bytes. It does no I/O of its own
// beyond encoding and decoding.
package plan

import (
	"sort"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/argoapp"
)

// APIVersion and Kind identify the plan document.
const (
	APIVersion = "adopt.dev/v1alpha1"
	Kind       = "AdoptionPlan"
)

// Plan is the AdoptionPlan document.
type Plan struct {
	APIVersion string           `json:"apiVersion" yaml:"apiVersion"`
	Kind       string           `json:"kind" yaml:"kind"`
	Cluster    Cluster          `json:"cluster" yaml:"cluster"`
	Tracking   argoapp.Tracking `json:"tracking" yaml:"tracking"`
	Summary    Summary          `json:"summary" yaml:"summary"`
	// Applications are the proposed Argo CD Applications; each names its
	// objects by Object.Ref.
	Applications []Application `json:"applications" yaml:"applications"`
	Objects      []Object      `json:"objects" yaml:"objects"`
	Skipped      []Skipped     `json:"skipped,omitempty" yaml:"skipped,omitempty"`
	NotScanned   []NotScanned  `json:"notScanned,omitempty" yaml:"notScanned,omitempty"`
}

// Cluster names the cluster a plan was made for.
type Cluster struct {
	Server    string `json:"server" yaml:"server"`
	Context   string `json:"context,omitempty" yaml:"context,omitempty"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
}

// Summary counts the plan's findings.
type Summary struct {
	Objects    int `json:"objects" yaml:"objects"`
	AtRisk     int `json:"atRisk" yaml:"atRisk"`
	Critical   int `json:"critical" yaml:"critical"`
	Warning    int `json:"warning" yaml:"warning"`
	Skipped    int `json:"skipped" yaml:"skipped"`
	NotScanned int `json:"notScanned" yaml:"notScanned"`
	Tracked    int `json:"tracked" yaml:"tracked"`
}

// Object is one untracked object proposed for adoption.
type Object struct {
	Group      string        `json:"group" yaml:"group"`
	Version    string        `json:"version" yaml:"version"`
	Kind       string        `json:"kind" yaml:"kind"`
	Resource   string        `json:"resource" yaml:"resource"`
	Namespace  string        `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Name       string        `json:"name" yaml:"name"`
	Provenance string        `json:"provenance" yaml:"provenance"`
	Evidence   string        `json:"evidence" yaml:"evidence"`
	Managers   []string      `json:"managers,omitempty" yaml:"managers,omitempty"`
	DataBytes  int           `json:"dataBytes" yaml:"dataBytes"`
	Budget     budget.Budget `json:"budget" yaml:"budget"`
	Level      budget.Level  `json:"level" yaml:"level"`
	// App is the name of the proposed Application that adopts the object.
	App string `json:"app" yaml:"app"`
	// Git is where the object's manifest lives in the GitOps repo; nil when
	// it is not in Git (or no repo was given).
	Git *GitMatch `json:"git,omitempty" yaml:"git,omitempty"`
}

// GitMatch locates an object's manifest in the GitOps repo.
type GitMatch struct {
	Path string `json:"path" yaml:"path"`
	Line int    `json:"line" yaml:"line"`
}

// Application is one proposed Argo CD Application.
type Application struct {
	Name string `json:"name" yaml:"name"`
	// Namespace is the destination namespace ("" for cluster-scoped only).
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Project   string `json:"project" yaml:"project"`
	// SourcePath is the directory in the GitOps repo the Application syncs.
	SourcePath string `json:"sourcePath" yaml:"sourcePath"`
	// Include lists file names for directory.include when SourcePath holds
	// more than the adopted objects.
	Include []string `json:"include,omitempty" yaml:"include,omitempty"`
	// Objects are the adopted objects, by Object.Ref.
	Objects []string `json:"objects" yaml:"objects"`
}

// Ref is group/kind namespace/name, the way errors and reports name it.
func (o Object) Ref() string {
	gk := o.Kind
	if o.Group != "" {
		gk = o.Group + "/" + o.Kind
	}
	if o.Namespace == "" {
		return gk + " " + o.Name
	}
	return gk + " " + o.Namespace + "/" + o.Name
}

// Skipped is an object or type left out, with the reason.
type Skipped struct {
	Kind      string `json:"kind" yaml:"kind"`
	Group     string `json:"group,omitempty" yaml:"group,omitempty"`
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	// Name is empty when the whole type was skipped.
	Name   string `json:"name,omitempty" yaml:"name,omitempty"`
	Reason string `json:"reason" yaml:"reason"`
}

// NotScanned is a type that could not be listed.
type NotScanned struct {
	Type   string `json:"type" yaml:"type"`
	Reason string `json:"reason" yaml:"reason"`
}

// Build judges every collected object and assembles the plan.
func Build(res *discover.Result, t argoapp.Tracking, c Cluster) *Plan {
	p := &Plan{APIVersion: APIVersion, Kind: Kind, Cluster: c, Tracking: t}
	for _, s := range res.SkippedTypes {
		p.Skipped = append(p.Skipped, Skipped{Kind: s.Type.Kind, Group: s.Type.Group, Reason: s.Reason})
	}
	for _, f := range res.NotScanned {
		p.NotScanned = append(p.NotScanned, NotScanned{Type: f.Type, Reason: f.Reason})
	}
	for i := range res.Objects {
		o := &res.Objects[i]
		v := judge.Judge(o, t)
		switch {
		case v.Skip != "":
			p.Skipped = append(p.Skipped, Skipped{Kind: o.Type.Kind, Group: o.Type.Group, Namespace: o.Namespace, Name: o.Name, Reason: v.Skip})
			continue
		case v.TrackedBy != "":
			p.Summary.Tracked++
			continue
		}
		po := Object{
			Group: o.Type.Group, Version: o.Type.Version, Kind: o.Type.Kind, Resource: o.Type.Resource,
			Namespace: o.Namespace, Name: o.Name, Provenance: string(v.Provenance), Evidence: v.Evidence,
			DataBytes: o.DataBytes, Budget: o.Budget, Level: v.Level,
		}
		for _, m := range o.Managers {
			s := m.Manager + " (" + m.Operation
			if m.Subresource != "" {
				s += ", " + m.Subresource
			}
			po.Managers = append(po.Managers, s+")")
		}
		p.Objects = append(p.Objects, po)
	}
	p.Sort()
	p.Group()
	p.Summary.Objects = len(p.Objects)
	for _, o := range p.Objects {
		switch o.Level {
		case budget.LevelCritical:
			p.Summary.Critical++
		case budget.LevelWarning:
			p.Summary.Warning++
		}
	}
	p.Summary.AtRisk = p.Summary.Critical + p.Summary.Warning
	p.Summary.Skipped = len(p.Skipped)
	p.Summary.NotScanned = len(p.NotScanned)
	return p
}

// Sort puts every list of the plan in its canonical order.
func (p *Plan) Sort() {
	sort.SliceStable(p.Objects, func(i, j int) bool { return objectKey(p.Objects[i]) < objectKey(p.Objects[j]) })
	sort.SliceStable(p.Skipped, func(i, j int) bool {
		a, b := p.Skipped[i], p.Skipped[j]
		return a.Namespace+"\x00"+a.Group+"\x00"+a.Kind+"\x00"+a.Name < b.Namespace+"\x00"+b.Group+"\x00"+b.Kind+"\x00"+b.Name
	})
	sort.SliceStable(p.NotScanned, func(i, j int) bool { return p.NotScanned[i].Type < p.NotScanned[j].Type })
}

func objectKey(o Object) string {
	return o.Namespace + "\x00" + o.Group + "\x00" + o.Kind + "\x00" + o.Name
}
