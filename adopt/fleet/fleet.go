// Package fleet owns planning across several workload clusters: it runs
// the plan pipeline (adopt/planner) for each cluster with bounded
// concurrency, each cluster failing alone, and proposes one Argo CD
// ApplicationSet for a group of objects proposed identically on two or more
// clusters that one management cluster's Argo CD deploys to. It writes no
// cluster and prints nothing; the index it builds is deterministic.
package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/planner"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"golang.org/x/sync/errgroup"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// APIVersion and Kind identify the fleet index.
const (
	APIVersion = "adopt.dev/v1alpha1"
	Kind       = "FleetAdoptionPlan"
	// IndexFile is the index's name in the plan directory.
	IndexFile = "fleet.yaml"
)

// Cluster is one workload cluster to plan.
type Cluster struct {
	// Name is the kubeconfig context, or with Via ViaArgoCDCluster the
	// registered name; it names the cluster's plan file.
	Name string
	// Via is how the cluster is reached: "" by kubeconfig context,
	// ViaArgoCDCluster through its cluster Secret on the management cluster.
	Via string
	// Server is the cluster's API server when known before its scan (a
	// registration's), recorded for a cluster that is not scanned.
	Server string
	// Scan is the pipeline's input for it; a nil Connect error means ready.
	Scan planner.Options
	// Err is set when the cluster could not even be connected to.
	Err error
}

// Result is one cluster's plan, or why it has none.
type Result struct {
	Cluster string
	Via     string
	// Server is Cluster.Server, for a cluster not scanned.
	Server string
	Plan   *plan.Plan
	Err    error
}

// Worst is the most severe finding of the planned clusters, or an error
// naming why each was not scanned when none could be planned.
func Worst(results []Result) (plan.Severity, error) {
	var failed []string
	worst := plan.Severity("")
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("cluster %s: not scanned: %s", r.Cluster, strings.Join(strings.Fields(r.Err.Error()), " ")))
			continue
		}
		if w := r.Plan.Worst(); w.AtLeast(worst) {
			worst = w
		}
	}
	if len(failed) == len(results) {
		return worst, fmt.Errorf("no cluster could be planned: %s", strings.Join(failed, "; "))
	}
	return worst, nil
}

// Plan runs the plan pipeline for every cluster, at most parallel at once
// (4 when 0), and returns the results sorted by cluster name. progress,
// when set, hears each cluster as it ends (err nil on success).
func Plan(ctx context.Context, clusters []Cluster, parallel int, progress func(cluster string, err error)) []Result {
	if parallel <= 0 {
		parallel = 4
	}
	out := make([]Result, len(clusters))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, c := range clusters {
		out[i].Cluster, out[i].Via, out[i].Server = c.Name, c.Via, c.Server
		if c.Err != nil {
			out[i].Err = c.Err
			continue
		}
		g.Go(func() error {
			c.Scan.Fleet = true
			p, err := planner.Plan(ctx, c.Scan)
			if err = wentDown(p, err, c.Scan); err != nil {
				p = nil
			}
			out[i].Plan, out[i].Err = p, err
			if progress != nil {
				mu.Lock()
				progress(c.Name, err)
				mu.Unlock()
			}
			return nil // each cluster's error is its Result's
		})
	}
	_ = g.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

// wentDown is an error when the scan failed (err), or types could not be
// listed, because the cluster's API server stopped answering during the
// scan, whichever request met the outage first (a list, or Argo CD's
// settings read beside the lists): such a plan would propose nothing for
// what it could not see, so the cluster counts as not scanned. Otherwise
// it is err: a plan whose types failed on a server that still answers
// (forbidden, one failing API) stands, with those types listed.
func wentDown(p *plan.Plan, err error, o planner.Options) error {
	var what string
	switch {
	case err != nil:
		what = err.Error()
	case len(p.NotScanned) > 0:
		what = fmt.Sprintf("%d types not listed, first %s: %s", len(p.NotScanned), p.NotScanned[0].Type, p.NotScanned[0].Reason)
	default:
		return nil
	}
	if o.Clients.Discovery == nil {
		return err
	}
	if _, now := o.Clients.Discovery.ServerVersion(); now != nil {
		return fmt.Errorf("the API server stopped answering during the scan (%s); now: %v", what, now)
	}
	return err
}

// Index is the FleetAdoptionPlan: the per-cluster plans and the
// ApplicationSets proposed across them.
type Index struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Clusters   []ClusterEntry `json:"clusters"`
	// ApplicationSets replace the Applications they list on each cluster.
	ApplicationSets []ApplicationSet `json:"applicationSets,omitempty"`
	// Separate says why groups on several clusters stay separate
	// Applications.
	Separate []string `json:"separate,omitempty"`
}

// ViaArgoCDCluster marks a cluster reached through its cluster Secret on
// the management cluster, with the Secret's own credentials (plan
// --argocd-clusters).
const ViaArgoCDCluster = "argocd-cluster"

// ClusterEntry is one cluster of the fleet.
type ClusterEntry struct {
	// Context is the kubeconfig context, or with Via argocd-cluster the
	// cluster's registered name.
	Context string `json:"context"`
	// Via is how apply and finalize reconnect: absent, by the kubeconfig
	// context; argocd-cluster, through the management cluster's cluster
	// Secret registering Context (its server must still be Server).
	Via    string `json:"via,omitempty" jsonschema:"enum=argocd-cluster"`
	Server string `json:"server,omitempty"`
	// Destination is the cluster's name in the management cluster's Argo CD
	// ("" when Argo CD runs in the cluster itself or it is not registered).
	Destination string `json:"destination,omitempty"`
	// Plan is the plan file, relative to the index; PlanID its id.
	Plan   string `json:"plan,omitempty"`
	PlanID string `json:"planID,omitempty"`
	// NotScanned says why the cluster has no plan.
	NotScanned string `json:"notScanned,omitempty"`
}

// ApplicationSet is one proposed ApplicationSet: the same Application (name,
// namespace, objects) on several registered clusters.
type ApplicationSet struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Clusters are the registered destination names, for a list generator.
	Clusters []string `json:"clusters"`
	// Objects are the Application's objects, the same on every cluster.
	Objects []string `json:"objects"`
	// SourcePath is the path every cluster's Application syncs, or "" when
	// they differ (then PerClusterPaths says which).
	SourcePath      string            `json:"sourcePath,omitempty"`
	PerClusterPaths map[string]string `json:"perClusterPaths,omitempty"`
	// Selector is a label of the clusters' Secrets that selects exactly
	// these clusters among those registered (for a clusters generator);
	// empty when no one label does.
	Selector map[string]string `json:"selector,omitempty"`
}

// NewIndex builds the index from the results; file names each cluster's
// plan file; registered are the clusters registered with the management
// cluster's Argo CD (name, server, labels), for label selectors. A set
// whose generated name cannot be a label value under its cluster's label
// tracking refuses the fleet plan (a *LabelError).
func NewIndex(results []Result, file func(cluster string) string, registered []argoapp.Cluster) (*Index, error) {
	ix := &Index{APIVersion: APIVersion, Kind: Kind}
	type member struct {
		dest     string
		app      plan.Application
		tracking argoapp.Tracking
	}
	var long []string
	groups := map[string][]member{}
	var keys []string
	for _, r := range results {
		e := ClusterEntry{Context: r.Cluster, Via: r.Via}
		if r.Err != nil {
			e.Server, e.NotScanned = r.Server, gitops.OneLine(r.Err.Error())
			ix.Clusters = append(ix.Clusters, e)
			continue
		}
		p := r.Plan
		e.Server, e.Plan, e.PlanID = p.Cluster.Server, file(r.Cluster), p.ID
		if m := p.ArgoCD.Management; m != nil {
			e.Destination = m.Cluster
		}
		ix.Clusters = append(ix.Clusters, e)
		for _, a := range p.Applications {
			if a.Existing != nil {
				continue // an Application that exists already: no set generates it
			}
			k := a.Name + "\x00" + a.Namespace + "\x00" + strings.Join(a.Objects, "\x00")
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], member{dest: e.Destination, app: a, tracking: p.Tracking})
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ms := groups[k]
		if len(ms) < 2 {
			continue
		}
		a := ms[0].app
		set := ApplicationSet{Name: a.Name, Namespace: a.Namespace, Objects: a.Objects, SourcePath: a.SourcePath}
		paths := map[string]string{}
		ok := true
		for _, m := range ms {
			if m.dest == "" {
				ok = false
				break
			}
			set.Clusters = append(set.Clusters, m.dest)
			paths[m.dest] = m.app.SourcePath
			if g := GeneratedName(m.dest, a.Name); m.tracking.Method == argoapp.TrackingLabel && len(g) > argoapp.LabelMaxLength {
				long = append(long, fmt.Sprintf("%s (%d characters, cluster %s)", g, len(g), m.dest))
			}
			if m.app.SourcePath != a.SourcePath {
				set.SourcePath = ""
			}
		}
		if !ok {
			ix.Separate = append(ix.Separate, fmt.Sprintf("Application %s is proposed on %d clusters, but not all of them are registered with one management cluster's Argo CD (plan with --argocd-context): separate Applications", a.Name, len(ms)))
			continue
		}
		if set.SourcePath == "" {
			set.PerClusterPaths = paths
		}
		sort.Strings(set.Clusters)
		set.Selector = selector(set.Clusters, registered)
		ix.ApplicationSets = append(ix.ApplicationSets, set)
	}
	if len(long) > 0 {
		return nil, &LabelError{Names: long}
	}
	return ix, nil
}

// LabelError refuses a fleet plan whose ApplicationSets would generate
// Applications named longer than a label value may be, under Argo CD's
// label tracking: Argo CD writes the name into every object's instance
// label, so the first sync would fail.
type LabelError struct {
	// Names are the generated names, each with its length and cluster.
	Names []string
}

func (e *LabelError) Error() string {
	return fmt.Sprintf("Argo CD tracks objects by label (application.resourceTrackingMethod: label, the default before Argo CD 3), so each Application's name becomes the app.kubernetes.io/instance label of its objects, at most %d characters; the ApplicationSets would generate <cluster>-<app> names longer than that: %s. Their first sync would fail, so no fleet plan was written. Set application.resourceTrackingMethod: annotation in argocd-cm (what Argo CD 3 does by default) and plan again, or shorten the Application names (adopt.yaml naming) or the clusters' registered names",
		argoapp.LabelMaxLength, strings.Join(e.Names, ", "))
}

// selector is one label (key=value) of the registered clusters that
// selects exactly clusters (sorted names), or nil.
func selector(clusters []string, registered []argoapp.Cluster) map[string]string {
	var first *argoapp.Cluster
	for i := range registered {
		if registered[i].Name == clusters[0] {
			first = &registered[i]
		}
	}
	if first == nil {
		return nil
	}
	keys := make([]string, 0, len(first.Labels))
	for k := range first.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var got []string
		for _, r := range registered {
			if v, ok := r.Labels[k]; ok && v == first.Labels[k] {
				got = append(got, r.Name)
			}
		}
		sort.Strings(got)
		if strings.Join(got, "\x00") == strings.Join(clusters, "\x00") {
			return map[string]string{k: first.Labels[k]}
		}
	}
	return nil
}

// WriteDir writes each cluster's plan as <dir>/<cluster>.yaml and the
// index as <dir>/fleet.yaml. Each Application an ApplicationSet covers has
// its objects' client-side-apply prediction made again for the name the
// set generates (plan.Plan.RenameApplication) before its plan is written.
// A fleet NewIndex refuses writes nothing.
func WriteDir(dir string, results []Result, registered []argoapp.Cluster) (*Index, error) {
	ix, err := NewIndex(results, PlanFile, registered)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the fleet plan directory %s: %w", dir, err)
	}
	for _, r := range results {
		if r.Plan == nil {
			continue
		}
		dest := ix.Entry(r.Cluster).Destination
		for name := range ix.Covered(r.Cluster) {
			r.Plan.RenameApplication(name, GeneratedName(dest, name))
		}
		if err := plan.WriteFile(filepath.Join(dir, PlanFile(r.Cluster)), r.Plan); err != nil {
			return nil, err
		}
	}
	// Again, with the plan ids the written plans now have.
	if ix, err = NewIndex(results, PlanFile, registered); err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(ix)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, IndexFile), b, 0o644); err != nil {
		return nil, fmt.Errorf("write the fleet index %s: %w", filepath.Join(dir, IndexFile), err)
	}
	return ix, nil
}

// PlanFile is a cluster's plan file name: its context, made safe for a
// file name.
func PlanFile(cluster string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, cluster)
	return safe + ".yaml"
}
