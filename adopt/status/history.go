package status

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// Snapshot is one recorded run: small (counts only, no object names), so a
// history of them is safe to commit.
type Snapshot struct {
	Time   time.Time `json:"time"`
	Plans  []string  `json:"plans"`
	Counts Counts    `json:"counts"`
	Stuck  int       `json:"stuck"`
	// Clusters are a fleet plan's counts per cluster (context), for the
	// report's per-cluster burndown.
	Clusters map[string]Counts `json:"clusters,omitempty"`
	// Coverage is nil when it was not counted.
	Coverage *SnapshotCoverage `json:"coverage,omitempty"`
}

// SnapshotCoverage is the coverage of one snapshot.
type SnapshotCoverage struct {
	Tracked int     `json:"tracked"`
	Objects int     `json:"objects"`
	Percent float64 `json:"percent"`
}

// Snapshot is the report reduced to what the history keeps.
func (r *Report) Snapshot() Snapshot {
	s := Snapshot{Time: r.Time.UTC(), Counts: r.Counts, Stuck: r.Stuck, Plans: []string{}}
	for _, p := range r.Plans {
		s.Plans = append(s.Plans, p.ID)
	}
	for _, c := range r.Clusters {
		if s.Clusters == nil {
			s.Clusters = map[string]Counts{}
		}
		s.Clusters[c.Cluster] = c.Counts
	}
	if c := r.Coverage; c != nil {
		s.Coverage = &SnapshotCoverage{Tracked: c.Tracked, Objects: c.Objects, Percent: c.Percent}
	}
	return s
}

const snapshotPrefix, snapshotSuffix = "status-", ".json"

// Record writes s into dir as status-<UTC time>.json, whole (History
// never reads half a snapshot) and without replacing (two runs in the same
// nanosecond do not overwrite each other), and returns its path.
func Record(dir string, s Snapshot) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("--record %s: %w. Pick a writable directory", dir, err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, snapshotPrefix+s.Time.UTC().Format("20060102T150405.000000000Z")+snapshotSuffix)
	if err := atomicfile.Create(name, 0o644, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return "", fmt.Errorf("--record %s: %w", name, err)
	}
	return name, nil
}

// History reads every snapshot in dir, oldest first. A missing dir is an
// empty history; a file that is not a snapshot is an error naming it.
func History(dir string) ([]Snapshot, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--record %s: %w", dir, err)
	}
	var out []Snapshot
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasPrefix(n, snapshotPrefix) || !strings.HasSuffix(n, snapshotSuffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", filepath.Join(dir, n), err)
		}
		var s Snapshot
		if err := json.Unmarshal(b, &s); err != nil || s.Time.IsZero() {
			return nil, fmt.Errorf("history %s is not a status snapshot (%v): move it out of %s or delete it", filepath.Join(dir, n), err, dir)
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}
