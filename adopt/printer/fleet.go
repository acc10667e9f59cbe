package printer

import (
	"fmt"
	"io"
	"strings"

	"github.com/adopt-dev/adopt/adopt/fleet"
)

// Fleet writes a fleet plan's index: a table per cluster and the proposed
// ApplicationSets, or the index as JSON or YAML.
func Fleet(w io.Writer, ix *fleet.Index, f string) error {
	return buffered(w, func(w io.Writer) error { return fleetReport(w, ix, f) })
}

func fleetReport(w io.Writer, ix *fleet.Index, f string) error {
	switch f {
	case "json":
		return writeJSON(w, ix)
	case "yaml":
		return writeYAML(w, ix)
	case "", "table":
	default:
		return fmt.Errorf("unknown output format %q for a fleet plan: use table, json or yaml", f)
	}
	tw := newTabwriter(w)
	fmt.Fprintln(tw, "CLUSTER\tSERVER\tDESTINATION\tPLAN")
	for _, c := range ix.Clusters {
		what := c.Plan + " (" + c.PlanID + ")"
		if c.NotScanned != "" {
			what = "not scanned: " + c.NotScanned
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Context, dash(c.Server), dash(c.Destination), what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range ix.ApplicationSets {
		path := s.SourcePath
		if path == "" {
			path = "per-cluster paths"
		}
		fmt.Fprintf(w, "\nApplicationSet %s (namespace %s, %s) on %s:\n", s.Name, dash(s.Namespace), path, strings.Join(s.Clusters, ", "))
		for _, o := range s.Objects {
			fmt.Fprintf(w, "  %s\n", o)
		}
	}
	for _, s := range ix.Separate {
		fmt.Fprintf(w, "\n%s\n", s)
	}
	return nil
}
