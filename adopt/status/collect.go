package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/esoform"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/adopt/reads"
	"github.com/adopt-dev/adopt/adopt/sealed"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
	"golang.org/x/sync/errgroup"
)

// Input is one plan to report on.
type Input struct {
	Plan *plan.Plan
	// File is the plan's path, as the next-step commands name it.
	File string
	// Journal is finalize's journal for the plan (<plan>.journal); a
	// missing file means nothing was finalized.
	Journal string
	// Cluster is the context of a fleet plan's cluster ("" for a plan of
	// its own; FleetInputs sets the fleet's fields): Plan is then that
	// cluster's plan as Argo CD runs it, File the fleet plan, Branch the
	// fleet's branch and AppFiles the file in Git that holds each
	// Application (an ApplicationSet's for a generated one).
	Cluster  string
	Branch   string
	AppFiles map[string]string
	// Clients and Kube read the plan's objects and their pods, and count
	// its cluster's coverage (zero: the Options' / Sources'); Explain
	// words that cluster's errors (nil: the Options').
	Clients discover.Clients
	Kube    kubernetes.Interface
	Explain func(error) error
}

// branch is the adoption branch apply pushes for the input.
func (i Input) branch() string {
	if i.Branch != "" {
		return i.Branch
	}
	return "adopt/" + apply.AdoptionID(i.Plan)
}

// Sources are what the collector reads from.
type Sources struct {
	// Metadata reads the planned objects, and Dynamic the Applications,
	// of inputs without clients of their own.
	Metadata metadata.Interface
	Dynamic  dynamic.Interface
	// Apps reads the Applications: the management cluster's Argo CD (nil:
	// Argo CD runs in each input's cluster, read with its objects).
	Apps dynamic.Interface
	// Kube explains unhealthy workloads from their pods (nil: not
	// explained).
	Kube kubernetes.Interface
	// Tracking is Argo CD's tracking configuration, as read now.
	Tracking argoapp.Tracking
	// Repo is the GitOps repo cloned (nil: not given); RepoName is how the
	// next-step commands name it; Base is the branch adoptions merge into
	// ("" for the repo's default branch).
	Repo     *gitops.Repo
	RepoName string
	Base     string
	// PRs looks up the pull requests of the adoption branches (nil: not
	// looked up; PRNote says why); PRRepo is the repository on the host.
	PRs    gitops.PRStateReader
	PRRepo gitops.RepoRef
	PRNote string
	// Parallel bounds concurrent object reads (0 means 8).
	Parallel int
}

// Collect reads every fact Place needs, for every object of every
// plan, in plan order. An error means a source could not be read at all
// (the repo's base branch, an Application, the journal); a missing or
// unreadable object is a fact, not an error.
func Collect(ctx context.Context, src Sources, in []Input) ([]PlanRef, []Facts, []string, error) {
	var refs []PlanRef
	var facts []Facts
	var notes []string
	if src.Repo == nil {
		notes = append(notes, "no --repo: stages before the Application exists (planned, in review, merged) are not told apart")
	}
	if src.Repo != nil && src.PRs == nil && src.PRNote != "" {
		notes = append(notes, "pull requests not looked up: "+src.PRNote)
	}
	gits := map[string]gitFacts{} // by branch: a fleet's clusters share one
	for _, i := range in {
		p := i.Plan
		_, argoNS := apply.Settings(p)
		appsDir := apply.AppFilesDir(p)
		ref := PlanRef{ID: p.ID, File: i.File, Cluster: p.Cluster.Server, Context: i.Cluster, Branch: i.branch()}
		finalized, jnote, err := journal(i.Journal)
		if err != nil {
			return nil, nil, nil, err
		}
		if jnote != "" {
			ref.Journal = i.Journal
		}
		git := gitFacts{}
		if src.Repo != nil {
			if ref.Base = src.Base; ref.Base == "" {
				ref.Base = src.Repo.DefaultBranch()
			}
			var ok bool
			if git, ok = gits[ref.Branch]; !ok {
				if git, err = readGit(ctx, src, ref); err != nil {
					return nil, nil, nil, err
				}
				gits[ref.Branch] = git
			}
		}
		refs = append(refs, ref)
		objs := map[string]plan.Object{}
		for _, o := range p.Objects {
			objs[o.Ref.String()] = o
		}
		objects, dyn, kube := src.Metadata, src.Dynamic, src.Kube
		if i.Clients.Metadata != nil {
			objects, dyn, kube = i.Clients.Metadata, i.Clients.Dynamic, i.Kube
		}
		apps := src.Apps
		if apps == nil {
			apps = dyn
		}
		reader := argoapp.KubeStatus{Client: apps, Namespace: argoNS}
		lives := readObjects(ctx, objects, src.Parallel, p)
		for _, a := range p.Applications {
			file := i.AppFiles[a.Name]
			if file == "" {
				file = apply.MergedFile(p, a, appsDir)
			}
			merged := git.merged
			if !merged && src.Repo != nil && ref.Base != "" {
				if merged, err = src.Repo.BranchHasFile(ref.Base, file); err != nil {
					return nil, nil, nil, err
				}
			}
			st, err := reader.Application(ctx, a.ArgoRef())
			if err != nil {
				return nil, nil, nil, err
			}
			var explain []string
			if st.Found && st.Health != "" && st.Health != argoapp.HealthHealthy && kube != nil {
				if explain, err = argoapp.Explain(ctx, kube, st); err != nil {
					return nil, nil, nil, err
				}
			}
			for _, r := range a.Objects {
				ob := objs[r]
				f := Facts{
					PlanID: p.ID, PlanFile: i.File, Cluster: i.Cluster, Repo: src.RepoName, App: a, Object: ob, ArgoNS: argoNS, AppFile: file,
					FinalizedAt: finalized[ob.Ref.String()],
					GitRead:     src.Repo != nil, Pushed: git.pushed, Merged: merged, PR: git.pr, PRNote: git.prNote,
					AppState: &st, Explain: explain,
				}
				lives[r].into(&f, src.Tracking)
				facts = append(facts, f)
			}
		}
	}
	return refs, facts, notes, nil
}

// gitFacts are what the repo and the host say about one plan's branch.
type gitFacts struct {
	pushed, merged bool
	pr             *gitops.PRStatus
	prNote         string
}

func readGit(ctx context.Context, src Sources, ref PlanRef) (gitFacts, error) {
	var g gitFacts
	head, ok := src.Repo.BranchHead(ref.Branch)
	g.pushed = ok
	if ok && ref.Base != "" {
		on, err := src.Repo.OnBranch(head, ref.Base)
		if err != nil {
			return g, err
		}
		g.merged = on
	}
	switch {
	case src.PRs == nil:
		g.prNote = src.PRNote
	default:
		pr, err := src.PRs.PRState(ctx, gitops.FindPROptions{Repo: src.PRRepo, Head: ref.Branch, Base: ref.Base})
		if err != nil {
			return g, err
		}
		g.pr = pr
		if pr != nil && pr.State == gitops.PRMerged {
			g.merged = true
		}
	}
	return g, nil
}

// journal reads finalize's journal: for each object, when the removal
// that no undo restored was made. A missing journal is no finalize yet.
func journal(file string) (map[string]time.Time, string, error) {
	out := map[string]time.Time{}
	if file == "" {
		return out, "", nil
	}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return out, "", nil
	}
	entries, err := finalize.ReadJournal(file)
	if err != nil {
		return nil, "", fmt.Errorf("finalize journal %s: %w. Status reads it to tell finalized objects; repair it or wait for the finalize holding it", file, err)
	}
	for _, e := range finalize.Removed(entries) {
		out[e.Target.Ref.String()] = e.Time
	}
	// An object finalize cleaned without an annotation to remove (only
	// field owners) is finalized too, from its last finalized entry.
	for _, e := range entries {
		if e.Result == string(finalize.StatusFinalized) && !e.HadAnnotation {
			if _, ok := out[e.Target.Ref.String()]; !ok {
				out[e.Target.Ref.String()] = e.Time
			}
		}
	}
	return out, file, nil
}

// live is what one object read gave.
type live struct {
	found      bool
	err        string
	labels     map[string]string
	ann        map[string]string
	csaManager bool
	// sealedBy is the SealedSecret that controls it ("" for none);
	// externalBy the ExternalSecret.
	sealedBy, externalBy string
}

func (l live) into(f *Facts, t argoapp.Tracking) {
	f.Found, f.ReadErr = l.found, l.err
	if !l.found {
		return
	}
	f.TrackedBy = t.TrackedBy(l.labels, l.ann)
	f.Budget = budget.MeasureBudget(l.ann)
	f.CSAManager = l.csaManager
	f.SealedBy = l.sealedBy
	f.ExternalBy = l.externalBy
}

// readObjects reads the metadata of p's objects (labels, annotations for
// their sizes and the tracking mark, field managers), by object, Parallel
// requests at a time (0 means 8), as reads.Choose says for each resource:
// one paginated list of the cluster, lists of the namespaces holding many
// of its objects, a GET for each other object. A cluster list's size is
// the plan's count of what it found of the resource (planned and
// skipped), known only when the plan covered the whole cluster or the
// resource is cluster-scoped; it leaves out what Argo CD already tracked
// at plan time. No body is read, so no Secret value.
func readObjects(ctx context.Context, client metadata.Interface, parallel int, p *plan.Plan) map[string]live {
	type resource struct {
		gvr     schema.GroupVersionResource
		unknown bool                         // the plan did not count the whole cluster's objects
		want    map[string]map[string]string // ref by name, by namespace
	}
	found := map[string]int{} // by group/kind
	for _, s := range p.Skipped {
		found[s.Group+"/"+s.Kind]++
	}
	res := map[string]*resource{}
	var keys []string
	for _, o := range p.Objects {
		k := o.Group + "/" + o.Kind
		found[k]++
		r := res[k]
		if r == nil {
			r = &resource{gvr: o.GVR(), want: map[string]map[string]string{}}
			res[k] = r
			keys = append(keys, k)
		}
		if r.want[o.Namespace] == nil {
			r.want[o.Namespace] = map[string]string{}
		}
		r.want[o.Namespace][o.Name] = o.Ref.String()
		if o.Namespace != "" && p.Cluster.Namespace != "" {
			r.unknown = true // a namespaced plan does not count the cluster
		}
	}
	out := make(map[string]live, len(p.Objects))
	var mu sync.Mutex
	keep := func(ref string, l live) {
		mu.Lock()
		out[ref] = l
		mu.Unlock()
	}
	workers := parallel
	if workers <= 0 {
		workers = 8
	}
	var g errgroup.Group
	g.SetLimit(workers)
	for _, k := range keys {
		r := res[k]
		counts := map[string]int{}
		for ns, names := range r.want {
			counts[ns] = len(names)
		}
		total := found[k]
		if r.unknown {
			total = -1
		}
		for _, ns := range reads.Choose(counts, total, listPage).Lists() {
			g.Go(func() error {
				list(ctx, client.Resource(r.gvr).Namespace(ns), r.want, ns == "", keep)
				return nil
			})
		}
		_ = g.Wait() // the GETs below read what no list did
		for ns, names := range r.want {
			mu.Lock()
			var left [][2]string
			for name, ref := range names {
				if _, ok := out[ref]; !ok {
					left = append(left, [2]string{name, ref})
				}
			}
			mu.Unlock()
			for _, nr := range left {
				g.Go(func() error {
					m, err := client.Resource(r.gvr).Namespace(ns).Get(ctx, nr[0], metav1.GetOptions{})
					switch {
					case apierrors.IsNotFound(err):
					case err != nil:
						keep(nr[1], live{err: gitops.OneLine(err.Error())})
					default:
						keep(nr[1], liveOf(m))
					}
					return nil
				})
			}
		}
	}
	_ = g.Wait()
	return out
}

// list reads one resource's list (of one namespace, or of the whole
// cluster when all is set) page by page and keeps what want names. A
// failed list keeps nothing: its objects are left to GETs, whose errors
// name them.
func list(ctx context.Context, res metadata.ResourceInterface, want map[string]map[string]string, all bool, keep func(string, live)) {
	opts := metav1.ListOptions{Limit: listPage}
	for {
		page, err := res.List(ctx, opts)
		if err != nil {
			return
		}
		for i := range page.Items {
			if ref, ok := want[page.Items[i].Namespace][page.Items[i].Name]; ok {
				keep(ref, liveOf(&page.Items[i]))
			}
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return
		}
	}
}

// listPage is the page size of readObjects' lists.
const listPage = 500

// liveOf is what status keeps of an object's metadata.
func liveOf(m *metav1.PartialObjectMetadata) live {
	l := live{found: true, labels: m.Labels, ann: m.Annotations}
	if c := metav1.GetControllerOf(m); c != nil && c.Kind == sealed.Kind && strings.HasPrefix(c.APIVersion, sealed.Group+"/") {
		l.sealedBy = c.Name
	}
	if c := metav1.GetControllerOf(m); c != nil && c.Kind == esoform.KindExternalSecret && strings.HasPrefix(c.APIVersion, esoform.Group+"/") {
		l.externalBy = c.Name
	}
	for _, f := range m.ManagedFields {
		if f.Manager == finalize.CSAManager && f.Operation == metav1.ManagedFieldsOperationUpdate {
			l.csaManager = true
		}
	}
	return l
}
