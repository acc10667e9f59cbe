package finalize

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Formats lists the -o values Report.Print accepts.
var Formats = []string{"table", "json", "yaml"}

// Report is the outcome of one finalize (or undo) run.
type Report struct {
	DryRun bool `json:"dryRun" yaml:"dryRun"`
	Undo   bool `json:"undo,omitempty" yaml:"undo,omitempty"`
	// ArgoCD says how Applications were read and which Argo CD it was.
	ArgoCD  *ArgoCD     `json:"argocd,omitempty" yaml:"argocd,omitempty"`
	Apps    []AppReport `json:"applications" yaml:"applications"`
	Objects []Result    `json:"objects" yaml:"objects"`
	Total   Total       `json:"total" yaml:"total"`
}

// ArgoCD is how finalize talked to Argo CD.
type ArgoCD struct {
	// Mode is "kubernetes" (Application resources read through the
	// Kubernetes API) or "api" (through argocd-server).
	Mode string `json:"mode" yaml:"mode"`
	// Server is argocd-server's host:port in API mode.
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

// Print writes the report in format f.
func (rep *Report) Print(w io.Writer, f string) error {
	switch f {
	case "", "table":
		return rep.Table(w)
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(rep)
	case "yaml":
		b, err := yaml.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q: use one of %s", f, strings.Join(Formats, ", "))
}

// Table writes the report for people: Applications, one row per object,
// reasons, patches in a dry run, and the totals.
func (rep *Report) Table(w io.Writer) error {
	if rep.ArgoCD != nil {
		fmt.Fprintln(w, rep.ArgoCD.String())
	}
	for _, a := range rep.Apps {
		state := "ready"
		if !a.Ready {
			state = "not ready: " + a.Waiting
		}
		fmt.Fprintf(w, "Application %s: sync %s, health %s, %s\n", a.Name, dash(a.Sync), dash(a.Health), state)
		if a.SyncStarted {
			fmt.Fprintf(w, "  sync started by adopt (%s, no prune)\n", strings.Join(a.SyncOptions, ", "))
		}
		for _, p := range a.Problems {
			fmt.Fprintln(w, "  "+p)
		}
	}
	if len(rep.Apps) > 0 {
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OBJECT\tAPPLICATION\tSTATUS\tANNOTATIONS BEFORE -> AFTER\t% CAP\tMANAGERS REMOVED")
	for _, r := range rep.Objects {
		bytes, pct := "-", "-"
		if r.Status != StatusSkipped && !(r.Status == StatusFailed && r.Before.AnnotationBytes == 0) {
			bytes = fmt.Sprintf("%s B -> %s B", thousands(r.Before.AnnotationBytes), thousands(r.After.AnnotationBytes))
			pct = fmt.Sprintf("%.1f%% -> %.1f%%", r.Before.PercentOfCap, r.After.PercentOfCap)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Object, dash(r.App), r.Status, bytes, pct, managers(r.Managers))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var reasons []string
	for _, r := range rep.Objects {
		if r.Reason != "" && r.Status != StatusAlready {
			reasons = append(reasons, fmt.Sprintf("  %s: %s", r.Status, r.Reason))
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintln(w, "\nNot done:")
		fmt.Fprintln(w, strings.Join(reasons, "\n"))
	}
	if rep.DryRun {
		fmt.Fprintln(w, "\nPatches (dry run, nothing sent; annotation values shown as size and digest):")
		for _, r := range rep.Objects {
			if len(r.Patch) == 0 {
				continue
			}
			b, err := json.Marshal(r.Patch)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s\n    %s\n", r.Object, b)
		}
	}
	t := rep.Total
	fmt.Fprintf(w, "\n%d objects: %s; annotations %s B -> %s B in total\n",
		t.Objects, rep.counts(), thousands(t.BytesBefore), thousands(t.BytesAfter))
	return nil
}

func (rep *Report) counts() string {
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
	if len(parts) == 0 {
		return "nothing to do"
	}
	return strings.Join(parts, ", ")
}

func managers(o Ownership) string {
	var parts []string
	parts = append(parts, o.Removed...)
	for _, m := range o.Migrated {
		parts = append(parts, "migrated "+m)
	}
	for _, m := range o.Trimmed {
		parts = append(parts, "trimmed "+m)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// thousands formats n with thousands separators: 262,144.
func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
