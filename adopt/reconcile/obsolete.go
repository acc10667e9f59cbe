package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/adopt-dev/adopt/gitops"
)

// obsolete is an open pull request of adopt's, of a group this run does
// not propose, whose stored plan's objects are all gone or tracked now.
type obsolete struct {
	g             Group
	rec           Record
	gone, tracked int
}

// obsoletes finds the open pull requests (newest, by head) on this
// cluster's branches of groups this run does not propose (proposing)
// that are obsolete: the store holds the plan each proposed and a record
// of it, their head is a commit adopt pushed (a held branch is never
// closed), and every object that plan proposes is now gone (NotFound) or
// tracked by Argo CD (the plan's Tracking, on its live labels and
// annotations). Scope alone (another -n, another --group-prs-by) never
// makes one obsolete: its objects still exist untracked. A pull request
// that could not be judged is a Failed group, left open.
func obsoletes(ctx context.Context, o Options, s Seams, newest map[string]*gitops.PRStatus, proposing map[string]bool) ([]obsolete, []Group) {
	if s.Load == nil || s.Close == nil {
		return nil, nil
	}
	prefix := BranchPrefix(o.Cluster)
	var heads []string
	for h, pr := range newest {
		if pr.State == gitops.PROpen && !proposing[h] && strings.HasPrefix(h, prefix) {
			heads = append(heads, h)
		}
	}
	sort.Strings(heads)
	var out []obsolete
	var failed []Group
	for _, h := range heads {
		pr := newest[h]
		rec, ok := o.Records[h]
		if !ok {
			continue // not recorded: no plan to judge by
		}
		was, _ := readMarker(pr.Body)
		if pr.HeadSHA == "" || pr.HeadSHA != rec.Head && pr.HeadSHA != was.Head {
			continue // held: someone else's commit
		}
		g := Group{App: strings.TrimPrefix(h, prefix), Branch: h, PR: pr}
		ob, ok, err := judge(ctx, s, h)
		if err != nil {
			g.Outcome, g.Why = Failed, gitops.OneLine(fmt.Sprintf("judging whether %s is obsolete: %v", pr.URL, err))
			failed = append(failed, g)
			continue
		}
		if !ok {
			continue
		}
		g.Objects = ob.gone + ob.tracked
		ob.g, ob.rec = g, rec
		out = append(out, ob)
	}
	return out, failed
}

// judge says whether branch's stored plan proposes only objects gone or
// tracked now, counting each. It stops at the first object that still
// exists untracked, or that this run may not read (out of its RBAC scope:
// left alone, as scope never closes a pull request).
func judge(ctx context.Context, s Seams, branch string) (obsolete, bool, error) {
	var ob obsolete
	p, err := s.Load(ctx, branch)
	if err != nil || p == nil {
		return ob, false, err
	}
	var refs []string
	for _, app := range p.Applications {
		refs = append(refs, app.Objects...)
	}
	if len(refs) == 0 {
		return ob, false, nil
	}
	for _, obj := range p.Objects {
		if !slices.Contains(refs, obj.Ref.String()) {
			continue
		}
		live, err := s.Fetch(ctx, obj.Ref.GVR(), obj.Namespace, obj.Name)
		switch {
		case apierrors.IsNotFound(err):
			ob.gone++
			continue
		case apierrors.IsForbidden(err):
			return ob, false, nil // out of this token's reach: left alone
		case err != nil:
			return ob, false, err
		}
		if p.Tracking.TrackedBy(live.GetLabels(), live.GetAnnotations()) == "" {
			return ob, false, nil // still untracked: still to adopt
		}
		ob.tracked++
	}
	return ob, ob.gone+ob.tracked > 0, nil
}

// closeObsolete records that the group's pull request is closed as
// obsolete (Record.Autoclosed, so the group is no decline when its objects
// appear again), then closes it with a comment saying why. A close that
// fails after the record leaves the pull request open: the next run finds
// it obsolete again and closes it.
func closeObsolete(ctx context.Context, o Options, s Seams, ob *obsolete) error {
	pr := ob.g.PR
	p, err := s.Load(ctx, ob.g.Branch)
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("the stored plan of %s is gone", ob.g.Branch)
	}
	rec := ob.rec
	rec.Autoclosed = pr.Number
	if err := s.Save(ctx, ob.g.Branch, p, rec); err != nil {
		return err
	}
	return s.Close(ctx, gitops.ClosePROptions{Repo: o.Repo, Number: pr.Number, Comment: closeComment(ob.gone, ob.tracked)})
}

// closeComment is what a pull request closed as obsolete says.
func closeComment(gone, tracked int) string {
	return fmt.Sprintf("Closed by adopt reconcile: the objects this pull request adopts are gone or tracked by Argo CD now (%d gone, %d tracked), "+
		"so merging it would adopt nothing, or recreate what was deleted. This is not a decline: when untracked objects of this group appear again, "+
		"adopt reconcile proposes them in a new pull request. Reopening this one has it closed again on the next run while its objects stay gone or tracked.", gone, tracked)
}
