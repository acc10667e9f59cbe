package finalize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/helmrelease"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Selection is what one finalize run covers: the chosen Applications of a
// plan, each with the objects it syncs and the Secrets apply left out.
type Selection struct {
	Apps    []plan.Application
	Targets map[string][]Target // by Application name
	LeftOut map[string][]Target // Secrets, by Application name
	// Sealed are the Secrets adopted as SealedSecrets or ExternalSecrets,
	// by Application name: marked (or pushed) before the first sync,
	// proven taken over after it.
	Sealed map[string][]SealedTarget
}

// Select picks the plan's Applications named in apps (all when empty) and
// their objects. It refuses an unknown name and a plan whose Application
// names an object it does not hold.
func Select(p *plan.Plan, apps []string) (Selection, error) {
	s := Selection{Targets: map[string][]Target{}, LeftOut: map[string][]Target{}, Sealed: map[string][]SealedTarget{}}
	byRef := make(map[string]plan.Object, len(p.Objects))
	for _, ob := range p.Objects {
		byRef[ob.Ref.String()] = ob
	}
	names := map[string]bool{}
	for _, a := range p.Applications {
		names[a.Name] = true
	}
	for _, n := range apps {
		if !names[n] {
			return s, fmt.Errorf("--app %s is not an Application of plan %s", n, p.ID)
		}
	}
	for _, a := range p.Applications {
		if len(apps) > 0 && !contains(apps, a.Name) {
			continue
		}
		s.Apps = append(s.Apps, a)
		for _, ref := range a.Objects {
			ob, ok := byRef[ref]
			if !ok {
				return s, fmt.Errorf("plan %s: Application %s names %s, which is not among the plan's objects; re-run adopt plan", p.ID, a.Name, ref)
			}
			t := Target{Ref: ob.Ref, App: a.Name}
			// A sealed Secret is taken over by its SealedSecret's
			// controller, never tracked by the Application itself.
			if (ob.Sealed() || ob.ESO()) && ob.Git == nil {
				s.Sealed[a.Name] = append(s.Sealed[a.Name], sealedTarget(ob, a.Name))
				continue
			}
			// A Secret in the SOPS form is applied decrypted by Argo CD's
			// plugin and tracked like any object.
			if ob.Sops() && ob.Git == nil {
				s.Targets[a.Name] = append(s.Targets[a.Name], sopsTarget(ob, a.Name))
				continue
			}
			// apply never puts a Secret's values in Git and excludes it
			// from sync, so the Application will never track it.
			if ob.IsSecret() {
				s.LeftOut[a.Name] = append(s.LeftOut[a.Name], t)
				continue
			}
			s.Targets[a.Name] = append(s.Targets[a.Name], t)
		}
	}
	if len(s.Apps) == 0 {
		return s, fmt.Errorf("plan %s proposes no Application: nothing to finalize", p.ID)
	}
	return s, nil
}

// Rename finalizes the selection's i-th Application under name (its
// Application was renamed before it merged): its targets name it.
func (s *Selection) Rename(i int, name string) {
	old := s.Apps[i].Name
	s.Apps[i].Name = name
	for _, m := range []map[string][]Target{s.Targets, s.LeftOut} {
		ts := m[old]
		delete(m, old)
		for j := range ts {
			ts[j].App = name
		}
		if ts != nil {
			m[name] = ts
		}
	}
	if ts := s.Sealed[old]; ts != nil {
		delete(s.Sealed, old)
		for j := range ts {
			ts[j].App = name
		}
		s.Sealed[name] = ts
	}
}

// SealedTargets are the selection's sealed Secrets, in Application order.
func (s Selection) SealedTargets() []SealedTarget {
	var all []SealedTarget
	for _, a := range s.Apps {
		all = append(all, s.Sealed[a.Name]...)
	}
	return all
}

// All is every target of the selection, in Application order.
func (s Selection) All() []Target {
	var all []Target
	for _, a := range s.Apps {
		all = append(all, s.Targets[a.Name]...)
	}
	return all
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Runner owns finalize's loop: for each selected Application, optionally
// start the first sync, wait until it succeeded, is Synced and Healthy and
// every object carries its tracking, then finalize each object; an
// Application that is not ready is explained and its objects left alone.
type Runner struct {
	Plan      *plan.Plan
	Selection Selection
	Finalizer *Finalizer
	// Reader and Syncer read and sync Applications (Kubernetes or API mode).
	Reader argoapp.StatusReader
	Syncer argoapp.Syncer
	// Find, when set, names the Application that syncs a proposed
	// Application's source path to its namespace (argoapp's BySource):
	// when none of the plan's name exists, it was renamed in review
	// before it merged, and is finalized under the name found.
	Find func(ctx context.Context, a plan.Application) (string, error)
	// Kube explains unhealthy workloads from their pods.
	Kube kubernetes.Interface
	// Version is the Argo CD version (ResolveVersion).
	Version      argoapp.Version
	Sync         bool
	DryRun       bool
	Revision     string
	AllowHealth  []string
	Timeout      time.Duration
	PollInterval time.Duration
	// Progress, when set, hears each change of what an Application waits
	// for ("" when ready).
	Progress func(app string, s argoapp.AppState, waiting string)
	// Parallel bounds how many objects are read or patched at once;
	// 0 means DefaultParallel. Results keep the plan's order.
	Parallel int
	// Settle is how long Session watches each ready Application after its
	// cleanup, to see that it stays Synced (SettleAll); 0 skips the check.
	Settle time.Duration
	// Retire asks, after the cleanup, for the records of each Helm release
	// whose Application is ready and whose objects were all finalized to
	// be removed by Retirer (RetireAll). Retirer also restores them
	// (Undo).
	Retire  bool
	Retirer *Retirer
	// Sealer marks the selection's sealed Secrets before the first sync
	// and proves their takeover after it; nil when it has none.
	Sealer *Sealer
	// pre holds the tracking check's listed reads; work runs a Run's reads
	// and patches, Parallel at a time.
	pre  prefetch
	work *workers
}

// DefaultParallel is Runner.Parallel's default (finalize --parallel):
// the API server commits concurrent writes together, so 16 patches in
// flight finished 1,000 objects in 3.1 s where 8 took 4.9 s.
const DefaultParallel = 16

// Run finalizes the selection and returns the report. An error means
// Argo CD could not be read or synced; per-object outcomes are in the
// report. The patches of a ready Application run on workers shared by the
// whole run, so the next Application's wait and tracking check overlap
// its last patches; the report lists every outcome in plan order once
// they are all done.
func (r *Runner) Run(ctx context.Context, rep *Report) error {
	renamed, err := r.renamed(ctx)
	if err != nil {
		return err
	}
	r.work = r.workers()
	var outcomes [][]Result // in plan order; patch results filled by the workers
	defer func() {
		r.work.wait()
		r.work = nil
		for _, rs := range outcomes {
			for _, res := range rs {
				rep.Add(res)
			}
		}
	}()
	for _, a := range r.Selection.Apps {
		ar := AppReport{Name: a.Name}
		if was := renamed[a.Name]; was != "" {
			ar.Notes = append(ar.Notes, fmt.Sprintf("the plan's Application %s was renamed %s before it merged (found by its source path %s and namespace %s)", was, a.Name, a.SourcePath, a.Namespace))
		}
		targets := r.Selection.Targets[a.Name]
		var left []Result
		for _, t := range r.Selection.LeftOut[a.Name] {
			left = append(left, LeftOut(t, "a Secret: adopt apply left it out of Git and out of sync, so there is nothing to finalize; give it a secret-management source (SealedSecret, ExternalSecret, SOPS)"))
		}
		outcomes = append(outcomes, left)
		// The mark goes on before any sync: the controller takes over only
		// a Secret marked before it unseals. A Secret that cannot be
		// marked keeps the whole Application from syncing.
		sealedTs := r.Selection.Sealed[a.Name]
		if len(sealedTs) > 0 {
			notes, problems := r.mark(ctx, sealedTs)
			ar.Notes = append(ar.Notes, notes...)
			if len(problems) > 0 {
				ar.Problems = append(ar.Problems, problems...)
				rep.Apps = append(rep.Apps, ar)
				why := fmt.Sprintf("Application %s was not synced: a Secret it adopts as a SealedSecret could not be marked first (%s)", a.Name, problems[0])
				skipped := make([]Result, 0, len(targets)+len(sealedTs))
				for _, t := range targets {
					skipped = append(skipped, Skip(t, why))
				}
				for _, t := range sealedTs {
					skipped = append(skipped, Skip(t.Target, why))
				}
				outcomes = append(outcomes, skipped)
				continue
			}
		}
		s, err := r.Reader.Application(ctx, a.ArgoRef())
		if err != nil {
			return err
		}
		reads := make([]*unstructured.Unstructured, len(targets))
		first := s.Phase == "" && len(s.History) == 0
		if r.Sync && s.Found && !s.Operation && !first {
			// An Application that has synced before (one that already
			// existed, or one an earlier adoption wrote and this one
			// extends): its next sync is the first of the adopted
			// objects, needed while one of them does not carry its
			// tracking yet.
			untracked, err := r.tracked(targets, reads)(ctx, s)
			if err != nil {
				return err
			}
			first = untracked != ""
		}
		if r.Sync && s.Found && !s.Operation && first {
			if r.DryRun {
				ar.Problems = append(ar.Problems, "dry run: would start the first sync")
			} else {
				if err := r.Syncer.Sync(ctx, a.ArgoRef(), r.Revision, r.Version); err != nil {
					return err
				}
				ar.SyncStarted = true
				ar.SyncOptions = argoapp.SyncOptions(s.SyncOptions, r.Version)
			}
		}
		want := argoapp.Want{Revision: r.Revision, AllowHealth: r.AllowHealth, Check: r.tracked(targets, reads)}
		var progress func(argoapp.AppState, string)
		if r.Progress != nil {
			progress = func(s argoapp.AppState, waiting string) { r.Progress(a.Name, s, waiting) }
		}
		s, waiting, err := argoapp.Wait(ctx, r.Reader, a.ArgoRef(), want, r.PollInterval, r.Timeout, progress)
		if err != nil {
			return err
		}
		ar.Sync, ar.Health, ar.Ready, ar.Waiting = s.Sync, s.Health, waiting == "", waiting
		if !ar.Ready {
			why := fmt.Sprintf("Application %s is not ready after %s (%s): left untouched; fix it, then re-run", a.Name, r.Timeout, waiting)
			if s.Terminal() {
				why = fmt.Sprintf("Application %s: its last sync %s (%s), and no sync is running: left untouched; fix it, then re-run with --sync", a.Name, s.Phase, gitops.OneLine(s.Message))
			}
			if hint := CSATrapHint(r.Version, s); hint != "" {
				ar.Problems = append(ar.Problems, hint)
			}
			if r.Kube != nil {
				problems, err := argoapp.Explain(ctx, r.Kube, s)
				if err != nil {
					return err
				}
				ar.Problems = append(ar.Problems, problems...)
			}
			skipped := make([]Result, len(targets))
			for i, t := range targets {
				skipped[i] = Skip(t, why)
			}
			// A SealedSecret the controller refused says why, and how to
			// recover, at once.
			for _, t := range sealedTs {
				// The quick proof explains a refused unseal; an
				// ExternalSecret's proof would also remove the Secret's
				// last-applied-configuration, which waits for a ready
				// Application.
				if r.DryRun || t.Form == plan.SecretFormESO {
					skipped = append(skipped, Skip(t.Target, why))
					continue
				}
				quick, cancel := context.WithTimeout(ctx, 5*time.Second)
				res := r.Sealer.Prove(quick, t)
				cancel()
				if res.Status != StatusFinalized && !errors.Is(quick.Err(), context.DeadlineExceeded) {
					ar.Problems = append(ar.Problems, res.Reason)
				}
				skipped = append(skipped, Skip(t.Target, why))
			}
			rep.Apps = append(rep.Apps, ar)
			outcomes = append(outcomes, skipped)
			continue
		}
		if !r.Retire {
			ar.Notes = append(ar.Notes, helmNotes(a)...)
		}
		rep.Apps = append(rep.Apps, ar)
		// The tracking check's reads start each object's guarded patch.
		results := make([]Result, len(targets))
		outcomes = append(outcomes, results)
		for i := range targets {
			r.work.do(func() { results[i] = r.Finalizer.ObjectFrom(ctx, targets[i], reads[i]) })
		}
		if len(sealedTs) > 0 {
			proofs := make([]Result, len(sealedTs))
			wait, cancel := context.WithTimeout(ctx, r.Timeout)
			for i, t := range sealedTs {
				proofs[i] = r.Sealer.Prove(wait, t)
			}
			cancel()
			outcomes = append(outcomes, proofs)
		}
	}
	return nil
}

// mark marks each sealed Secret (Sealer.Mark) and returns what it did
// and what keeps the Application from syncing.
func (r *Runner) mark(ctx context.Context, ts []SealedTarget) (notes, problems []string) {
	if r.Sealer == nil {
		return nil, []string{"this run has no connection to mark Secrets with"}
	}
	for _, t := range ts {
		note, err := r.Sealer.Mark(ctx, t)
		if err != nil {
			problems = append(problems, gitops.OneLine(err.Error()))
			continue
		}
		notes = append(notes, note)
	}
	return notes, problems
}

// renamed finds (Find) the Applications of the selection that were
// renamed before they merged, and renames them in the selection; it
// returns their plan names, by the name found.
func (r *Runner) renamed(ctx context.Context) (map[string]string, error) {
	if r.Find == nil {
		return nil, nil
	}
	out := map[string]string{}
	for i, a := range r.Selection.Apps {
		if a.Existing != nil || a.SourcePath == "" {
			continue
		}
		s, err := r.Reader.Application(ctx, a.ArgoRef())
		if err != nil || s.Found {
			if err != nil {
				return nil, err
			}
			continue
		}
		name, err := r.Find(ctx, a)
		if err != nil {
			return nil, err
		}
		if name != "" && name != a.Name {
			r.Selection.Rename(i, name)
			out[name] = a.Name
		}
	}
	return out, nil
}

// workers are Parallel goroutines that run what do hands them.
type workers struct {
	jobs chan func()
	wg   sync.WaitGroup
}

func (r *Runner) workers() *workers {
	n := r.Parallel
	if n <= 0 {
		n = DefaultParallel
	}
	w := &workers{jobs: make(chan func())}
	for i := 0; i < n; i++ {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for job := range w.jobs {
				job()
			}
		}()
	}
	return w
}

// do waits for a free worker and hands it job.
func (w *workers) do(job func()) { w.jobs <- job }

// wait lets the workers finish what they were handed.
func (w *workers) wait() {
	close(w.jobs)
	w.wg.Wait()
}

// each calls fn(0..n-1) on the run's workers and waits for all of them.
func (r *Runner) each(n int, fn func(i int)) {
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		r.work.do(func() { defer wg.Done(); fn(i) })
	}
	wg.Wait()
}

// CSATrapHint explains a first sync that failed in Argo CD's client-side
// apply migration, which writes last-applied-configuration once more and
// can pass the annotation cap. It names the remedy whether or not the
// version is known: the message itself says what happened.
func CSATrapHint(v argoapp.Version, s argoapp.AppState) string {
	msg := strings.ToLower(s.Message)
	if !strings.Contains(msg, "client-side apply migration") && !(strings.Contains(msg, "too long") && strings.Contains(msg, "annotations")) {
		return ""
	}
	on := "this Argo CD"
	if v.Known() {
		on = "Argo CD " + v.String()
	}
	return fmt.Sprintf("the first sync failed at the %d-byte annotation cap: %s migrates client-side-apply ownership with a client-side apply (Argo CD 3.1.0-3.3.1), which writes last-applied-configuration once more: add %s to the Application's spec.syncPolicy.syncOptions (adopt apply --csa-migration=disable writes it), merge, then re-run adopt finalize with --sync",
		budget.AnnotationCap, on, argoapp.OptionNoClientSideApplyMigrate)
}

// tracked is the last wait condition: every adopted object carries the
// tracking naming its Application. The objects come from one list per
// resource and namespace where that saves GETs (prefetch), the others,
// and those a list read shows untracked, are read Parallel at a time; the
// first one in plan order that is not ready is reported. When all are,
// reads holds them for the patches that follow.
func (r *Runner) tracked(targets []Target, reads []*unstructured.Unstructured) func(context.Context, argoapp.AppState) (string, error) {
	return func(ctx context.Context, _ argoapp.AppState) (string, error) {
		r.pre.fill(ctx, r.Finalizer, r.Selection, targets)
		waiting := make([]string, len(targets))
		r.each(len(targets), func(i int) {
			t := targets[i]
			reads[i] = nil
			u := r.pre.take(t)
			var err error
			// A prefetched object may predate this Application's sync and
			// still look tracked (a chart sets the instance label to the
			// release name, the Application's name): read it again unless
			// the sync's server-side apply is on it.
			if u == nil || r.Plan.Tracking.TrackedBy(u.GetLabels(), u.GetAnnotations()) != t.App || !HasApplyEntry(u.GetManagedFields(), r.Finalizer.owner()) {
				u, err = r.Finalizer.Client(t).Get(ctx, t.Name, metav1.GetOptions{})
			}
			switch {
			case err != nil:
				waiting[i] = t.Ref.String() + " not readable: " + err.Error()
			case r.Plan.Tracking.TrackedBy(u.GetLabels(), u.GetAnnotations()) != t.App:
				waiting[i] = fmt.Sprintf("%s does not carry the tracking of %s yet", t.Ref.String(), t.App)
			default:
				reads[i] = u
			}
		})
		for _, w := range waiting {
			if w != "" {
				return w, nil
			}
		}
		return "", nil
	}
}

// Undo restores, for the selection's objects, every annotation the journal
// entries record as removed, and every Helm release record they record as
// retired (RetiredRecords).
func (r *Runner) Undo(ctx context.Context, entries []Entry, rep *Report) {
	selected := map[string]bool{}
	for _, t := range r.Selection.All() {
		selected[t.Ref.String()] = true
	}
	for _, e := range Removed(entries) {
		if selected[e.Target.Ref.String()] {
			rep.Add(r.Finalizer.Undo(ctx, e))
		}
	}
	for _, t := range r.Selection.SealedTargets() {
		selected[t.Ref.String()] = true
	}
	for _, e := range Marked(entries) {
		if selected[e.Target.Ref.String()] && r.Sealer != nil {
			rep.Add(r.Sealer.Unmark(ctx, e))
		}
	}
	var rels []ReleaseReport
	at := map[string]int{} // index in rels, by namespace/release
	for _, e := range r.RetiredRecords(entries) {
		k := helmrelease.Key(e.Target.Namespace, e.Release)
		i, ok := at[k]
		if !ok {
			i = len(rels)
			at[k] = i
			rels = append(rels, ReleaseReport{HelmRelease: HelmRelease{App: e.Target.App, Name: e.Release, Namespace: e.Target.Namespace, Storage: storageOf(e.Target)}, Status: StatusRestored})
		}
		res := r.Retirer.Restore(ctx, e)
		switch res.Status {
		case StatusFailed:
			rels[i].Status = StatusFailed
		case StatusWouldRestore:
			rels[i].Status = StatusWouldRestore
		}
		rels[i].Records = append(rels[i].Records, res)
	}
	for _, rel := range rels {
		rep.AddRelease(rel)
	}
}

// RetiredRecords are the Helm release records the journal entries record
// as retired and not restored (Retired), of the selection's Applications;
// none without a Retirer to restore them.
func (r *Runner) RetiredRecords(entries []Entry) []Entry {
	if r.Retirer == nil {
		return nil
	}
	apps := map[string]bool{}
	for _, a := range r.Selection.Apps {
		apps[a.Name] = true
	}
	var out []Entry
	for _, e := range Retired(entries) {
		if apps[e.Target.App] {
			out = append(out, e)
		}
	}
	return out
}

func storageOf(t Target) string {
	if t.Kind == "ConfigMap" {
		return helmrelease.StorageConfigMap
	}
	return helmrelease.StorageSecret
}

// RetireAll retires the records of each selected Helm release (Retirer)
// once the run is done: only when its Application was ready, every one of
// its objects was finalized (or already was, or is a Secret left out), and
// a read of the Application just before still finds it Synced and Healthy
// (--allow-health does not count here), with the run's --revision. A
// selection with no Helm release is noted in the report.
func (r *Runner) RetireAll(ctx context.Context, rep *Report) {
	rels := HelmReleases(r.Selection)
	if len(rels) == 0 {
		rep.RetireNote = fmt.Sprintf("--retire-helm-records: no selected Application of plan %s comes from a Helm release, so there are no Helm records to retire; nothing was deleted", r.Plan.ID)
		return
	}
	for _, h := range rels {
		if why := r.retirable(ctx, rep, h); why != "" {
			rep.AddRelease(ReleaseReport{HelmRelease: h, Status: StatusSkipped, Reason: why + "; its records were left in place: fix that, then re-run"})
			continue
		}
		rep.AddRelease(r.Retirer.Retire(ctx, h))
	}
}

// retirable says why h's records must stay, or "".
func (r *Runner) retirable(ctx context.Context, rep *Report, h HelmRelease) string {
	ready := false
	for _, a := range rep.Apps {
		ready = ready || a.Name == h.App && a.Ready
	}
	if !ready {
		return fmt.Sprintf("Application %s is not ready", h.App)
	}
	for _, o := range rep.Objects {
		if o.App != h.App {
			continue
		}
		switch o.Status {
		case StatusFinalized, StatusAlready, StatusLeftOut, StatusWould:
		default:
			return fmt.Sprintf("%s of Application %s is %s", o.Object, h.App, o.Status)
		}
	}
	s, err := r.Reader.Application(ctx, h.App)
	if err != nil {
		return fmt.Sprintf("Application %s could not be read again before retiring (%s)", h.App, gitops.OneLine(err.Error()))
	}
	if waiting := s.Waiting(argoapp.Want{Revision: r.Revision}); waiting != "" {
		return fmt.Sprintf("Application %s is not Synced and Healthy now (%s)", h.App, waiting)
	}
	return ""
}

// helmNotes says, for a Helm-sourced Application that Argo CD now manages,
// that Helm still has the release: `helm list` shows it and `helm
// uninstall` would delete objects Argo CD manages. adopt deletes nothing;
// the notes give the commands that retire the records by hand.
func helmNotes(a plan.Application) []string {
	h := a.Helm
	if h == nil || h.ReleaseName == "" {
		return nil
	}
	notes := []string{fmt.Sprintf("Helm release %s (namespace %s) still has its records, so `helm list` shows it and `helm uninstall %s` would now delete objects Argo CD manages; adopt deletes nothing. Once the Application is the only owner, retire the records by hand:", h.ReleaseName, a.Namespace, h.ReleaseName)}
	for _, c := range helmrelease.RetireCommands(a.Namespace, h.ReleaseName, h.Storage) {
		notes = append(notes, "  "+c)
	}
	return append(notes, "  or let adopt do it, guarded and journaled for --undo: adopt finalize --retire-helm-records")
}
