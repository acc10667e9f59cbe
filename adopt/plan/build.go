package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	intern "unique"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/adopt/redact"
	"github.com/adopt-dev/adopt/argoapp"
)

// BodiesFunc reads the full body of every object for which want is true and
// hands it to fn, one at a time (discover.Each with the cluster's clients).
type BodiesFunc func(objs []discover.Object, want func(*discover.Object) bool, fn func(o *discover.Object, body map[string]any, err error))

// Inputs are everything a plan is built from.
type Inputs struct {
	Result   *discover.Result
	Tracking argoapp.Tracking
	Apps     argoapp.Applications
	Cluster  Cluster
	// Config is adopt.yaml; nil means the defaults.
	Config *config.Config
	// Index is the GitOps repo; nil when no repo was given.
	Index   *gitindex.Index
	GroupBy GroupBy
	// Bodies reads object bodies for drift and the next-apply prediction;
	// nil leaves both out.
	Bodies BodiesFunc
	// Helm is what was read of each Helm release, by namespace/name; a
	// release missing here has no Application. HelmUnread says why release
	// records could not be read ("" when they were).
	Helm       map[string]HelmRelease
	HelmUnread string
	// Management is Argo CD's cluster when it is not the one planned.
	Management *Management
	// Fleet says the plan is one cluster's of a fleet plan: its new
	// Applications' names must not depend on the cluster (no {cluster}
	// learned from the repo), so that one ApplicationSet generates them
	// on every cluster.
	Fleet bool
	// Charts renders the Helm charts in Git that existing Applications
	// sync (its KubeVersion is the cluster's).
	Charts helmrelease.Renderer
	// Renders is what Render read for these inputs: what the existing
	// Applications render, each source at its targetRevision. nil renders
	// them at the index's own revision only (a source pinned elsewhere is
	// a finding), reading nothing.
	Renders *Renders
	// Findings are plan-wide findings of the caller's own (for example the
	// namespaces of the scope it could not check).
	Findings []Finding
	// Judge is the one secret rule's (redact.DefaultJudge) that judges
	// what each exported object holds, from its body (Bodies); nil applies
	// the name rule alone.
	Judge *redact.Judge
}

// HelmRelease is one Helm release as read from its records, for Build.
type HelmRelease struct {
	Source HelmSource
	// Blocked says why the release cannot become an Application (for
	// example an unknown chart source); "" when it can.
	Blocked string
	// Findings are about its chart source (which was chosen, dependencies
	// not vendored), added when it becomes an Application.
	Findings []Finding
}

// candidate is an object on its way into the plan.
type candidate struct {
	src      *discover.Object
	obj      *Object // in Plan.Objects
	manifest *gitindex.Manifest
	// ambiguous are the manifests when more than one defines the object;
	// one is chosen by content once the body is read (choose), or once
	// every body is read (tie, settleTies).
	ambiguous []*gitindex.Manifest
	tie       *tie
	// existing is the existing Application that renders the object; shared
	// is set when more than one does.
	existing *argoapp.Spec
	shared   bool
	group    string // label group key
	// secrets are the secret-value findings of its export (SecretValues),
	// kept until grouping says whether it is exported.
	secrets []Finding
}

// mayExport says whether the candidate may be exported once grouped
// (Object.Exported then decides): no manifest in Git and none to choose
// from, no Helm release, not shared, not a Secret.
func (c *candidate) mayExport() bool {
	return c.manifest == nil && len(c.ambiguous) == 0 && !c.shared && c.obj.HelmRelease == "" && !c.obj.IsSecret()
}

// Build judges every collected object, matches it with Git and assembles
// the plan, not yet sealed (Seal, or WriteFile, sets its ID). It reads
// nothing but its inputs (the repo at other revisions is in.Renders, read
// by Render; object bodies come through in.Bodies). It uses in.Result up:
// an object's labels and annotations are dropped once it is judged, unless
// a later step reads them.
func Build(in Inputs) *Plan {
	cfg := in.Config
	if cfg == nil {
		cfg = config.Default()
	}
	groupBy := in.GroupBy
	if groupBy == "" {
		groupBy = GroupBy(cfg.GroupBy)
	}
	p := &Plan{APIVersion: APIVersion, Kind: Kind, Cluster: in.Cluster, Tracking: in.Tracking}
	p.ArgoCD = ArgoCD{Installed: in.Apps.Installed, ApplicationsChecked: in.Apps.Verified, Note: in.Apps.Note, Management: in.Management}
	if m := in.Management; m != nil && m.Cluster == "" {
		p.Findings = append(p.Findings, Finding{Code: CodeNotRegistered, Severity: Critical, Message: fmt.Sprintf(
			"cluster %s is not registered with the Argo CD on %s (no cluster Secret in namespace %s has its server): register it (argocd cluster add %s), then plan again; the Applications would have no destination",
			in.Cluster.Server, m.Server, in.Tracking.Namespace, orServer(in.Cluster.Context, in.Cluster.Server))})
	}
	p.Settings = Settings{GroupBy: groupBy, AppsDir: cfg.AppsDir, ExportDir: cfg.ExportDir, Project: cfg.Project, Destination: destination(cfg), AllowValues: cfg.AllowValues}
	p.Findings = append(p.Findings, in.Findings...)
	p.Findings = append(p.Findings, repoURL(p, cfg, in.Index, in.Apps.Specs)...)
	if !in.Apps.Installed {
		p.Findings = append(p.Findings, Finding{Code: CodeArgoCDMissing, Severity: Info, Message: in.Apps.Note + "; carrying on"})
	} else if !in.Apps.Verified {
		p.Findings = append(p.Findings, Finding{Code: CodeArgoCDUnchecked, Severity: Warning, Message: in.Apps.Note})
	}
	p.Findings = append(p.Findings, notRun(in.Apps, in.Tracking)...)
	renders := in.Renders
	if renders == nil {
		renders = Render(in, Revisions{})
	}
	if ix := in.Index; ix != nil {
		p.Repo = &Repo{Source: ix.Source, Remote: ix.Remote.Name, RemoteURL: ix.Remote.URL, Revision: ix.Revision, Manifests: len(ix.Manifests()), Kustomizations: ix.Kustomizations,
			Rendered: ix.Rendered, SkippedFiles: ix.Skipped, Unrendered: ix.Unrendered}
		for _, u := range ix.Unrendered {
			p.Findings = append(p.Findings, Finding{Code: CodeRenderFailed, Severity: Warning,
				Message: fmt.Sprintf("%s: not rendered (%s); what it renders cannot be matched, so its objects may look not in Git. Fix it so that `kustomize build` succeeds, then plan again", u.Path, u.Reason)})
		}
		for _, n := range ix.Notes {
			p.Findings = append(p.Findings, Finding{Code: CodeRenderFailed, Severity: Info, Message: n})
		}
	}
	// Applications that ApplicationSets would generate render objects too.
	in.Apps = renders.apps
	p.Findings = append(p.Findings, renders.appSets...)
	for _, s := range in.Result.SkippedTypes {
		p.Skipped = append(p.Skipped, Skipped{Kind: s.Type.Kind, Group: s.Type.Group, Class: judge.SkipWholeType, Reason: s.Reason})
	}
	for _, f := range in.Result.NotScanned {
		p.NotScanned = append(p.NotScanned, NotScanned{Type: f.Type, Reason: f.Reason})
	}

	// Objects are judged on every core in two passes. The first says, in
	// object order, which are skipped, tracked or candidates, so each
	// candidate's place in p.Objects is known; the second writes each
	// candidate's plan object and candidate straight into its place. At
	// 100,000 objects, copying judged objects into p.Objects one by one was
	// most of the build's serial work. Candidates live in one array (never
	// reallocated, so pointers into it hold), and only those whose body must
	// be read are indexed by object.
	objs := in.Result.Objects
	at := make([]int32, len(objs)) // each object's candidate index, or -1
	var stale []string             // by candidate index, when any is stale
	n := 0
	_ = ordered(len(objs), func(b []classified, lo, hi int) ([]classified, error) {
		for i := lo; i < hi; i++ {
			c := classify(&objs[i], cfg, in)
			c.index = i
			b = append(b, c)
		}
		return b, nil
	}, func(b []classified) error {
		for k := range b {
			c := &b[k]
			i := c.index
			at[i] = -1
			switch {
			case c.skipped:
				p.Skipped = append(p.Skipped, c.skip)
			case c.tracked:
				p.Summary.Tracked++
			default:
				if c.stale != "" {
					stale = append(stale, make([]string, n+1-len(stale))...)
					stale[n] = c.stale
				}
				at[i] = int32(n)
				n++
				continue
			}
			// Nothing after judging reads a left-out object's maps.
			objs[i].Labels, objs[i].Annotations = nil, nil
		}
		return nil
	})
	p.Objects = make([]Object, n)
	store := make([]candidate, n)
	owned := renders.owned
	p.Findings = append(p.Findings, renders.findings...)
	_ = ordered(len(objs), func(b []struct{}, lo, hi int) ([]struct{}, error) {
		for i := lo; i < hi; i++ {
			if at[i] < 0 {
				continue
			}
			o, k := &objs[i], at[i]
			v := judge.Verdict{Level: o.Budget.Level()}
			if int(k) < len(stale) {
				v.StaleTracking = stale[k]
			}
			v.Provenance, v.Evidence, v.Confidence = judge.JudgeProvenance(o)
			p.Objects[k] = newObject(o, v)
			store[k] = candidate{src: o, obj: &p.Objects[k], group: labelGroup(o.Labels)}
			if in.Index != nil {
				matchGit(&store[k], in.Index)
				owned.claim(&store[k], in.Index)
			}
			if v.Provenance != judge.ProvenanceHelm && !judge.CSAMigrationRuns(o) {
				// Nothing after judging reads them: at 100,000 objects
				// they were a third of what the plan's build held.
				o.Labels, o.Annotations = nil, nil
			}
		}
		return b, nil
	}, func([]struct{}) error { return nil })
	if in.Index != nil && len(in.Helm) > 0 {
		p.Findings = append(p.Findings, matchReleaseCharts(store, in)...)
	}
	cands := make([]*candidate, n)
	byObj := map[*discover.Object]*candidate{}
	for k := range store {
		c := &store[k]
		cands[k] = c
		if o := c.src; c.manifest != nil || len(c.ambiguous) > 0 || c.mayExport() || o.AppliedBytes == 0 && (o.Budget.HasLastApplied || o.Budget.Level() != budget.LevelOK) {
			byObj[o] = c // its body is read (in.Bodies)
		}
	}

	if in.Bodies != nil {
		want := func(o *discover.Object) bool { return byObj[o] != nil }
		in.Bodies(in.Result.Objects, want, func(o *discover.Object, body map[string]any, err error) {
			c := byObj[o]
			if err != nil {
				c.obj.Findings = append(c.obj.Findings, Finding{Code: CodeUnread, Severity: Warning,
					Message: fmt.Sprintf("could not read the body for drift, next-apply and secret-value checks (apply judges what it exports again): %s", discover.Reason(err))})
				return
			}
			if c.mayExport() {
				// Judged as apply judges it before it writes it.
				u := &unstructured.Unstructured{Object: body}
				if clean, err := export.Clean(u, export.Options{InstanceLabelKey: in.Tracking.InstanceLabelKey}); err == nil {
					c.secrets = SecretValues(in.Judge, clean.Object, c.obj.Ref, p.Settings.AllowValues)
				}
			}
			if len(c.ambiguous) > 0 {
				c.choose(body, in.Index)
			}
			if c.manifest != nil && c.obj.Drift == nil { // choose sets the drift of the one it picks
				d := gitindex.Compare(c.manifest.Object, body)
				c.obj.Drift = &d
			}
			if o.AppliedBytes == 0 {
				o.AppliedBytes = discover.AppliedBytes(body)
			}
		})
		settleTies(cands, in.Index, cfg)
	}

	for _, c := range cands {
		applied := c.src.AppliedBytes
		if c.manifest != nil {
			if b, err := budget.AppliedConfig(c.manifest.Object, c.src.Namespace); err == nil {
				applied = len(b)
			}
		}
		c.obj.NextApply = judge.PredictNextApply(c.src, applied)
		c.obj.Findings = append(c.obj.Findings, findings(c.obj, in.Index != nil)...)
		sortFindings(c.obj.Findings)
		c.obj.Risk = maxSeverity(c.obj.Findings)
	}

	named, fs := naming(cfg, in.Apps.Specs, in.Fleet, &p.Settings)
	var clash bool
	p.Applications, clash = group(cands, groupBy, named, in.Index, p.Settings.RepoURL)
	if clash && named != cfg {
		// The repo's pattern has no place for the group's key: keep
		// adopt's default rather than number two new Applications.
		fs = []Finding{{Code: CodeNaming, Severity: Info, Message: fmt.Sprintf("new Application names keep adopt's default %s: the repo's pattern %s (from %s) would name two new Applications alike; set nameTemplate in adopt.yaml to choose another", cfg.Naming, p.Settings.Naming, p.Settings.NamingFrom)}}
		p.Settings.Naming, p.Settings.NamingFrom = cfg.Naming, "adopt's default: the repo's pattern would name two new Applications alike"
		p.Applications, _ = group(cands, groupBy, cfg, in.Index, p.Settings.RepoURL)
	}
	if !slices.ContainsFunc(p.Applications, func(a Application) bool { return a.Existing == nil }) {
		// Nothing new is named.
		fs, p.Settings.Naming, p.Settings.NamingFrom = nil, "", ""
	}
	p.Findings = append(p.Findings, fs...)
	checkWholePaths(p, cands, in, owned)
	p.Applications = helmApps(p, cands, in)
	for _, c := range cands {
		if len(c.secrets) > 0 && c.obj.Exported() {
			c.obj.Findings = append(c.obj.Findings, c.secrets...)
			sortFindings(c.obj.Findings)
			c.obj.Risk = maxSeverity(c.obj.Findings)
		}
		c.secrets = nil
	}
	extendExisting(p, in.Apps.Specs)
	if in.Apps.Installed {
		p.Findings = append(p.Findings, placeGenerated(p, in.Apps, in.Index, renders.same, cfg)...)
		p.ArgoCD.Root = appsRoot(in.Apps.Specs, in.Index, p.Settings.RepoURL, p.Settings.AppsDir, p.Applications, renders.same)
		if p.ArgoCD.Root == nil {
			p.ArgoCD.Root = rootElsewhere(in.Apps.Specs, in.Index, p.Settings.RepoURL, p.Applications, renders.same)
		}
		if p.ArgoCD.Root == nil {
			var fs []Finding
			p.ArgoCD.Root, fs = rootHelmValues(p, in.Apps.Specs, in.Index, in.Charts, renders.same)
			p.Findings = append(p.Findings, fs...)
		}
	}
	csaMigration(cands, in.Tracking) // needs each object's Application
	for _, c := range cands {
		if c.existing == nil || c.manifest == nil {
			continue
		}
		if g := c.obj.Git; g == nil || in.Index.At(c.obj.Group, c.obj.Kind, c.obj.Namespace, c.obj.Name, g.Path, g.Line) != c.manifest {
			if p.synced == nil {
				p.synced = map[string]*gitindex.Manifest{}
			}
			p.synced[c.obj.Ref.String()] = c.manifest
		}
	}
	// Sorting moves p.Objects under the candidates: they are done with.
	p.Sort()
	p.summarize()
	return p
}

func destination(c *config.Config) string {
	if c.Destination.Name != "" {
		return "name:" + c.Destination.Name
	}
	return c.Destination.Server
}

func skippedObject(o *discover.Object, class, why string) Skipped {
	return Skipped{Kind: o.Type.Kind, Group: o.Type.Group, Namespace: o.Namespace, Name: o.Name, Class: class, Reason: why}
}

// classified is what the first pass of judging said of one object:
// skipped (skip is its entry), tracked, or a candidate (stale is its
// stale tracking mark).
type classified struct {
	index            int
	skipped, tracked bool
	skip             Skipped
	stale            string
}

// classify is the first pass of judging o; it only reads its inputs, so
// objects are classified at once.
func classify(o *discover.Object, cfg *config.Config, in Inputs) classified {
	var c classified
	if v := judge.UserObject(o, cfg, in.Tracking, in.Apps); v.Skip != "" {
		c.skipped, c.skip = true, skippedObject(o, v.SkipClass, v.Skip)
	} else if v.TrackedBy != "" {
		c.tracked = true
	} else {
		c.stale = v.StaleTracking
	}
	return c
}

func newObject(o *discover.Object, v judge.Verdict) Object {
	po := Object{
		Ref: o.Ref(), Provenance: string(v.Provenance), Evidence: intern.Make(v.Evidence).Value(),
		Confidence: v.Confidence, DataBytes: o.DataBytes, Budget: o.Budget, Level: v.Level,
		StaleTracking: v.StaleTracking, resourceVersion: o.ResourceVersion,
	}
	if v.Provenance == judge.ProvenanceHelm {
		po.HelmRelease = o.Annotations["meta.helm.sh/release-name"]
		if po.HelmRelease == "" {
			po.HelmRelease = o.Labels["app.kubernetes.io/instance"]
		}
	}
	for _, m := range o.Managers {
		s := m.Manager + " (" + m.Operation
		if m.Subresource != "" {
			s += ", " + m.Subresource
		}
		// Most objects share their managers: one copy of each string.
		po.Managers = append(po.Managers, intern.Make(s+")").Value())
	}
	return po
}

// matchGit finds the object's manifest: one match, none, or ambiguous.
func matchGit(c *candidate, ix *gitindex.Index) {
	ms := ix.Lookup(c.obj.Group, c.obj.Kind, c.obj.Namespace, c.obj.Name)
	switch len(ms) {
	case 0:
	case 1:
		c.match(ms[0], ix)
	default:
		c.ambiguous = ms
		for _, m := range ms {
			c.obj.Ambiguous = append(c.obj.Ambiguous, gitMatch(m, ix))
		}
	}
}

func (c *candidate) match(m *gitindex.Manifest, ix *gitindex.Index) {
	c.manifest = m
	g := gitMatch(m, ix)
	c.obj.Git = &g
}

func gitMatch(m *gitindex.Manifest, ix *gitindex.Index) GitMatch {
	return GitMatch{Path: m.Path, Line: m.Line, Kustomization: ix.InKustomization(m.Dir())}
}

// choose resolves an ambiguous match by content. The candidates are the
// plain files and the kustomization renders (base, overlay or both) that
// define the object. Those whose manifest equals live win; when none
// does, those with the smallest drift (fewest differing fields, then
// fewest bytes behind). Several left: the tie is settled once every body
// is read (settleTies).
func (c *candidate) choose(live map[string]any, ix *gitindex.Index) {
	t := &tie{ms: c.ambiguous}
	c.ambiguous = nil
	t.ds = make([]gitindex.Drift, len(t.ms))
	for i, m := range t.ms {
		t.ds[i] = gitindex.Compare(m.Object, live)
	}
	t.best = closest(t.ds)
	c.tie = t
	if len(t.best) == 1 {
		c.pick(t.best[0], "", ix)
	}
}

// tie is an object's candidates (ms), how each compares with live (ds),
// and the closest (best, indexes into ms).
type tie struct {
	ms   []*gitindex.Manifest
	ds   []gitindex.Drift
	best []int
}

// settleTies decides the objects choose left with several closest
// candidates. First adopt.yaml's sources, where one names a candidate (any
// of them, not only the closest: the user chose after looking). Then the
// kustomization from which other objects of the
// object's namespace come (objects it alone was chosen for); when that
// decides none, the one nothing else builds on (a plain file, or a
// kustomization no other names); then the first again with what that
// decided. Each pass reads only what was decided before it, so the
// result does not depend on the objects' order. Still several: the
// object stays ambiguous, and each candidate says how it compares.
func settleTies(cands []*candidate, ix *gitindex.Index, cfg *config.Config) {
	var ties []*candidate
	for _, c := range cands {
		if c.tie == nil {
			continue
		}
		paths := make([]string, len(c.tie.ms))
		for i, m := range c.tie.ms {
			paths[i] = m.Path
			if m.Render != "" {
				paths[i] = m.Render
			}
		}
		if p, entry := cfg.Source(c.obj.Group, c.obj.Kind, c.obj.Namespace, c.obj.Name, paths); p != "" {
			c.pick(slices.Index(paths, p), "chosen in adopt.yaml ("+entry+")", ix)
			continue
		}
		ties = append(ties, c)
	}
	for len(ties) > 0 {
		decided := map[string]bool{} // namespace and kustomization
		for _, c := range cands {
			if c.tie == nil && c.manifest != nil && c.manifest.Render != "" {
				decided[c.obj.Namespace+"\x00"+c.manifest.Render] = true
			}
		}
		pass := func(keep func(c *candidate, m *gitindex.Manifest) bool, why func(c *candidate) string) bool {
			var left []*candidate
			for _, c := range ties {
				if !c.narrow(func(m *gitindex.Manifest) bool { return keep(c, m) }, why(c), ix) {
					left = append(left, c)
				}
			}
			progress := len(left) < len(ties)
			ties = left
			return progress
		}
		if pass(func(c *candidate, m *gitindex.Manifest) bool { return decided[c.obj.Namespace+"\x00"+m.Render] },
			func(c *candidate) string {
				return "chosen because other objects in " + c.obj.Namespace + " match it alone"
			}) {
			continue
		}
		if !pass(func(_ *candidate, m *gitindex.Manifest) bool { return len(usedBy(m, ix)) == 0 },
			func(*candidate) string { return "chosen as the only one of them that no other kustomization builds on" }) {
			break
		}
	}
	for _, c := range ties {
		t := c.tie
		c.tie = nil
		for i := range c.obj.Ambiguous {
			c.obj.Ambiguous[i].Reason = compared(t.ms[i], t.ds[i], ix)
		}
	}
}

// narrow picks the one of the tie's closest candidates for which keep
// holds, when there is one; it says whether it picked.
func (c *candidate) narrow(keep func(*gitindex.Manifest) bool, why string, ix *gitindex.Index) bool {
	var kept []int
	for _, i := range c.tie.best {
		if keep(c.tie.ms[i]) {
			kept = append(kept, i)
		}
	}
	if len(kept) != 1 {
		return false
	}
	c.pick(kept[0], why, ix)
	return true
}

// pick makes the tie's candidate k the object's match, with its drift and
// the reason: how it and the others compare with live, and rule (the
// rule that settled a tie, "" for none).
func (c *candidate) pick(k int, rule string, ix *gitindex.Index) {
	t := c.tie
	c.tie = nil
	c.match(t.ms[k], ix)
	c.obj.Ambiguous = nil
	c.obj.Drift = &t.ds[k]
	var why []string
	if t.ds[k].Identical() {
		why = append(why, "equals live")
	} else if slices.Contains(t.best, k) {
		why = append(why, fmt.Sprintf("closest to live (differs: %s): none of the %d manifests and renders that define it equals live", gitindex.FieldList(t.ds[k].Fields, 3), len(t.ms)))
	} else {
		why = append(why, fmt.Sprintf("differs from live: %s", gitindex.FieldList(t.ds[k].Fields, 3)))
	}
	for i, m := range t.ms {
		if i != k {
			why = append(why, where(m)+" "+compared(m, t.ds[i], ix))
		}
	}
	if rule != "" {
		why = append(why, rule)
	}
	c.obj.Git.Reason = strings.Join(why, "; ")
}

// closest are the indexes of the drifts equal to live, or, when none is,
// of the smallest (fewest fields, then fewest bytes behind).
func closest(ds []gitindex.Drift) []int {
	var best []int
	less := func(a, b gitindex.Drift) bool {
		if len(a.Fields) != len(b.Fields) {
			return len(a.Fields) < len(b.Fields)
		}
		return a.BytesBehind < b.BytesBehind
	}
	for i, d := range ds {
		switch {
		case len(best) == 0 || less(d, ds[best[0]]):
			best = []int{i}
		case !less(ds[best[0]], d):
			best = append(best, i)
		}
	}
	return best
}

// usedBy are the kustomizations that build on m's (none for a plain file
// or a leaf).
func usedBy(m *gitindex.Manifest, ix *gitindex.Index) []string {
	if m.Render == "" {
		return nil
	}
	return ix.UsedBy(m.Render)
}

// where names a candidate: its kustomization, or its file and line.
func where(m *gitindex.Manifest) string {
	if m.Render != "" {
		return m.Render
	}
	return fmt.Sprintf("%s:%d", m.Path, m.Line)
}

// compared says how a candidate compares with live, and what builds on it.
func compared(m *gitindex.Manifest, d gitindex.Drift, ix *gitindex.Index) string {
	s := "equals live"
	if !d.Identical() {
		s = "differs (" + gitindex.FieldList(d.Fields, 3) + ")"
	}
	if by := usedBy(m, ix); len(by) > 0 {
		s += ", built on by " + strings.Join(by, ", ")
	}
	return s
}

// labelGroup is the app.kubernetes.io label that names the object's
// application: part-of, then instance, then name.
func labelGroup(labels map[string]string) string {
	for _, k := range []string{"app.kubernetes.io/part-of", "app.kubernetes.io/instance", "app.kubernetes.io/name"} {
		if v := labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// summarize counts the plan.
func (p *Plan) summarize() {
	s := Summary{Tracked: p.Summary.Tracked}
	s.Objects = len(p.Objects)
	for _, o := range p.Objects {
		switch o.Risk {
		case Critical:
			s.Critical++
		case Warning:
			s.Warning++
		}
		if o.Git == nil {
			s.NotInGit++
		}
		if len(o.Ambiguous) > 0 {
			s.Ambiguous++
		}
		if o.Drift != nil && !o.Drift.Identical() {
			s.Drifted++
		}
		if o.StaleTracking != "" {
			s.StaleTracking++
		}
	}
	s.AtRisk = s.Critical + s.Warning
	s.Skipped = len(p.Skipped)
	s.NotScanned = len(p.NotScanned)
	p.Summary = s
}

// Sort puts every list of the plan in its canonical order.
func (p *Plan) Sort() {
	sort.SliceStable(p.Objects, func(i, j int) bool { return objectLess(&p.Objects[i], &p.Objects[j]) })
	sort.SliceStable(p.Skipped, func(i, j int) bool {
		a, b := p.Skipped[i], p.Skipped[j]
		return a.Namespace+"\x00"+a.Group+"\x00"+a.Kind+"\x00"+a.Name < b.Namespace+"\x00"+b.Group+"\x00"+b.Kind+"\x00"+b.Name
	})
	sort.SliceStable(p.NotScanned, func(i, j int) bool { return p.NotScanned[i].Type < p.NotScanned[j].Type })
	sort.SliceStable(p.Applications, func(i, j int) bool { return p.Applications[i].Name < p.Applications[j].Name })
	sort.SliceStable(p.Findings, func(i, j int) bool {
		return p.Findings[i].Code+p.Findings[i].Message < p.Findings[j].Code+p.Findings[j].Message
	})
}

// objectLess orders objects by namespace, group, kind and name, field by
// field: the order of their keys joined with NUL (no Kubernetes name
// holds one), without building two strings for each comparison.
func objectLess(a, b *Object) bool {
	switch {
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	}
	return a.Name < b.Name
}

// Object looks an object up by its Ref.
func (p *Plan) Object(ref string) *Object {
	for i := range p.Objects {
		// A ref ends with the name: most objects are told apart without
		// building their ref.
		if strings.HasSuffix(ref, p.Objects[i].Name) && p.Objects[i].Ref.String() == ref {
			return &p.Objects[i]
		}
	}
	return nil
}

func orServer(context, server string) string {
	if context != "" {
		return context
	}
	return server
}
