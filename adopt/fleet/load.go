package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Fleet is a fleet plan read back: the index and every scanned cluster's
// plan, by context.
type Fleet struct {
	// Dir holds the index and the plans; Path is the index file.
	Dir, Path string
	Index     *Index
	Plans     map[string]*plan.Plan
	// Files are the plan files, by context.
	Files map[string]string
}

// IsIndex reports whether path names a fleet plan: a directory holding
// fleet.yaml, or a file whose kind is FleetAdoptionPlan.
func IsIndex(path string) bool {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	// A plan names its kind first, and may be hundreds of megabytes: its
	// head says it is not an index without parsing the rest.
	start := make([]byte, 1024)
	n, _ := io.ReadFull(f, start)
	if planKind.Match(start[:n]) {
		return false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var head struct {
		Kind string `json:"kind"`
	}
	return yaml.Unmarshal(b, &head) == nil && head.Kind == Kind
}

// planKind finds an AdoptionPlan's kind in YAML or JSON.
var planKind = regexp.MustCompile(`(?m)^\s*"?kind"?\s*:\s*"?` + plan.Kind + `"?\s*,?\s*$|"kind":"` + plan.Kind + `"`)

// Load reads a fleet plan (the directory or its fleet.yaml) and each
// cluster's plan. A plan file whose id is not the one the index records,
// or whose content no longer gives its id (edited after plan sealed it),
// is refused with the file named: the index and its plans are one
// reviewed contract.
func Load(path string) (*Fleet, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, IndexFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the fleet plan: %w", err)
	}
	var ix Index
	if err := yaml.UnmarshalStrict(b, &ix); err != nil {
		return nil, fmt.Errorf("fleet plan %s: not a readable %s: %s", path, Kind, gitops.OneLine(err.Error()))
	}
	if ix.Kind != Kind || ix.APIVersion != APIVersion {
		return nil, fmt.Errorf("fleet plan %s: apiVersion %q kind %q, want %s %s", path, ix.APIVersion, ix.Kind, APIVersion, Kind)
	}
	f := &Fleet{Dir: filepath.Dir(path), Path: path, Index: &ix, Plans: map[string]*plan.Plan{}, Files: map[string]string{}}
	for _, c := range ix.Clusters {
		if c.Via != "" && c.Via != ViaArgoCDCluster {
			return nil, fmt.Errorf("fleet plan %s, cluster %s: via %q, want %s or none", path, c.Context, c.Via, ViaArgoCDCluster)
		}
		if c.Plan == "" {
			continue
		}
		file := filepath.Join(f.Dir, c.Plan)
		p, err := plan.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("fleet plan %s, cluster %s: %w", path, c.Context, err)
		}
		if p.ID != c.PlanID {
			return nil, fmt.Errorf("fleet plan %s: %s is plan %s, but the index records %s for cluster %s: the file was replaced or re-planned after the fleet plan was made. Run adopt plan --contexts again", path, file, p.ID, c.PlanID, c.Context)
		}
		sealed, err := p.Sealed()
		if err != nil {
			return nil, err
		}
		if !sealed {
			content := *p
			content.Seal()
			return nil, fmt.Errorf("fleet plan %s: %s was edited after it was planned (its content gives id %s, not %s). Run adopt plan --contexts again", path, file, content.ID, c.PlanID)
		}
		if !argoapp.SameServer(p.Cluster.Server, c.Server) {
			return nil, fmt.Errorf("fleet plan %s: %s is for cluster %s, but the index records %s for context %s", path, file, p.Cluster.Server, c.Server, c.Context)
		}
		f.Plans[c.Context], f.Files[c.Context] = p, file
	}
	if len(f.Plans) == 0 {
		return nil, fmt.Errorf("fleet plan %s holds no planned cluster", path)
	}
	return f, nil
}

// ID is the fleet plan's short id: a digest of its clusters' plan ids and
// its ApplicationSets, naming the branch apply writes.
func (ix *Index) ID() string {
	h := sha256.New()
	for _, c := range ix.Clusters {
		fmt.Fprintf(h, "cluster %s %s %s\n", c.Context, c.Server, c.PlanID)
		if c.Via != "" {
			fmt.Fprintf(h, "via %s\n", c.Via)
		}
	}
	for _, s := range ix.ApplicationSets {
		fmt.Fprintf(h, "set %s %s %s\n", s.Name, s.Namespace, strings.Join(s.Clusters, ","))
	}
	return "fleet-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// Contexts are the planned clusters' contexts, sorted.
func (f *Fleet) Contexts() []string {
	out := make([]string, 0, len(f.Plans))
	for c := range f.Plans {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Entry is the index entry of context.
func (ix *Index) Entry(context string) ClusterEntry {
	for _, c := range ix.Clusters {
		if c.Context == context {
			return c
		}
	}
	return ClusterEntry{}
}

// GeneratedName is the name the ApplicationSet's template gives the
// Application it generates for cluster (a registered destination name).
func GeneratedName(cluster, app string) string { return cluster + "-" + app }

// Covered is, for one cluster (context), the set covering each of its
// Applications, by Application name.
func (ix *Index) Covered(context string) map[string]ApplicationSet {
	dest := ix.Entry(context).Destination
	out := map[string]ApplicationSet{}
	for _, s := range ix.ApplicationSets {
		for _, c := range s.Clusters {
			if c == dest && dest != "" {
				out[s.Name] = s
			}
		}
	}
	return out
}

// Generated is context's plan as Argo CD will run it: each Application an
// ApplicationSet covers renamed to the Application the set generates for
// the cluster (GeneratedName), so finalize waits on that one and checks
// that it tracks the objects. The plan itself is not changed.
func (f *Fleet) Generated(context string) *plan.Plan {
	p := *f.Plans[context]
	covered := f.Index.Covered(context)
	dest := f.Index.Entry(context).Destination
	rename := map[string]string{}
	p.Applications = append([]plan.Application(nil), p.Applications...)
	for i, a := range p.Applications {
		if _, ok := covered[a.Name]; ok {
			rename[a.Name] = GeneratedName(dest, a.Name)
			p.Applications[i].Name = rename[a.Name]
		}
	}
	p.Objects = append([]plan.Object(nil), p.Objects...)
	for i, o := range p.Objects {
		if n, ok := rename[o.App]; ok {
			p.Objects[i].App = n
		}
	}
	return &p
}
