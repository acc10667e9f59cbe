package overlay

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/objref"
)

// ProofError is an overlay that does not render to its cluster's
// manifests: which cluster, which object, and the first field where they
// differ (never a value).
type ProofError struct {
	Cluster string
	Object  objref.Ref
	// Path is the first differing field, as .data.key ("" when the
	// object is missing, extra, or the build failed).
	Path string
	Why  string
}

func (e *ProofError) Error() string {
	var b strings.Builder
	if e.Cluster != "" {
		fmt.Fprintf(&b, "cluster %s: ", e.Cluster)
	}
	if e.Object.Kind != "" {
		fmt.Fprintf(&b, "%s: ", e.Object)
	}
	b.WriteString(e.Why)
	if e.Path != "" {
		fmt.Fprintf(&b, " (first difference at %s)", e.Path)
	}
	return b.String()
}

// Prove builds each cluster's overlay of l with kustomize's own library
// and checks that it renders exactly the cluster's resources: each object
// equal byte for byte to the cluster's after normalisation (Normalize),
// none missing, none extra. The first cluster (in order) and object (by
// identity) that fails is a ProofError.
func (l *Layout) Prove(clusters []Cluster) error {
	for _, c := range clusters {
		dir := OverlayDir(c.Name)
		got, _, err := render(l.Files, dir)
		if err != nil {
			return &ProofError{Cluster: c.Name, Why: "kustomize build " + dir + " fails: " + oneLine(err.Error())}
		}
		want := map[objref.Ref]*object{}
		for file, b := range c.Resources {
			o, err := decode(file, b)
			if err != nil {
				return fmt.Errorf("overlay: cluster %s: %w", c.Name, err)
			}
			want[o.ref] = o
		}
		refs := make([]objref.Ref, 0, len(want)+len(got))
		for r := range want {
			refs = append(refs, r)
		}
		for r := range got {
			if want[r] == nil {
				refs = append(refs, r)
			}
		}
		sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
		for _, r := range refs {
			w, g := want[r], got[r]
			switch {
			case g == nil:
				return &ProofError{Cluster: c.Name, Object: r, Why: dir + " does not render it"}
			case w == nil:
				return &ProofError{Cluster: c.Name, Object: r, Why: dir + " renders it, and the cluster's manifests do not hold it"}
			case !bytes.Equal(w.norm, g.norm):
				return &ProofError{Cluster: c.Name, Object: r, Why: dir + " does not render it as the cluster holds it", Path: firstDiff("", w.m, g.m)}
			}
		}
	}
	return nil
}
