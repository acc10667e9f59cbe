package status

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/gitops"
)

// Facts are what was read about one planned object; Place decides its
// stage from them alone.
type Facts struct {
	PlanID, PlanFile string
	// Cluster is the fleet plan's cluster (context), "" for a plan of its
	// own.
	Cluster string
	// Repo is how the commands name the GitOps repo ("" when not given).
	Repo   string
	App    plan.Application
	Object plan.Object
	// ArgoNS and AppFile are where the Application lives in the cluster
	// and in the repo.
	ArgoNS, AppFile string

	// Live: Found is false when the object is not in the cluster (ReadErr
	// says why, when it was not a plain 404).
	Found   bool
	ReadErr string
	// TrackedBy is the Application the object's tracking mark names.
	TrackedBy string
	// Budget is the live annotation budget; CSAManager is set while
	// kubectl-client-side-apply still owns fields.
	Budget     budget.Budget
	CSAManager bool
	// SealedBy, for a Secret, is the SealedSecret that controls it (its
	// controller took it over): adopted, though it carries no tracking.
	SealedBy string
	// ExternalBy, for a Secret, is the ExternalSecret that controls it
	// (the External Secrets Operator took it over): adopted likewise.
	ExternalBy string

	// FinalizedAt is the journal's time of the removal no undo restored
	// (zero when there is none).
	FinalizedAt time.Time

	// Git: GitRead is false without a repo. Pushed: the adoption branch
	// exists; Merged: its commit (or the Application file) is on the base.
	GitRead, Pushed, Merged bool
	// PR is the newest pull request from the branch (nil: none, or not
	// looked up: PRNote says why).
	PR     *gitops.PRStatus
	PRNote string

	// AppState is the Application as read (nil: not read); Explain are
	// argoapp.Explain's lines for it.
	AppState *argoapp.AppState
	Explain  []string
}

// Place decides the object's stage, whether it is stuck, why, and what
// moves it on.
func Place(f Facts) Object {
	o := Object{Ref: f.Object.Ref.String(), Namespace: f.Object.Namespace, Cluster: f.Cluster, Plan: f.PlanID, App: f.App.Name, Budget: f.Budget, FinalizedAt: f.FinalizedAt}
	if !f.Found {
		o.Budget = f.Object.Budget
	}
	o.Level = o.Budget.Level()
	tracked := f.TrackedBy == f.App.Name
	cmd := commands{plan: f.PlanFile, app: f.App.Name, repo: f.Repo, fleet: f.Cluster != ""}
	if f.AppState != nil && f.AppState.Found {
		o.Revision = f.AppState.Revision
	}
	switch {
	case !f.FinalizedAt.IsZero() && f.Found && f.Budget.HasLastApplied:
		o.Stage, o.Stuck = StageRegressed, true
		o.Reason = fmt.Sprintf("finalized %s, but %s is back (%s bytes): someone applied it by hand again", f.FinalizedAt.UTC().Format(time.RFC3339), budget.LastAppliedKey, thousands(f.Budget.LastAppliedBytes))
		o.Next = cmd.finalize("") + "; then take the kubectl apply out of the runbook (adopt apply --fix-runbooks)"
	case !f.FinalizedAt.IsZero() && f.Found && !tracked:
		o.Stage, o.Stuck = StageRegressed, true
		o.Reason = fmt.Sprintf("finalized %s, but it no longer carries the tracking of Application %s%s", f.FinalizedAt.UTC().Format(time.RFC3339), f.App.Name, trackedElsewhere(f.TrackedBy))
		o.Next = cmd.finalize("--sync") + " (a sync puts the tracking back)"
	case !f.FinalizedAt.IsZero() && f.Found:
		o.Stage = StageFinalized
		o.Reason = "finalized " + f.FinalizedAt.UTC().Format(time.RFC3339)
	case f.AppState != nil && f.AppState.Found:
		placeApp(&o, f, tracked, cmd)
	case f.Merged && f.App.Generator != nil:
		o.Stage = StageMerged
		o.Reason = fmt.Sprintf("merged; Application %s/%s is not generated yet", f.ArgoNS, f.App.Name)
		ns, name, _ := strings.Cut(f.App.Generator.ApplicationSet, "/")
		o.Next = fmt.Sprintf("ApplicationSet %s generates it from %s at its next read of Git; to read it now: kubectl annotate -n %s applicationset %s argocd.argoproj.io/application-set-refresh=true", f.App.Generator.ApplicationSet, f.App.SourcePath, ns, name)
	case f.Merged:
		o.Stage = StageMerged
		o.Reason = fmt.Sprintf("merged; Application %s/%s is not in the cluster yet", f.ArgoNS, f.App.Name)
		o.Next = fmt.Sprintf("kubectl apply -n %s -f %s (or let the app-of-apps sync it)", f.ArgoNS, f.AppFile)
	case f.Pushed || f.PR != nil:
		placeReview(&o, f, cmd)
	default:
		o.Stage = StagePlanned
		o.Reason = "not in any branch yet"
		if !f.GitRead {
			o.Reason = "no --repo given: the GitOps repo was not read"
		}
		o.Next = cmd.apply()
	}
	if !f.Found {
		why := "not found in the cluster: deleted or renamed since the plan"
		if f.ReadErr != "" {
			why = "not readable: " + f.ReadErr
		}
		o.Stuck = true
		o.Reason = why + "; " + o.Reason
		o.Next = "re-run adopt plan; " + o.Next
	}
	return o
}

// placeApp places an object whose Application exists.
func placeApp(o *Object, f Facts, tracked bool, cmd commands) {
	s := *f.AppState
	waiting := s.Waiting(argoapp.Want{})
	o.Stage = StageAppPresent
	switch {
	case waiting == "" && tracked && !f.Budget.HasLastApplied && !f.CSAManager:
		o.Stage = StageFinalized
		o.Reason = "synced and healthy with nothing left to remove (no journal entry)"
	case waiting == "" && tracked:
		o.Stage = StageSynced
		o.Reason = "synced and healthy at " + short(s.Revision) + "; ready to finalize"
		o.Next = cmd.finalize("")
	case waiting == "" && f.Object.IsSecret() && f.SealedBy != "":
		o.Stage = StageFinalized
		o.Reason = "taken over in place by SealedSecret " + f.SealedBy + ", which Application " + f.App.Name + " syncs"
	case f.Object.Sealed() && f.SealedBy == "" && (s.Phase == "" && len(s.History) == 0):
		o.Reason = "no sync yet: the Secret must be marked managed before the first sync applies its SealedSecret"
		o.Next = cmd.finalize("--sync")
	case waiting == "" && f.Object.Sealed():
		o.Stuck = true
		o.Reason = "Application " + f.App.Name + " is synced, but its SealedSecret does not control the Secret yet"
		o.Next = cmd.finalize("")
	case waiting == "" && f.Object.Sops():
		o.Stuck = true
		o.Reason = "Application " + f.App.Name + " is synced, but the Secret does not carry its tracking: its SOPS-encrypted file reaches the cluster only through a plugin that decrypts it (docs/secrets.md)"
		o.Next = "set up the plugin, then " + cmd.finalize("--sync")
	case waiting == "" && f.Object.IsSecret() && f.ExternalBy != "" && f.Budget.HasLastApplied:
		o.Stage = StageSynced
		o.Reason = "taken over in place by ExternalSecret " + f.ExternalBy + ", which keeps its last-applied-configuration; ready to finalize"
		o.Next = cmd.finalize("")
	case waiting == "" && f.Object.IsSecret() && f.ExternalBy != "":
		o.Stage = StageFinalized
		o.Reason = "taken over in place by ExternalSecret " + f.ExternalBy + ", which Application " + f.App.Name + " syncs"
	case f.Object.ESO() && f.ExternalBy == "" && (s.Phase == "" && len(s.History) == 0):
		o.Reason = "no sync yet: finalize --sync proves its store holds the Secret's value (pushing it, unless apply --push-secrets did) before the first sync applies its ExternalSecret"
		o.Next = cmd.finalize("--sync")
	case waiting == "" && f.Object.ESO():
		o.Stuck = true
		o.Reason = "Application " + f.App.Name + " is synced, but its ExternalSecret does not control the Secret yet"
		o.Next = cmd.finalize("")
	case waiting == "" && f.Object.IsSecret():
		o.Stuck = true
		o.Reason = "a Secret: adopt apply left it out of Git and out of sync"
		o.Next = "give it a secret-management source (SealedSecret, ExternalSecret, SOPS)"
	case waiting == "":
		o.Stuck = true
		o.Reason = fmt.Sprintf("Application %s is synced and healthy, but the object does not carry its tracking%s", f.App.Name, trackedElsewhere(f.TrackedBy))
		o.Next = cmd.finalize("--sync")
	case s.Terminal():
		o.Stuck = true
		o.Reason = waiting
		o.Next = "fix the sync error, merge the fix, then " + cmd.finalize("--sync")
	case s.Operation:
		o.Reason = waiting
		o.Next = cmd.finalize("")
	case s.Phase == "" && len(s.History) == 0:
		o.Reason = "no sync yet"
		o.Next = cmd.finalize("--sync")
	default:
		o.Reason = waiting
		o.Stuck = s.Health == "Degraded" || s.Health == "Missing" || s.Health == "Suspended"
		o.Next = cmd.finalize("")
		if o.Stuck {
			o.Next = "fix what Argo CD reports unhealthy, then " + cmd.finalize("")
		}
	}
	if len(f.Explain) > 0 && o.Stage == StageAppPresent {
		o.Reason += " (" + strings.TrimSpace(f.Explain[0]) + ")"
	}
}

// placeReview places an object whose branch is pushed but not merged.
func placeReview(o *Object, f Facts, cmd commands) {
	o.Stage = StageInReview
	switch {
	case f.PR == nil && f.PRNote != "":
		o.Reason = "branch pushed; pull request not looked up: " + f.PRNote
		o.Next = "review and merge the branch"
	case f.PR == nil:
		o.Reason = "branch pushed, no pull request"
		o.Next = cmd.apply()
	case f.PR.State == gitops.PRClosed:
		o.Stuck = true
		o.Reason = fmt.Sprintf("pull request #%d was closed without merging", f.PR.Number)
		o.Next = cmd.apply() + " (opens a new pull request)"
	case f.PR.State == gitops.PRMerged:
		o.Reason = fmt.Sprintf("pull request #%d merged, but the base branch does not hold the adoption", f.PR.Number)
		o.Next = "check the merge into " + f.PR.Base
	default:
		o.Reason = fmt.Sprintf("pull request #%d open", f.PR.Number)
		o.Next = "review and merge " + f.PR.URL
	}
}

// commands words the next step for one object; a fleet plan is applied
// and finalized whole (finalize takes no --app for it).
type commands struct {
	plan, app, repo string
	fleet           bool
}

func (c commands) apply() string {
	repo := c.repo
	if repo == "" {
		repo = "<gitops repo>"
	}
	return fmt.Sprintf("adopt apply --plan %s --repo %s --open-pr", c.plan, repo)
}

func (c commands) finalize(extra string) string {
	s := fmt.Sprintf("adopt finalize --plan %s --app %s", c.plan, c.app)
	if c.fleet {
		s = fmt.Sprintf("adopt finalize --plan %s", c.plan)
	}
	if extra != "" {
		s += " " + extra
	}
	return s
}

func trackedElsewhere(by string) string {
	if by == "" {
		return ""
	}
	return " (it names " + by + ")"
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	if rev == "" {
		return "an unknown revision"
	}
	return rev
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Assemble places every object and builds the report: counts, stuck,
// Application rows (each at its least advanced object's stage).
func Assemble(now time.Time, plans []PlanRef, facts []Facts, cov *Coverage, notes []string) *Report {
	r := &Report{Time: now.UTC(), Plans: plans, Coverage: cov, Notes: notes, Objects: []Object{}, Applications: []App{}}
	type key struct{ plan, app string }
	apps := map[key]*App{}
	var order []key
	clusters := map[string]*ClusterCounts{}
	for _, f := range facts {
		o := Place(f)
		r.Objects = append(r.Objects, o)
		r.Counts.add(o.Stage)
		if o.Stuck {
			r.Stuck++
		}
		if f.Cluster != "" {
			c := clusters[f.Cluster]
			if c == nil {
				c = &ClusterCounts{Cluster: f.Cluster}
				clusters[f.Cluster] = c
			}
			c.Counts.add(o.Stage)
			if o.Stuck {
				c.Stuck++
			}
		}
		k := key{f.PlanID, f.App.Name}
		a := apps[k]
		if a == nil {
			a = &App{Name: f.App.Name, Cluster: f.Cluster, Plan: f.PlanID, Stage: o.Stage, PR: f.PR, Ignore: f.App.IgnoreSummary()}
			for _, d := range f.App.IgnoreDifferences {
				a.Ignored = append(a.Ignored, d.String()+": "+d.Reason)
			}
			for _, p := range plans {
				if p.ID == f.PlanID {
					a.Branch = p.Branch
				}
			}
			if s := f.AppState; s != nil && s.Found {
				a.Present, a.Sync, a.Health, a.Revision = true, s.Sync, s.Health, s.Revision
			}
			apps[k] = a
			order = append(order, k)
		}
		a.Objects++
		if o.Stage.rank() < a.Stage.rank() || o.Stage == StageRegressed {
			if a.Stage != StageRegressed {
				a.Stage = o.Stage
			}
		}
	}
	for _, k := range order {
		r.Applications = append(r.Applications, *apps[k])
	}
	for _, p := range plans {
		if c := clusters[p.Context]; c != nil {
			r.Clusters = append(r.Clusters, *c)
			delete(clusters, p.Context)
		}
	}
	return r
}

// Nearest are the n objects with the most annotation bytes, most first.
func (r *Report) Nearest(n int) []Object {
	objs := append([]Object(nil), r.Objects...)
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].Budget.AnnotationBytes > objs[j].Budget.AnnotationBytes })
	if len(objs) > n {
		objs = objs[:n]
	}
	return objs
}

// StuckObjects are the objects that will not move on by waiting.
func (r *Report) StuckObjects() []Object {
	var out []Object
	for _, o := range r.Objects {
		if o.Stuck {
			out = append(out, o)
		}
	}
	return out
}
