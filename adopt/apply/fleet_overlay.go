package apply

import (
	"errors"
	"fmt"
	"path"

	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/overlay"
)

// layOut writes the exports of a set whose clean manifests differ between
// clusters as a kustomize base and one overlay per cluster, under the
// Application's own path: <path>/base holds what every cluster's manifests
// share, <path>/overlays/<cluster> that cluster's differences
// (adopt/overlay). Each overlay is rendered with kustomize and proven to
// give exactly the cluster's exports before anything is written; one that
// does not refuses the set, naming the cluster and the object. Each
// member's path becomes its overlay, its files the layout's, and its
// Application a kustomize source (no directory include or exclude: a
// Secret's placeholder is simply not a resource of the kustomization).
func layOut(set fleet.ApplicationSet, ms []member, ss *SetSummary) error {
	root := ms[0].path
	clusters := make([]overlay.Cluster, 0, len(ms))
	for _, m := range ms {
		if m.path != root {
			return &ContractError{msg: fmt.Sprintf("ApplicationSet %s: clusters %s and %s export to different paths (%s, %s) and their manifests differ, so one kustomize base cannot serve both: give them the same exportDir (adopt.yaml) and plan again, or apply the clusters' plans one at a time", set.Name, ms[0].dest, m.dest, root, m.path)}
		}
		c := overlay.Cluster{Name: m.dest, Resources: map[string][]byte{}, Others: map[string][]byte{}}
		for _, ref := range m.app.Objects {
			e := m.a.objs[ref]
			switch {
			case e.obj.Git != nil:
				return &ContractError{msg: fmt.Sprintf("ApplicationSet %s: the clusters' manifests differ, and %s is in Git at %s: a base and overlays are written only over adopt's own exports. Apply the clusters' plans one at a time", set.Name, ref, e.obj.Git.Path)}
			case e.data == nil || e.secret == export.SecretsSkip:
				// not written: a Secret left out
			case path.Dir(e.file) != root:
				return fmt.Errorf("ApplicationSet %s, cluster %s: %s was exported to %s, outside %s", set.Name, m.dest, ref, e.file, root)
			case e.secret == export.SecretsPlaceholder:
				c.Others[path.Base(e.file)] = e.data
			default:
				c.Resources[path.Base(e.file)] = e.data
			}
		}
		clusters = append(clusters, c)
	}
	l, err := overlay.Build(clusters)
	if err != nil {
		var pe *overlay.ProofError
		if errors.As(err, &pe) {
			return fmt.Errorf("ApplicationSet %s: the kustomize overlay of cluster %s is not exact, and nothing was written: %w. Remove what kustomize cannot render from the live object (an annotation kustomize keeps for itself), or plan each cluster with its own exportDir (adopt.yaml) and apply the plans one at a time", set.Name, pe.Cluster, err)
		}
		return fmt.Errorf("ApplicationSet %s: %w", set.Name, err)
	}
	files := make(map[string][]byte, len(l.Files))
	for f, b := range l.Files {
		files[path.Join(root, f)] = b
	}
	for i := range ms {
		m := &ms[i]
		m.files, m.path = files, path.Join(root, overlay.OverlayDir(m.dest))
		if m.spec.Source != nil {
			m.spec.Source.Directory = nil
		}
	}
	ss.Base = path.Join(root, overlay.Base)
	for _, p := range l.Patches {
		p.File = path.Join(root, p.File)
		ss.Patches = append(ss.Patches, p)
	}
	ss.Why = "the clean manifests differ between clusters: a kustomize base of what they share at " + ss.Base + ", and one overlay per cluster with its differences"
	return nil
}

// patchLines are the overlays' patches, one line each, for the commit
// message and the report.
func patchLines(ss SetSummary) []string {
	var out []string
	for _, p := range ss.Patches {
		what := map[overlay.Form]string{overlay.StrategicMerge: "strategic-merge patch", overlay.JSON6902: "JSON 6902 patch", overlay.Whole: "whole object (not in the base)"}[p.Form]
		out = append(out, fmt.Sprintf("overlay %s: %s, %s %s", p.Cluster, p.Object, what, p.File))
	}
	return out
}
