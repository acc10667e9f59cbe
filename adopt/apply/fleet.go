package apply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/fleet"
	"github.com/adopt-dev/adopt/adopt/overlay"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Fleet renders a fleet plan into one commit: each proposed ApplicationSet
// once, and every cluster's other Applications as its own plan would
// (Applier.Build). Members are the clusters' Appliers by context, each
// already Exported.
type Fleet struct {
	Index   *fleet.Index
	Members map[string]*Applier
	summary FleetSummary
}

// FleetSummary is what the last Build of a fleet placed where.
type FleetSummary struct {
	ID   string
	Sets []SetSummary
	// Clusters are the clusters' own summaries (their Applications not
	// covered by a set), by context in order.
	Clusters []ClusterSummary
}

// ClusterSummary is one cluster's part of a fleet apply.
type ClusterSummary struct {
	Context string
	Summary Summary
}

// SetSummary is one rendered ApplicationSet.
type SetSummary struct {
	Name, File string
	// Generator is "list" or "clusters" (a label selector).
	Generator string
	Clusters  []string
	// Paths are the source paths per cluster when they differ, Path the
	// common one otherwise; Why says why the paths are per cluster.
	Path  string
	Paths map[string]string
	Why   string
	// Base is the kustomize base of the clusters' shared manifests when
	// they differ (each cluster's path is then its overlay), and Patches
	// what each overlay patches or adds.
	Base    string
	Patches []overlay.Patch
	// Generated are the Applications the set generates, one per cluster.
	Generated []string
	// ApplicationSet is what was rendered, for callers that check it.
	ApplicationSet *v1alpha1.ApplicationSet
}

// Summary is what the last Build placed where.
func (f *Fleet) Summary() FleetSummary { return f.summary }

// Target sets every member's repoURL default and targetRevision.
func (f *Fleet) Target(repoURL, revision string) {
	for _, a := range f.Members {
		a.Target(repoURL, revision)
	}
}

// Build computes the commit: it is the gitops.Change's Build. Two clusters
// writing one file differently is refused: one commit cannot hold both.
func (f *Fleet) Build(tree Tree) (gitops.Content, error) {
	t := &listedTree{Tree: tree}
	files := map[string][]byte{}
	owner := map[string]string{}
	put := func(who string, m map[string][]byte) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if old, ok := files[k]; ok && !bytes.Equal(old, m[k]) {
				return &ContractError{msg: fmt.Sprintf("fleet plan %s: %s and %s both write %s, with different content: one commit cannot hold both. Give the Applications distinct names or namespaces (adopt.yaml naming) and plan again, or apply those clusters' plans one at a time", f.Index.ID(), owner[k], who, k)}
			}
			files[k], owner[k] = m[k], who
		}
		return nil
	}
	s := FleetSummary{ID: f.Index.ID()}
	for _, set := range f.Index.ApplicationSets {
		m := map[string][]byte{}
		ss, err := f.renderSet(t, set, m)
		if err != nil {
			return gitops.Content{}, err
		}
		if err := put("ApplicationSet "+set.Name, m); err != nil {
			return gitops.Content{}, err
		}
		s.Sets = append(s.Sets, ss)
	}
	contexts := make([]string, 0, len(f.Members))
	for c := range f.Members {
		contexts = append(contexts, c)
	}
	sort.Strings(contexts)
	for _, c := range contexts {
		skip := map[string]bool{}
		for name := range f.Index.Covered(c) {
			skip[name] = true
		}
		m := map[string][]byte{}
		cs, err := f.Members[c].build(t, m, skip)
		if err != nil {
			return gitops.Content{}, fmt.Errorf("cluster %s: %w", c, err)
		}
		if err := put("cluster "+c, m); err != nil {
			return gitops.Content{}, err
		}
		s.Clusters = append(s.Clusters, ClusterSummary{Context: c, Summary: cs})
	}
	f.summary = s
	return gitops.Content{Files: files, Message: fleetMessage(s)}, nil
}

// member is one cluster of an ApplicationSet.
type member struct {
	context, dest string
	a             *Applier
	app           plan.Application
	// files are its rendered exports, spec its rendered Application's.
	files map[string][]byte
	spec  v1alpha1.ApplicationSpec
	path  string
}

// renderSet renders one ApplicationSet and the exports its Applications
// sync. Each cluster's Application is first rendered as its plan says; when
// the clean manifests differ between clusters, they are written as a
// kustomize base and one overlay per cluster instead (layOut) and the
// template's path is {{.path}}, each cluster's overlay. Anything else that
// differs refuses the set.
func (f *Fleet) renderSet(t *listedTree, set fleet.ApplicationSet, files map[string][]byte) (SetSummary, error) {
	ss := SetSummary{Name: set.Name, Clusters: set.Clusters, Generator: "list"}
	ms, err := f.members(set)
	if err != nil {
		return ss, err
	}
	render := func() error {
		for i := range ms {
			m := &ms[i]
			app := m.app
			out := newOutput(map[string][]byte{})
			as, err := m.a.renderApp(t, app, out)
			if err != nil {
				return fmt.Errorf("ApplicationSet %s, cluster %s: %w", set.Name, m.dest, err)
			}
			d, err := argoapp.DecodeApplication(out.files[as.File])
			if err != nil {
				return err
			}
			delete(out.files, as.File)
			m.files, m.spec, m.path = out.files, d.Spec, as.Path
			ss.File = SetFile(m.a.o.Plan, set.Name)
		}
		return nil
	}
	if err := render(); err != nil {
		return ss, err
	}
	perCluster := false
	if !sameFiles(ms) {
		if ms[0].app.Source != "export" {
			return ss, &ContractError{msg: fmt.Sprintf("ApplicationSet %s: the clusters' manifests differ and are not exported by adopt (source %s): apply the clusters' plans one at a time", set.Name, ms[0].app.Source)}
		}
		if err := layOut(set, ms, &ss); err != nil {
			return ss, err
		}
		perCluster = true
	}
	for _, m := range ms[1:] {
		if m.path != ms[0].path {
			perCluster = true
		}
	}
	if perCluster && ss.Why == "" {
		ss.Why = "the clusters' manifests are at different paths in Git"
	}
	tmpl := normalized(ms[0].spec, perCluster)
	for _, m := range ms[1:] {
		if !reflect.DeepEqual(normalized(m.spec, perCluster), tmpl) {
			return ss, &ContractError{msg: fmt.Sprintf("ApplicationSet %s: the Applications of clusters %s and %s differ in more than destination and path (project, repoURL, sync options, directory filters or ignoreDifferences), so one template cannot render both: plan again, or apply the clusters' plans one at a time", set.Name, ms[0].dest, m.dest)}
		}
	}
	if sp := tmpl.SyncPolicy; sp != nil && sp.Automated != nil && sp.Automated.Prune {
		return ss, &ContractError{msg: fmt.Sprintf("ApplicationSet %s: automated prune is never written into an ApplicationSet: drop --prune", set.Name)}
	}
	var elements []apiextensionsv1.JSON
	for _, m := range ms {
		maps.Copy(files, m.files)
		el := map[string]string{"name": m.dest}
		ss.Generated = append(ss.Generated, fleet.GeneratedName(m.dest, set.Name))
		if perCluster {
			el["path"] = m.path
			if ss.Paths == nil {
				ss.Paths = map[string]string{}
			}
			ss.Paths[m.dest] = m.path
		}
		raw, err := json.Marshal(el)
		if err != nil {
			return ss, err
		}
		elements = append(elements, apiextensionsv1.JSON{Raw: raw})
	}
	gen := v1alpha1.ApplicationSetGenerator{List: &v1alpha1.ListGenerator{Elements: elements}}
	if len(set.Selector) > 0 && !perCluster {
		gen = v1alpha1.ApplicationSetGenerator{Clusters: &v1alpha1.ClusterGenerator{Selector: metav1.LabelSelector{MatchLabels: set.Selector}}}
		ss.Generator = "clusters"
	}
	if perCluster {
		tmpl.Source.Path = "{{.path}}"
	} else {
		ss.Path = ms[0].path
	}
	tmpl.Destination.Name, tmpl.Destination.Server = "{{.name}}", ""
	_, argoNS := Settings(ms[0].a.o.Plan)
	id := f.Index.ID()
	labels := map[string]string{"app.kubernetes.io/managed-by": "adopt", "adopt.dev/plan-id": id}
	annotations := map[string]string{"adopt.dev/plan-id": id, "adopt.dev/objects": strings.Join(set.Objects, ", ")}
	as := &v1alpha1.ApplicationSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "ApplicationSet"},
		ObjectMeta: metav1.ObjectMeta{Name: set.Name, Namespace: argoNS, Labels: labels, Annotations: annotations},
		Spec: v1alpha1.ApplicationSetSpec{
			GoTemplate:        true,
			GoTemplateOptions: []string{"missingkey=error"},
			Generators:        []v1alpha1.ApplicationSetGenerator{gen},
			Template: v1alpha1.ApplicationSetTemplate{
				ApplicationSetTemplateMeta: v1alpha1.ApplicationSetTemplateMeta{
					Name: fleet.GeneratedName("{{.name}}", set.Name), Namespace: argoNS, Labels: labels, Annotations: annotations,
				},
				Spec: tmpl,
			},
			// Deleting the ApplicationSet never deletes the workloads.
			SyncPolicy: &v1alpha1.ApplicationSetSyncPolicy{PreserveResourcesOnDeletion: true},
		},
	}
	out, err := marshalApplicationSet(as)
	if err != nil {
		return ss, fmt.Errorf("ApplicationSet %s: %w", set.Name, err)
	}
	files[ss.File] = out
	ss.ApplicationSet = as
	return ss, nil
}

// SetFile is where ApplicationSet name is written for plan p's cluster:
// beside its Applications, <appsDir>/<name>.applicationset.yaml.
func SetFile(p *plan.Plan, name string) string {
	appsDir, _ := Settings(p)
	return path.Join(appsDir, name+".applicationset.yaml")
}

// members pairs each cluster of the set with its Applier and Application.
func (f *Fleet) members(set fleet.ApplicationSet) ([]member, error) {
	byDest := map[string]string{}
	for _, c := range f.Index.Clusters {
		if c.Destination != "" {
			byDest[c.Destination] = c.Context
		}
	}
	var ms []member
	for _, dest := range set.Clusters {
		a := f.Members[byDest[dest]]
		if a == nil {
			return nil, &ContractError{msg: fmt.Sprintf("fleet plan %s: ApplicationSet %s names cluster %s, which has no plan in the fleet plan", f.Index.ID(), set.Name, dest)}
		}
		m := member{context: byDest[dest], dest: dest, a: a}
		found := false
		for _, app := range a.o.Plan.Applications {
			if app.Name == set.Name {
				m.app, found = app, true
			}
		}
		if !found || strings.Join(m.app.Objects, "\x00") != strings.Join(set.Objects, "\x00") {
			return nil, &ContractError{msg: fmt.Sprintf("fleet plan %s: ApplicationSet %s does not match plan %s of cluster %s (no Application %s with the same objects). Run adopt plan --contexts again", f.Index.ID(), set.Name, a.o.Plan.ID, dest, set.Name)}
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// sameFiles reports whether every member exports the same files.
func sameFiles(ms []member) bool {
	for _, m := range ms[1:] {
		if len(m.files) != len(ms[0].files) {
			return false
		}
		for k, v := range ms[0].files {
			if w, ok := m.files[k]; !ok || !bytes.Equal(v, w) {
				return false
			}
		}
	}
	return true
}

// normalized is spec without what the template fills in per cluster.
func normalized(spec v1alpha1.ApplicationSpec, perCluster bool) v1alpha1.ApplicationSpec {
	spec = *spec.DeepCopy()
	spec.Destination.Name, spec.Destination.Server = "", ""
	if perCluster && spec.Source != nil {
		spec.Source.Path = ""
	}
	return spec
}

// marshalApplicationSet writes the ApplicationSet as YAML with sorted
// keys, without the empty status, creation time and generator templates
// the Go types always carry, and checks that it decodes strictly and
// keeps the safety rules: server-side apply, no automated prune, workloads
// preserved on deletion.
func marshalApplicationSet(as *v1alpha1.ApplicationSet) ([]byte, error) {
	b, err := json.Marshal(as)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	delete(m["metadata"].(map[string]any), "creationTimestamp")
	spec := m["spec"].(map[string]any)
	for _, g := range spec["generators"].([]any) {
		for _, kind := range g.(map[string]any) {
			delete(kind.(map[string]any), "template")
		}
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	var back v1alpha1.ApplicationSet
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		return nil, fmt.Errorf("rendered an invalid ApplicationSet: %w", err)
	}
	sp := back.Spec.Template.Spec.SyncPolicy
	switch {
	case !back.Spec.GoTemplate:
		return nil, fmt.Errorf("rendered without goTemplate")
	case sp == nil || !sp.SyncOptions.HasOption(argoapp.SyncOptionServerSideApply):
		return nil, fmt.Errorf("its template's syncOptions lack %s", argoapp.SyncOptionServerSideApply)
	case sp.Automated != nil && sp.Automated.Prune:
		return nil, fmt.Errorf("its template automates prune")
	case back.Spec.SyncPolicy == nil || !back.Spec.SyncPolicy.PreserveResourcesOnDeletion:
		return nil, fmt.Errorf("it does not preserve resources on deletion")
	}
	return out, nil
}

// PR is the fleet's pull request: the commit message's subject and body.
func (s FleetSummary) PR(in PRInput) PRInput {
	msg := fleetMessage(s)
	subject, body, _ := strings.Cut(msg, "\n\n")
	in.Title, in.Body = subject, body
	return in
}

// fleetMessage is the fleet commit's message.
func fleetMessage(s FleetSummary) string {
	var b strings.Builder
	apps := 0
	for _, c := range s.Clusters {
		apps += len(c.Summary.Applications)
	}
	fmt.Fprintf(&b, "adopt: %d ApplicationSet(s) and %d Application(s) for %d cluster(s) (fleet plan %s)\n\n", len(s.Sets), apps, len(s.Clusters), s.ID)
	b.WriteString("Nothing in the clusters changes until Argo CD syncs these (server-side apply,\nno prune; the ApplicationSets preserve their workloads on deletion).\n")
	for _, set := range s.Sets {
		where := set.Path
		if where == "" {
			where = "per-cluster paths (" + set.Why + ")"
		}
		fmt.Fprintf(&b, "\nApplicationSet %s (%s generator) -> %s\n  generates %s\n", set.Name, set.Generator, where, strings.Join(set.Generated, ", "))
		for _, l := range patchLines(set) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	for _, c := range s.Clusters {
		for _, a := range c.Summary.Applications {
			fmt.Fprintf(&b, "\nApplication %s (cluster %s) -> %s\n", a.Name, c.Context, a.Path)
		}
	}
	b.WriteString("\nNext: merge, let Argo CD sync, then run `adopt finalize --plan <fleet plan>`.\n")
	return b.String()
}

// ID is the fleet plan's id.
func (f *Fleet) ID() string { return f.Index.ID() }
