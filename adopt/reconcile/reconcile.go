// Package reconcile owns one run of continuous adoption (`adopt
// reconcile`): given this run's plan, it keeps one pull request per
// proposed Application on a branch of its own (adopt/<cluster>/<app>),
// finds those pull requests through the provider's API only (never local
// state), treats one closed without merging as a decline until the group's
// content changes, leaves alone a branch someone else pushed to, and
// limits how many pull requests are open and how big one grows. An open
// pull request whose objects are all gone or tracked now is closed with a
// comment (obsolete.go), as Renovate's "autoclosed". It reports what it
// did, group by group.
//
// What reconcile remembers of a group is in two places. The store (Store,
// one ConfigMap per branch) records, before each push, the group's plan,
// the commit about to be pushed and the digest of the group's content
// (Record); the pull request's body ends with the same record as one HTML
// comment, written after the push (Mark). A branch is adopt's while its
// head is the commit either names, so a run that fails between the push
// and the pull request's edit converges on the next. A push that finds
// the branch moved since the pull requests were read pushes nothing over
// it (gitops.ErrBranchMoved): the group is held. A decline is the closed
// pull request itself, compared with the store's record of what it
// proposed (the body's only when the store has none), so an edited
// description does not undo it: the team sees it where they closed it, and
// reopening it undoes it.
package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/export"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/gitops"
)

// Outcomes of one group in one run.
const (
	Opened     = "opened"      // a pull request was opened
	Updated    = "updated"     // a new commit on the branch of the open pull request
	Unchanged  = "unchanged"   // open, nothing new: nothing pushed or edited
	Declined   = "declined"    // closed without merging, content unchanged since
	Reproposed = "re-proposed" // declined before, its content changed since
	HeldByUser = "held"        // someone else pushed to the branch: left alone
	Waiting    = "waiting"     // --max-open-prs reached
	TooBig     = "too-big"     // more objects than --max-objects-per-pr
	Merged     = "merged"      // merged; finalize waits for its Applications
	Finalized  = "finalized"   // merged, and finalized this run
	Done       = "done"        // merged and finalized by an earlier run
	Failed     = "failed"      // writing or opening failed (Error says why)
	// Obsolete is an open pull request of a group this run does not
	// propose, whose objects are all gone or tracked now: closed with a
	// comment, as Renovate's "autoclosed"; it no longer counts toward
	// --max-open-prs, and is no decline.
	Obsolete = "closed-obsolete"
)

// Group is one pull request's worth of the plan: one proposed
// Application, or the Applications of one team (Options.Teams).
type Group struct {
	// App names the group: its Application, or its team's group name.
	App string `json:"app" yaml:"app"`
	// Apps are a team group's Applications.
	Apps   []string `json:"apps,omitempty" yaml:"apps,omitempty"`
	Branch string   `json:"branch" yaml:"branch"`
	// Objects is how many objects the group adopts now.
	Objects int    `json:"objects" yaml:"objects"`
	Outcome string `json:"outcome" yaml:"outcome"`
	// PR is the group's newest pull request, when it has one.
	PR *gitops.PRStatus `json:"pullRequest,omitempty" yaml:"pullRequest,omitempty"`
	// Why explains the outcome in one sentence.
	Why string `json:"why,omitempty" yaml:"why,omitempty"`
}

// Report is what one run did.
type Report struct {
	Plan    string  `json:"plan" yaml:"plan"`
	Cluster string  `json:"cluster" yaml:"cluster"`
	Groups  []Group `json:"groups" yaml:"groups"`
	// Untracked is how many objects the plan proposes to adopt.
	Untracked int `json:"untracked" yaml:"untracked"`
	// OpenPRs is how many of reconcile's pull requests are open after the
	// run; MergedPRs how many branches of this cluster were merged.
	OpenPRs   int `json:"openPullRequests" yaml:"openPullRequests"`
	MergedPRs int `json:"mergedPullRequests" yaml:"mergedPullRequests"`
	// Finalized is how many objects this run finalized.
	Finalized int `json:"finalized" yaml:"finalized"`
	// NotScanned are the types the plan could not read ("type: reason"):
	// while any is, Untracked is only a lower bound.
	NotScanned []string `json:"notScanned,omitempty" yaml:"notScanned,omitempty"`
	// NothingToDo is a run with no group to propose and none waiting to be
	// finalized: it asked the provider nothing and wrote nothing.
	NothingToDo bool `json:"nothingToDo,omitempty" yaml:"nothingToDo,omitempty"`
	// SecretsLeft are untracked Secrets no group adopts: no form adopts
	// them (a group adopts a Secret only in a form, plan.Object.InForm: a
	// SealedSecret, a SOPS-encrypted file or an ExternalSecret; adopt
	// never writes a Secret's values to Git).
	SecretsLeft int `json:"secretsLeft,omitempty" yaml:"secretsLeft,omitempty"`
	// SecretsNote says, in one sentence, why Secrets are not adopted:
	// adopt.yaml excludes them (the chart's secrets.read off), or why
	// the first Secret left is (no form fits, get forbidden, ...).
	SecretsNote string `json:"secretsNote,omitempty" yaml:"secretsNote,omitempty"`
}

// Count is how many groups had the outcome.
func (r *Report) Count(outcome string) int {
	n := 0
	for _, g := range r.Groups {
		if g.Outcome == outcome {
			n++
		}
	}
	return n
}

// Written is what writing a group's plan to its branch did.
type Written struct {
	// Commit is the branch tip after the write; Changed says whether a
	// new commit was pushed.
	Commit  string
	Changed bool
}

// Seams are the outside parts one run uses.
type Seams struct {
	// Lock takes the run's lock (a Lock's Acquire) before its first write,
	// and returns what releases it. A run that writes nothing never calls
	// it.
	Lock func(ctx context.Context) (release func(), err error)
	// PRs lists the pull requests of reconcile's branches.
	PRs gitops.PRStateReader
	// Write commits sub (a plan of one Application) on branch and pushes
	// it as p says: over one of p.Expect only (else an error wrapping
	// gitops.ErrBranchMoved, nothing pushed), calling p.Record with the
	// commit first.
	Write func(ctx context.Context, sub *plan.Plan, branch string, p Push) (Written, error)
	// Open opens or updates the pull request from branch, with the title
	// and body text makes of the rendered ones.
	Open func(ctx context.Context, sub *plan.Plan, branch string, text func(title, body string) (string, string)) (*gitops.PullRequest, error)
	// Fetch reads a live object, for the group's digest (LiveDigest).
	Fetch apply.Fetcher
	// Save records sub and rec as what branch proposes (Store.Save):
	// before the push, or when nothing is pushed, before the pull request
	// is opened or updated.
	Save func(ctx context.Context, branch string, sub *plan.Plan, rec Record) error
	// Finalize runs finalize's guarded cleanup of what branch's merged
	// pull request proposed, once its Applications are Synced and Healthy
	// (FinalizeMerged).
	Finalize func(ctx context.Context, branch string) (FinalizeResult, error)
	// Load reads the plan the store recorded of branch (Store.Load); nil
	// when none. Close comments on a pull request and closes it
	// (gitops.PRCloser). Without either, no pull request is closed as
	// obsolete.
	Load  func(ctx context.Context, branch string) (*plan.Plan, error)
	Close func(ctx context.Context, o gitops.ClosePROptions) error
}

// Push is how Seams.Write may push a group's branch.
type Push struct {
	// Expect are the branch tips the group was decided from
	// (gitops.BranchAbsent: no branch), as gitops.PublishOptions.Expect.
	Expect []string
	// Record is called with the built commit before it is pushed: the run
	// records what it is about to push (Seams.Save) before pushing it.
	Record func(ctx context.Context, commit string) error
	// FromBase builds on the base branch even when the group's branch
	// exists: its pull request was merged, and new objects extend what
	// the base holds now (gitops.PublishOptions.FromBase).
	FromBase bool
}

// FinalizeResult is what finalizing a merged group did: its outcome
// (Finalized, Done or Merged while it waits), how many objects it
// finalized, and why.
type FinalizeResult struct {
	Outcome   string
	Finalized int
	Why       string
}

// Options are one run's inputs.
type Options struct {
	Plan *plan.Plan
	// Cluster names the cluster in branch names (BranchPrefix).
	Cluster string
	Repo    gitops.RepoRef
	Base    string
	// MaxOpenPRs caps open pull requests (0: no cap); MaxObjects the
	// objects of one (0: no cap).
	MaxOpenPRs, MaxObjects int
	// Records are the store's records, by branch (Store.Records). With
	// none unfinalized, and no group to propose, the run asks the provider
	// nothing: there is nothing to do.
	Records map[string]Record
	// Settings are apply's options that change what a branch holds, and
	// adopt's version, in one string (PlanDigest): a change to them is
	// something new.
	Settings string
	// Teams puts Applications, by name, in a team's group (one pull
	// request for all of them, on the branch of the group's name); an
	// Application not in it is a group of its own.
	Teams map[string]string
	// SecretsExcluded is the adopt.yaml rule that excludes Secrets
	// (config.ExcludesType: "exclusions[0]"; the chart's, while
	// secrets.read is off), "" when none: the report says why no Secret
	// is counted or proposed.
	SecretsExcluded string
}

// ErrOtherName is a run whose cluster name differs from the one the
// cluster's records were written under: it would open a duplicate of
// every pull request.
var ErrOtherName = errors.New("this cluster's records name it differently")

// sameCluster refuses a run named cluster when the cluster's own records
// (kept in the cluster, so every runner of it sees them) were written by
// runs that named it otherwise, naming both.
func sameCluster(cluster string, records map[string]Record) error {
	prefix := BranchPrefix(cluster)
	others := map[string]int{}
	for branch := range records {
		if strings.HasPrefix(branch, prefix) {
			return nil // runs of this name wrote here before
		}
		if name, _, ok := strings.Cut(strings.TrimPrefix(branch, "adopt/"), "/"); ok && strings.HasPrefix(branch, "adopt/") {
			others[name]++
		}
	}
	if len(others) == 0 {
		return nil
	}
	names := make([]string, 0, len(others))
	for n := range others {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Errorf("%w: its records are on branches adopt/%s/…, and this run is named %q, so it would open a duplicate of every pull request: run with --cluster-name %s (the chart's clusterName), or, to rename the cluster for good, close the old pull requests and delete their records (ConfigMaps labelled app.kubernetes.io/managed-by=adopt in the lock namespace)",
		ErrOtherName, strings.Join(names, "/…, adopt/"), cluster, names[0])
}

// BranchPrefix is where a cluster's groups live: adopt/<cluster>/.
func BranchPrefix(cluster string) string { return "adopt/" + cluster + "/" }

// nameOK are the characters kept in a branch name's cluster part.
var nameOK = regexp.MustCompile(`[^a-z0-9._-]+`)

// ClusterName turns a kube context name into a branch name part:
// lower case, runs of other characters as one '-'.
func ClusterName(context string) string {
	n := strings.Trim(nameOK.ReplaceAllString(strings.ToLower(context), "-"), "-.")
	if n == "" {
		n = "cluster"
	}
	return n
}

// Mark is what a pull request's body records of its group, as one HTML
// comment: the digest of the group's objects when proposed (LiveDigest),
// the commit reconcile last pushed, the digest of what else shapes the
// branch (PlanDigest), which object versions were seen (Seen), and the
// digest of the title and description adopt rendered (TextDigest: when
// the pull request shows others, a person edited them, and updates keep
// their words). The
// store's Record holds the same but Text, written before the push.
type Mark struct {
	Digest, Head, Plan, Seen, Text string
}

// marker reads a Mark; plan=, seen= and text= are missing from the bodies
// of pull requests opened before they were recorded.
var marker = regexp.MustCompile(`<!-- adopt-reconcile digest=(sha256:[0-9a-f]{64}) head=([0-9a-f]*)(?: plan=(sha256:[0-9a-f]{64}))?(?: seen=(sha256:[0-9a-f]{64}))?(?: text=(sha256:[0-9a-f]{64}))? -->`)

// RebuildBox is the checkbox that ends a pull request's description
// above the record: a reviewer who pushed to the branch ticks it to hand
// the branch back (as Renovate's "rebase/retry" box), and the next run
// builds on their commit again, rewriting adopt's files from the cluster.
const RebuildBox = "- [ ] <!-- adopt-rebuild --> Rebuild this branch from the cluster on the next run, over commits adopt did not push (adopt's files are rewritten; other files are kept)"

// ticked finds the RebuildBox ticked.
var ticked = regexp.MustCompile(`(?m)^\s*[-*] \[[xX]\] <!-- adopt-rebuild -->`)

// trailerStart finds where adopt's part of a description begins: the box,
// else the record.
var trailerStart = regexp.MustCompile(`(?m)^\s*[-*] \[[ xX]\] <!-- adopt-rebuild -->|<!-- adopt-reconcile `)

// Trailer is what ends a pull request's body: the RebuildBox, unticked,
// and m as the last line.
func Trailer(m Mark) string {
	t := fmt.Sprintf("<!-- adopt-reconcile digest=%s head=%s", m.Digest, m.Head)
	if m.Plan != "" {
		t += " plan=" + m.Plan
	}
	if m.Seen != "" {
		t += " seen=" + m.Seen
	}
	if m.Text != "" {
		t += " text=" + m.Text
	}
	return RebuildBox + "\n\n" + t + " -->"
}

// readMarker returns the Mark a pull request body records.
func readMarker(body string) (Mark, bool) {
	m := marker.FindStringSubmatch(body)
	if m == nil {
		return Mark{}, false
	}
	return Mark{Digest: m[1], Head: m[2], Plan: m[3], Seen: m[4], Text: m[5]}, true
}

// UserText is a description without adopt's trailer (Trailer): the words
// a person may edit.
func UserText(body string) string {
	if loc := trailerStart.FindStringIndex(body); loc != nil {
		body = body[:loc[0]]
	}
	return strings.TrimRight(body, " \t\r\n")
}

// TextDigest is the digest of a pull request's title (without a draft
// prefix a provider adds) and its description's UserText.
func TextDigest(title, body string) string {
	for _, p := range []string{"WIP:", "Draft:"} {
		title = strings.TrimPrefix(title, p)
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(title) + "\n" + UserText(body)))
	return "sha256:" + hex.EncodeToString(h[:])
}

// edited says whether a person edited pr's title or description since
// adopt wrote them (body its Mark): a description that lost adopt's
// record counts as edited; one written before the text digest was
// recorded, as adopt's.
func edited(pr *gitops.PRStatus, body Mark, marked bool) bool {
	return !marked || body.Text != "" && body.Text != TextDigest(pr.Title, pr.Body)
}

// Sub is the plan of some Applications of p: their objects only, and of
// what the plan left out, what is in their namespaces (the pull request
// names a group's own Secrets left out, and the store keeps no more than
// the group's), sealed.
func Sub(p *plan.Plan, apps ...plan.Application) (*plan.Plan, error) {
	sub := *p
	sub.Applications = apps
	in, ns := map[string]bool{}, map[string]bool{}
	for _, app := range apps {
		ns[app.Namespace] = app.Namespace != ""
		for _, ref := range app.Objects {
			in[ref] = true
		}
	}
	sub.Skipped = nil
	for _, s := range p.Skipped {
		if ns[s.Namespace] {
			sub.Skipped = append(sub.Skipped, s)
		}
	}
	sub.Objects = nil
	for _, ob := range p.Objects {
		if in[ob.Ref.String()] {
			sub.Objects = append(sub.Objects, ob)
		}
	}
	if err := sub.Seal(); err != nil {
		return nil, err
	}
	return &sub, nil
}

// proposed are the Applications p proposes that are groups, by name: not
// the existing ones, nor those that hold only Secrets no form adopts
// (apply never writes a Secret's values to Git, so such a pull request
// would change nothing). A Secret the plan adopts in a form
// (plan.Object.InForm: a SealedSecret, a SOPS-encrypted file, an
// ExternalSecret; the planner chose it from what exists) is written like
// any other object, in its form: a group of it alone is proposed like any
// other.
func proposed(p *plan.Plan) []plan.Application {
	leftOut := map[string]bool{}
	for _, ob := range p.Objects {
		leftOut[ob.Ref.String()] = ob.IsSecret() && !ob.InForm()
	}
	var apps []plan.Application
	for _, app := range p.Applications {
		if app.Source == "existing" || app.Existing != nil || onlyLeftOut(app, leftOut) {
			continue
		}
		apps = append(apps, app)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].Name < apps[j].Name })
	return apps
}

func onlyLeftOut(app plan.Application, leftOut map[string]bool) bool {
	for _, ref := range app.Objects {
		if !leftOut[ref] {
			return false
		}
	}
	return len(app.Objects) > 0
}

// TeamsByLabel puts each Application of p whose destination namespace
// carries the label key (labels, by namespace) in the group
// "<key>-<value>" (the key's part after its last '/', both as ClusterName
// spells names), for Options.Teams.
func TeamsByLabel(p *plan.Plan, key string, labels map[string]map[string]string) map[string]string {
	short := key[strings.LastIndex(key, "/")+1:]
	teams := map[string]string{}
	for _, app := range p.Applications {
		if v := labels[app.Namespace][key]; app.Namespace != "" && v != "" {
			teams[app.Name] = ClusterName(short + "-" + v)
		}
	}
	return teams
}

// teamGroup is one pull request's Applications, under its group's name.
type teamGroup struct {
	name string
	apps []plan.Application
}

// grouped puts apps in their groups (Options.Teams), by group name.
func grouped(apps []plan.Application, teams map[string]string) []teamGroup {
	at := map[string]int{}
	var out []teamGroup
	for _, app := range apps {
		name := app.Name
		if t := teams[app.Name]; t != "" {
			name = t
		}
		if i, ok := at[name]; ok {
			out[i].apps = append(out[i].apps, app)
			continue
		}
		at[name] = len(out)
		out = append(out, teamGroup{name: name, apps: []plan.Application{app}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// secretsLeft counts the untracked Secrets of p that none of the groups
// apps adopts (in no group, or in one that does not adopt them in a form:
// apply leaves them out of Git), and says why of the first:
// they stay untracked until a secrets operator or a person manages them.
// excluded is the adopt.yaml rule that keeps Secrets out of the plan
// altogether (Options.SecretsExcluded).
func secretsLeft(p *plan.Plan, apps []plan.Application, excluded string) (int, string) {
	if excluded != "" {
		return 0, "Secrets are not read, counted or proposed: adopt.yaml " + excluded + " excludes them (the chart's default, secrets.read off); " +
			"to adopt hand-applied Secrets (as SealedSecrets, SOPS-encrypted files or ExternalSecrets), turn secrets.read on, and secrets.externalSecrets for a store's push (docs/secrets.md says what the token may then read and write)"
	}
	in := map[string]bool{}
	for _, app := range apps {
		for _, ref := range app.Objects {
			in[ref] = true
		}
	}
	n, why := 0, ""
	for _, ob := range p.Objects {
		if !ob.IsSecret() || ob.App == "" || in[ob.Ref.String()] && ob.InForm() {
			continue
		}
		if n++; why == "" {
			why = ob.Ref.String() + ": " + secretWhy(ob)
		}
	}
	if n == 0 {
		return 0, ""
	}
	return n, fmt.Sprintf("%d untracked Secret(s) left to you (no form adopts them; adopt never writes a Secret's values to Git); the first, %s", n, why)
}

// secretWhy is what the plan says of a Secret left out: its secret-form
// finding (why no form adopts it), else its secret finding.
func secretWhy(ob plan.Object) string {
	for _, code := range []string{plan.CodeSecretForm, plan.CodeSecret} {
		for _, f := range ob.Findings {
			if f.Code == code {
				return f.Message
			}
		}
	}
	return "no form fits it (no .sops.yaml rule for its path, no Sealed Secrets controller, no External Secrets store), so no form adopts it"
}

// Run is one reconcile pass over o.Plan. It first decides every group
// from reads alone (the provider's pull requests, and the live objects of
// a group written since its pull request recorded them). Only when a
// group needs a write, or a merged group is left to finalize, does it take
// the lock, read the pull requests again under it, and act: so a run with
// nothing new writes nothing, to the provider or to the cluster.
func Run(ctx context.Context, o Options, s Seams) (*Report, error) {
	if err := sameCluster(o.Cluster, o.Records); err != nil {
		return nil, err
	}
	apps := proposed(o.Plan)
	rep := &Report{Plan: o.Plan.ID, Cluster: o.Cluster}
	rep.SecretsLeft, rep.SecretsNote = secretsLeft(o.Plan, apps, o.SecretsExcluded)
	for _, n := range o.Plan.NotScanned {
		rep.NotScanned = append(rep.NotScanned, n.Type+": "+n.Reason)
	}
	// No group to propose and no merged group left to finalize: nothing to
	// do, so no lock, no question to the provider, no write.
	if len(apps) == 0 && !unfinalized(o.Records) {
		rep.NothingToDo = true
		return rep, nil
	}
	fresh, live := *rep, digests{} // what the passes fill starts empty in each
	writes, err := pass(ctx, o, s, live, apps, rep, false)
	if err != nil {
		return nil, err
	}
	if writes == 0 {
		return rep, nil
	}
	release, err := s.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	*rep = fresh
	if _, err := pass(ctx, o, s, live, apps, rep, true); err != nil {
		return nil, err
	}
	return rep, nil
}

// pass reads the pull requests and decides each group into rep. With act
// it also writes what a group needs and finalizes merged groups; without,
// it returns how many groups need a write (a merged group with a stored
// plan not finalized yet counts as one). Both passes share live.
func pass(ctx context.Context, o Options, s Seams, live digests, apps []plan.Application, rep *Report, act bool) (int, error) {
	prefix := BranchPrefix(o.Cluster)
	groups := grouped(apps, o.Teams)
	newest, err := newestPRs(ctx, o, s.PRs, groups)
	if err != nil {
		return 0, err
	}
	open := 0
	for _, pr := range newest {
		if pr.State == gitops.PROpen {
			open++
		}
	}
	writes := 0
	// Open pull requests of groups this run does not propose whose
	// objects are all gone or tracked: closed as obsolete (under the lock),
	// so they count toward --max-open-prs no longer.
	proposing := map[string]bool{}
	for _, tg := range groups {
		proposing[prefix+tg.name] = true
	}
	obs, judged := obsoletes(ctx, o, s, newest, proposing)
	var closed []Group
	for i := range obs {
		g := obs[i].g
		switch {
		case !act:
			writes++
			g.Outcome, g.Why = Obsolete, "to be closed"
			open--
		default:
			if err := closeObsolete(ctx, o, s, &obs[i]); err != nil {
				g.Outcome, g.Why = Failed, gitops.OneLine(fmt.Sprintf("closing %s as obsolete: %v", g.PR.URL, err))
				break
			}
			g.Outcome = Obsolete
			g.Why = fmt.Sprintf("%s was closed with a comment: its objects are gone or tracked by Argo CD now (%d gone, %d tracked)", g.PR.URL, obs[i].gone, obs[i].tracked)
			open--
		}
		closed = append(closed, g)
	}
	for _, tg := range groups {
		g := Group{App: tg.name, Branch: prefix + tg.name, PR: newest[prefix+tg.name]}
		for _, app := range tg.apps {
			g.Objects += len(app.Objects)
			if tg.name != app.Name {
				g.Apps = append(g.Apps, app.Name)
			}
		}
		rep.Untracked += g.Objects
		d, err := decide(ctx, o, s, live, tg.apps, &g, open)
		switch {
		case err != nil:
			g.Outcome, g.Why = Failed, gitops.OneLine(err.Error())
		case d != nil && !act:
			writes++
			g.Outcome, g.Why = d.outcome, "to be written"
		case d != nil:
			if err := write(ctx, s, &g, d); err != nil {
				g.Outcome, g.Why = Failed, gitops.OneLine(err.Error())
			}
		}
		if g.Outcome == Opened || g.Outcome == Reproposed {
			open++
		}
		rep.Groups = append(rep.Groups, g)
	}
	rep.Groups = append(rep.Groups, closed...)
	rep.Groups = append(rep.Groups, judged...)
	// Merged branches: finalize what they proposed once their
	// Applications are ready.
	var heads []string
	for h := range newest {
		heads = append(heads, h)
	}
	sort.Strings(heads)
	at := map[string]int{}
	for i, g := range rep.Groups {
		at[g.Branch] = i
	}
	// Done groups are judged from their records: their pull requests are
	// not asked about, nor their plans read.
	var done []string
	for h, rec := range o.Records {
		if _, asked := newest[h]; !asked && rec.Finalized && strings.HasPrefix(h, prefix) {
			done = append(done, h)
		}
	}
	sort.Strings(done)
	for _, h := range done {
		rep.MergedPRs++
		rep.Groups = append(rep.Groups, Group{App: strings.TrimPrefix(h, prefix), Branch: h, Outcome: Done, Why: "finalized by an earlier run"})
	}
	for _, h := range heads {
		pr := newest[h]
		if pr.State != gitops.PRMerged {
			continue
		}
		rep.MergedPRs++
		g := Group{App: strings.TrimPrefix(h, prefix), Branch: h, PR: pr}
		if i, ok := at[h]; ok {
			g = rep.Groups[i]
		}
		rec, recorded := o.Records[h]
		var f FinalizeResult
		switch {
		case g.Outcome != "" && g.Outcome != Merged:
			continue // its group was decided this run (new objects extend it)
		case recorded && rec.Reproposes == pr.Number:
			continue // an extension of it is under way: the store's plan is the extension's
		case recorded && rec.Finalized && g.Outcome == Merged:
			continue // decided: finalized, and its objects proposed again
		case recorded && rec.Finalized:
			// Done: its plan is not read again.
			f = FinalizeResult{Outcome: Done, Why: "finalized by an earlier run"}
		case !act && recorded:
			writes++
			continue
		default:
			var err error
			if f, err = s.Finalize(ctx, h); err != nil {
				f = FinalizeResult{Outcome: Failed, Why: gitops.OneLine(err.Error())}
			}
		}
		g.Outcome, g.Why = f.Outcome, f.Why
		rep.Finalized += f.Finalized
		if i, ok := at[h]; ok {
			rep.Groups[i] = g
		} else {
			rep.Groups = append(rep.Groups, g)
		}
	}
	rep.OpenPRs = open
	return writes, nil
}

// newestPRs are the newest pull request of each branch this run judges:
// the open ones of this cluster's branches (one list the provider filters
// by state), and, for a branch without one, asked by its name: each group
// this run proposes that adopt recorded, and each recorded group not
// finalized. Done groups (finalized, not proposed again) are not asked
// about, so a run's questions grow with the groups in play, not with the
// repository's history. A proposed group adopt never recorded has no pull
// request of adopt's (the record is written before any push).
func newestPRs(ctx context.Context, o Options, prs gitops.PRStateReader, groups []teamGroup) (map[string]*gitops.PRStatus, error) {
	prefix := BranchPrefix(o.Cluster)
	open, err := prs.ListOpenPRs(ctx, o.Repo, o.Base, prefix)
	if err != nil {
		return nil, err
	}
	newest := map[string]*gitops.PRStatus{}
	for i := range open {
		if newest[open[i].Head] == nil {
			newest[open[i].Head] = &open[i]
		}
	}
	ask := map[string]bool{}
	for _, tg := range groups {
		if _, ok := o.Records[prefix+tg.name]; ok {
			ask[prefix+tg.name] = true
		}
	}
	for b, rec := range o.Records {
		if !rec.Finalized && strings.HasPrefix(b, prefix) {
			ask[b] = true
		}
	}
	branches := make([]string, 0, len(ask))
	for b := range ask {
		if newest[b] == nil {
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	for _, b := range branches {
		pr, err := prs.PRState(ctx, gitops.FindPROptions{Repo: o.Repo, Base: o.Base, Head: b})
		if err != nil {
			return nil, err
		}
		if pr != nil {
			newest[b] = pr
		}
	}
	return newest, nil
}

// unfinalized says whether a record is of a group not finalized yet.
func unfinalized(records map[string]Record) bool {
	for _, r := range records {
		if !r.Finalized {
			return true
		}
	}
	return false
}

// decision is a group that needs a write: its plan, what its pull request
// will record, and the outcome once written (Opened, Reproposed or
// Updated); the branch tips it was decided from (Push.Expect), the closed
// or merged pull request a re-proposal or an extension replaces as the
// branch's newest, and the store's record (nil: none).
type decision struct {
	sub        *plan.Plan
	mark       Mark
	outcome    string
	expect     []string
	reproposes int64
	rec        *Record
	// note says what a new pull request adds (one next to a merged
	// group's), or that a branch was handed back; keep, that a person
	// edited the open pull request's title or description: an update
	// keeps them.
	note     string
	keep     bool
	fromBase bool
}

// decide reads what one group (apps) needs. A group that needs no write
// gets its outcome in g and a nil decision. The group's objects are read
// again (LiveDigest) only when one of them was written since its pull
// request or the store recorded them (Seen), and at most once a run
// (live).
func decide(ctx context.Context, o Options, s Seams, live digests, apps []plan.Application, g *Group, open int) (*decision, error) {
	sub, err := Sub(o.Plan, apps...)
	if err != nil {
		return nil, err
	}
	if o.MaxObjects > 0 && g.Objects > o.MaxObjects {
		g.Outcome = TooBig
		g.Why = fmt.Sprintf("%d objects, more than --max-objects-per-pr %d: split the group (adopt.yaml groupBy) or raise the cap", g.Objects, o.MaxObjects)
		return nil, nil
	}
	now := Mark{Plan: PlanDigest(sub, o.Settings), Seen: Seen(sub)}
	pr := g.PR
	var was Mark
	var marked bool
	if pr != nil {
		was, marked = readMarker(pr.Body)
	}
	rec, recorded := o.Records[g.Branch]
	switch {
	case marked && was.Seen == now.Seen:
		now.Digest = was.Digest // no object was written since
	case recorded && rec.Digest != "" && rec.Seen == now.Seen:
		now.Digest = rec.Digest
	default:
		if now.Digest, err = live.of(ctx, s.Fetch, g.Branch, sub); err != nil {
			return nil, err
		}
	}
	// adopt's commits on the branch: the one the pull request's body
	// names, and the one the store recorded before adopt's last push.
	var heads []string
	for _, h := range []string{was.Head, rec.Head} {
		if h != "" && !slices.Contains(heads, h) {
			heads = append(heads, h)
		}
	}
	d := &decision{sub: sub, mark: now, outcome: Opened}
	if recorded {
		d.rec = &rec
	}
	switch {
	case pr != nil && pr.State == gitops.PROpen:
		d.keep = edited(pr, was, marked)
		if !slices.Contains(heads, pr.HeadSHA) {
			if ticked.MatchString(pr.Body) {
				// Handed back: build on the person's commit.
				d.outcome, d.expect, d.note = Updated, []string{pr.HeadSHA}, "the branch was handed back (its rebuild box ticked)"
				return d, nil
			}
			g.Outcome = HeldByUser
			g.Why = fmt.Sprintf("branch %s was pushed to by someone else (its head %.12s is not a commit adopt pushed): left alone; review or close %s, or tick its rebuild box to hand the branch back", g.Branch, pr.HeadSHA, pr.URL)
			return nil, nil
		}
		switch {
		case marked && was.Head == pr.HeadSHA && was.Digest == now.Digest && was.Plan == now.Plan:
			g.Outcome, g.Why = Unchanged, "nothing new since the last run"
			return nil, nil
		case !marked && rec.Head == pr.HeadSHA && rec.Digest == now.Digest && rec.Plan == now.Plan:
			// Someone removed the record from the description: the
			// store's says nothing is new, and the description stays
			// as they left it.
			g.Outcome, g.Why = Unchanged, "nothing new since the last run (as the store records it: the description no longer holds adopt's record)"
			return nil, nil
		}
		d.outcome, d.expect = Updated, []string{pr.HeadSHA}
		return d, nil
	case pr != nil && pr.State == gitops.PRClosed:
		if declined(pr, was, marked, rec, recorded, now.Digest) {
			g.Outcome = Declined
			g.Why = fmt.Sprintf("%s was closed without merging; not proposed again until one of its objects changes (reopen it to undo the decline)", pr.URL)
			return nil, nil
		}
		d.outcome, d.reproposes = Reproposed, pr.Number
	case pr != nil && pr.State == gitops.PRMerged:
		added, err := addedSince(ctx, s, pr, rec, recorded, sub)
		if err != nil {
			return nil, err
		}
		if len(added) == 0 {
			g.Outcome = Merged
			g.Why = fmt.Sprintf("%s was merged; the plan still proposes %d object(s): they are adopted once Argo CD creates and syncs its Applications", pr.URL, g.Objects)
			if recorded && rec.Finalized {
				g.Why = fmt.Sprintf("%s was merged and finalized, yet the plan proposes its %d object(s) again: they lost Argo CD's tracking (was the Application deleted?); adopt proposes only objects new since", pr.URL, g.Objects)
			}
			return nil, nil
		}
		// New objects next to a finalized group: a new pull request on
		// the group's branch, built on the base that holds what merged
		// (apply extends the merged Application, never replaces it, even
		// renamed in review). The merged head is in the base, so nothing
		// is lost by moving the branch off it.
		d.reproposes, d.fromBase, d.note = pr.Number, true, fmt.Sprintf("adds %s next to what %s merged", strings.Join(added, ", "), pr.URL)
		if !slices.Contains(heads, pr.HeadSHA) {
			heads = append(heads, pr.HeadSHA)
		}
	}
	if o.MaxOpenPRs > 0 && open >= o.MaxOpenPRs {
		g.Outcome = Waiting
		g.Why = fmt.Sprintf("%d pull requests open, --max-open-prs %d: waits for one to merge or close", open, o.MaxOpenPRs)
		return nil, nil
	}
	// No open pull request: the branch is absent, or at a commit adopt
	// pushed; anything else is someone's, and left alone.
	d.expect = append([]string{gitops.BranchAbsent}, heads...)
	return d, nil
}

// declined says whether the closed pull request pr declines the group
// whose content is now digest. It is keyed on pr and the store's record of
// what pr proposed (the record is of pr when its head is pr's), which no
// reviewer edits; the body's record counts only when the store's is not
// of pr. A record of a re-proposal replacing pr is one begun and not
// finished, and pr closed as obsolete by reconcile (Record.Autoclosed) was
// closed by no one: neither is a decline.
func declined(pr *gitops.PRStatus, body Mark, marked bool, rec Record, recorded bool, digest string) bool {
	switch {
	case recorded && rec.Reproposes == pr.Number, recorded && rec.Autoclosed == pr.Number:
		return false
	case recorded && rec.Digest != "" && rec.Head == pr.HeadSHA:
		return rec.Digest == digest
	case marked:
		return body.Digest == digest
	case recorded && rec.Digest != "":
		return rec.Digest == digest
	}
	return false
}

// addedSince are the objects of sub that the merged pull request pr did
// not propose, once its group was finalized (or an extension of it was
// begun: the record then names pr in Reproposes, and is of the
// extension). Before that, what the plan proposes may be pr's own objects
// that Argo CD has not synced yet, and its cleanup is still to come:
// nothing is new. Without a stored plan nothing can be told new.
func addedSince(ctx context.Context, s Seams, pr *gitops.PRStatus, rec Record, recorded bool, sub *plan.Plan) ([]string, error) {
	switch {
	case !recorded:
		return nil, nil
	case rec.Reproposes == pr.Number:
		return refsOf(sub), nil
	case !rec.Finalized || s.Load == nil:
		return nil, nil
	}
	merged, err := s.Load(ctx, pr.Head)
	if err != nil || merged == nil {
		return nil, err
	}
	was := map[string]bool{}
	for _, ref := range refsOf(merged) {
		was[ref] = true
	}
	var added []string
	for _, ref := range refsOf(sub) {
		if !was[ref] {
			added = append(added, ref)
		}
	}
	return added, nil
}

// refsOf are the objects p's Applications propose, sorted.
func refsOf(p *plan.Plan) []string {
	var refs []string
	for _, app := range p.Applications {
		refs = append(refs, app.Objects...)
	}
	sort.Strings(refs)
	return refs
}

// write records the group in the store (Seams.Save, under Push.Record:
// before the push, or when nothing is pushed, after it), pushes its
// branch, and opens or updates its pull request. A branch that moved
// since it was read is left alone: the group is held. An update that
// finds Git already holding the group only brings the records up to date.
// Each step failing leaves records the next run reads as adopt's.
func write(ctx context.Context, s Seams, g *Group, d *decision) error {
	rec := Record{Mark: d.mark, Reproposes: d.reproposes}
	saved := false
	w, err := s.Write(ctx, d.sub, g.Branch, Push{Expect: d.expect, FromBase: d.fromBase, Record: func(ctx context.Context, commit string) error {
		rec.Head = commit
		if err := s.Save(ctx, g.Branch, d.sub, rec); err != nil {
			return err
		}
		saved = true
		return nil
	}})
	if errors.Is(err, gitops.ErrBranchMoved) {
		g.Outcome = HeldByUser
		if d.outcome == Updated {
			g.Why = fmt.Sprintf("someone pushed to %s during this run: left alone, review or close %s", g.Branch, g.PR.URL)
		} else {
			g.Why = fmt.Sprintf("branch %s holds a commit adopt did not push: left alone; delete the branch to have the group proposed again", g.Branch)
		}
		return nil
	}
	if err != nil {
		return err
	}
	d.mark.Head, rec.Head = w.Commit, w.Commit
	if !saved && (d.rec == nil || d.rec.Mark != rec.Mark || d.rec.Reproposes != rec.Reproposes) {
		if err := s.Save(ctx, g.Branch, d.sub, rec); err != nil {
			return err
		}
	}
	pr, err := s.Open(ctx, d.sub, g.Branch, func(title, body string) (string, string) {
		// The record names adopt's own words, kept or not: while the
		// pull request shows others, a person's edits stay.
		m := d.mark
		m.Text = TextDigest(title, body)
		if d.keep {
			title, body = g.PR.Title, UserText(g.PR.Body)
		}
		return title, body + "\n\n" + Trailer(m)
	})
	if err != nil {
		return err
	}
	switch {
	case d.outcome != Updated:
		g.Outcome, g.Why = d.outcome, "pull request "+pr.URL
	case w.Changed:
		g.Outcome, g.Why = Updated, fmt.Sprintf("new commit %.12s on %s", w.Commit, g.Branch)
	default:
		g.Outcome, g.Why = Unchanged, "Git already holds the group; the pull request's record was brought up to date"
	}
	if d.note != "" {
		g.Why += ": " + d.note
	}
	return nil
}

// Seen is the digest of which version of each of sub's objects the plan
// listed (ref and resourceVersion): while it is the same, no object was
// written, so the group's content is what was recorded.
func Seen(sub *plan.Plan) string {
	var lines []string
	for _, ob := range sub.Objects {
		lines = append(lines, ob.Ref.String()+" "+ob.ResourceVersion())
	}
	sort.Strings(lines)
	h := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(h[:])
}

// PlanDigest is the digest of what shapes a group's branch besides its
// live objects: the Application, what the plan records of each object,
// the plan's settings and tracking, and settings (apply's options that
// change what is written, and adopt's version).
func PlanDigest(sub *plan.Plan, settings string) string {
	// The note counts the cluster's Applications ("3 Argo CD Applications
	// found"): any Application made anywhere would change every group's
	// digest, and have every open pull request's record rewritten.
	argo := sub.ArgoCD
	argo.Note = ""
	j, _ := json.Marshal(struct {
		Apps     []plan.Application
		Objects  []plan.Object
		Settings plan.Settings
		Tracking any
		ArgoCD   plan.ArgoCD
		Options  string
	}{sub.Applications, sub.Objects, sub.Settings, sub.Tracking, argo, settings})
	h := sha256.Sum256(j)
	return "sha256:" + hex.EncodeToString(h[:])
}

// digests are the groups' live digests read in one run, by branch: the
// pass under the lock decides from the reads of the pass before it, so a
// group's objects are fetched once a run.
type digests map[string]string

// of is the live digest of branch's group sub, read on first use.
func (m digests) of(ctx context.Context, fetch apply.Fetcher, branch string, sub *plan.Plan) (string, error) {
	if d, ok := m[branch]; ok {
		return d, nil
	}
	d, err := LiveDigest(ctx, fetch, sub)
	if err == nil {
		m[branch] = d
	}
	return d, err
}

// LiveDigest is the digest of sub's group as it is live: each object as
// apply would export it (export.Clean), a Secret by its keys only (never
// a value, nor a digest of one), in ref order.
func LiveDigest(ctx context.Context, fetch apply.Fetcher, sub *plan.Plan) (string, error) {
	byRef := map[string]plan.Object{}
	for _, ob := range sub.Objects {
		byRef[ob.Ref.String()] = ob
	}
	h := sha256.New()
	for _, ref := range refsOf(sub) {
		ob := byRef[ref]
		live, err := fetch(ctx, ob.Ref.GVR(), ob.Namespace, ob.Name)
		if err != nil {
			return "", err
		}
		var body any = export.SecretKeys(live)
		if !ob.IsSecret() {
			clean, err := export.Clean(live, export.Options{InstanceLabelKey: sub.Tracking.InstanceLabelKey})
			if err != nil {
				return "", err
			}
			body = clean.Object
		}
		j, err := json.Marshal(body)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n%d\n", ref, len(j))
		h.Write(j)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
