package helmrelease

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/objdiff"
)

// Difference is one way the chart rendered now differs from what the
// release recorded.
type Difference struct {
	// Object is kind namespace/name (group/kind for non-core groups).
	Object string `json:"object" yaml:"object"`
	// Text says what differs: "only in the release", "only in the chart",
	// or the field paths.
	Text string `json:"text" yaml:"text"`
	// Fields are the differing field paths in Text, as objdiff spells them
	// (spec.selector.matchLabels.app); none for an object on one side only.
	Fields []string `json:"fields,omitempty" yaml:"fields,omitempty"`
	// Kept is set for Secret data, which Argo CD keeps from live (the
	// Application ignores it and syncs with RespectIgnoreDifferences).
	Kept bool `json:"kept,omitempty" yaml:"kept,omitempty"`
	// Immutable is set when a changed field cannot be changed in place
	// (selectors, StatefulSet volumeClaimTemplates, Job templates...): the
	// sync would fail.
	Immutable bool `json:"immutable,omitempty" yaml:"immutable,omitempty"`
}

// Comparison is the release's stored manifest against the chart rendered.
type Comparison struct {
	Objects   int          `json:"objects" yaml:"objects"`
	Identical int          `json:"identical" yaml:"identical"`
	Diffs     []Difference `json:"differences,omitempty" yaml:"differences,omitempty"`
}

// Compare compares two manifests object by object, each pair by objdiff's
// one comparison. Objects without a namespace are in namespace ns.
func Compare(stored, rendered, ns string) (Comparison, error) {
	a, err := objects(stored, ns)
	if err != nil {
		return Comparison{}, fmt.Errorf("the release's manifest: %w", err)
	}
	b, err := objects(rendered, ns)
	if err != nil {
		return Comparison{}, fmt.Errorf("the rendered chart: %w", err)
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var c Comparison
	for _, k := range sortedKeys(keys) {
		c.Objects++
		x, inA := a[k]
		y, inB := b[k]
		switch {
		case !inA:
			c.Diffs = append(c.Diffs, Difference{Object: k, Text: "only in the chart rendered now: the first sync creates it"})
		case !inB:
			c.Diffs = append(c.Diffs, Difference{Object: k, Text: "only in the release: the chart no longer renders it (Argo CD will not manage it)"})
		default:
			fs := objdiff.Diff(x, y)
			if len(fs) == 0 {
				c.Identical++
				continue
			}
			kind, _ := x["kind"].(string)
			secret := kind == "Secret" && x["apiVersion"] == "v1"
			var kept, changed []string
			imm := false
			for _, f := range fs {
				if secret && (f.Path == "data" || strings.HasPrefix(f.Path, "data.")) {
					kept = append(kept, f.Path)
					continue
				}
				changed = append(changed, f.Path)
				imm = imm || immutable(kind, f.Path)
			}
			if len(kept) > 0 {
				c.Diffs = append(c.Diffs, Difference{Object: k, Kept: true, Fields: kept, Text: "Secret data differs (" + strings.Join(kept, ", ") + "): kept from live, the Application ignores it"})
			}
			if len(changed) > 0 {
				t := "differs at " + strings.Join(changed, ", ")
				if imm {
					t += ": an immutable field, the first sync would fail"
				}
				c.Diffs = append(c.Diffs, Difference{Object: k, Fields: changed, Text: t, Immutable: imm})
			}
		}
	}
	return c, nil
}

// immutable reports whether the field at path of kind cannot be updated.
func immutable(kind, p string) bool {
	switch kind {
	case "Deployment", "ReplicaSet", "DaemonSet":
		return strings.HasPrefix(p, "spec.selector")
	case "StatefulSet":
		return strings.HasPrefix(p, "spec.selector") || strings.HasPrefix(p, "spec.volumeClaimTemplates") || strings.HasPrefix(p, "spec.serviceName") || strings.HasPrefix(p, "spec.podManagementPolicy")
	case "Job":
		return strings.HasPrefix(p, "spec.selector") || strings.HasPrefix(p, "spec.template")
	case "Service":
		return strings.HasPrefix(p, "spec.clusterIP")
	case "PersistentVolumeClaim":
		return strings.HasPrefix(p, "spec.") && !strings.HasPrefix(p, "spec.resources")
	}
	return false
}

func objects(manifest, ns string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	for name, doc := range releaseutil.SplitManifests(manifest) {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(o) == 0 {
			continue
		}
		out[objectKey(o, ns)] = o
	}
	return out, nil
}

func objectKey(o map[string]any, ns string) string {
	kind, _ := o["kind"].(string)
	av, _ := o["apiVersion"].(string)
	if g, _, ok := strings.Cut(av, "/"); ok {
		kind = g + "/" + kind
	}
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	n, _ := meta["namespace"].(string)
	if n == "" {
		n = ns
	}
	return kind + " " + n + "/" + name
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
