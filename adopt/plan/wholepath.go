package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/gitindex"
	"github.com/adopt-dev/adopt/argoapp"
)

// Finding codes of a proposed Application's whole render.
const (
	// CodeSyncCreates: the path a new Application syncs renders objects
	// the cluster does not have; its first sync creates them.
	CodeSyncCreates = "first-sync-creates"
	// CodePathShared: the path renders objects that another Application
	// syncs or tracks, so no Application is proposed there.
	CodePathShared = "path-renders-other-applications"
)

// maxNamed is how many objects a whole-path finding names.
const maxNamed = 10

// checkWholePaths renders the whole path of each proposed Application
// that syncs a path in Git, as its first sync will, not only the objects
// adopted through it. An object of that render that an existing
// Application renders, that is tracked, or that another proposed
// Application adopts would be taken from its owner (Argo CD's
// SharedResourceWarning): the Application is not proposed, and each of its
// objects carries a critical finding saying why. An object the cluster
// lacks would be created: a warning naming it. An object the plan cannot
// see (a namespace outside -n, a type not listed) is said to be unchecked.
func checkWholePaths(p *Plan, cands []*candidate, in Inputs, owned appRenders) {
	ix := in.Index
	if ix == nil {
		return
	}
	type render struct {
		app  int
		keys []gitindex.Key
	}
	var renders []render
	need := map[gitindex.Key]bool{}
	namespaced := map[[2]string]bool{}
	scanned := map[[2]string]bool{}
	for _, t := range in.Result.Scanned {
		scanned[[2]string{t.Group, t.Kind}] = true
		namespaced[[2]string{t.Group, t.Kind}] = t.Namespaced
	}
	for i, a := range p.Applications {
		if a.Source != "git" {
			continue
		}
		d := gitindex.Directory{}
		if !a.Kustomize {
			d.Include = argoapp.Glob(a.Include)
		}
		ms, err := ix.Render(a.SourcePath, d)
		if err != nil {
			continue // matched through it: it renders
		}
		r := render{app: i}
		for _, m := range ms {
			k := m.Key
			if k.Namespace == "" && namespaced[[2]string{k.Group, k.Kind}] {
				k.Namespace = a.Namespace
			}
			r.keys = append(r.keys, k)
			need[k] = true
		}
		renders = append(renders, r)
	}
	if len(renders) == 0 {
		return
	}
	// What the cluster holds of those objects: listed, and tracked or not.
	live := map[gitindex.Key]bool{}
	for i := range in.Result.Objects {
		o := &in.Result.Objects[i]
		k := gitindex.Key{Group: o.Type.Group, Kind: o.Type.Kind, Namespace: o.Namespace, Name: o.Name}
		if need[k] {
			live[k] = true
		}
	}
	// The candidates among them, with the Application each is adopted by
	// ("" for none).
	appOf := map[gitindex.Key]*candidate{}
	for _, c := range cands {
		if k := (gitindex.Key{Group: c.obj.Group, Kind: c.obj.Kind, Namespace: c.obj.Namespace, Name: c.obj.Name}); need[k] {
			appOf[k] = c
		}
	}
	scope := p.Cluster.Namespaces()
	drop := map[string]string{}
	for _, r := range renders {
		a := p.Applications[r.app]
		var creates, unchecked, taken, loose []string
		for _, k := range r.keys {
			id := keyString(k)
			if c := appOf[k]; c != nil {
				switch {
				case c.obj.App == a.Name:
				case c.existing != nil:
					taken = append(taken, id+" (Application "+c.existing.Key()+" renders it)")
				case c.obj.App == "":
					loose = append(loose, id)
				default:
					taken = append(taken, id+" (adopted by "+c.obj.App+" in this plan)")
				}
				continue
			}
			if owners := owned.by[k]; len(owners) > 0 {
				taken = append(taken, id+" (Application "+owned.specs[owners[0].spec].Key()+" renders it)")
				continue
			}
			switch {
			case live[k]:
				// Listed but no candidate: tracked, or left out by a rule.
				taken = append(taken, id+" (in the cluster and not adopted here: tracked, or left out)")
			case !scanned[[2]string{k.Group, k.Kind}] || k.Namespace != "" && len(scope) > 0 && !slices.Contains(scope, k.Namespace) || k.Namespace == "" && len(scope) > 0:
				unchecked = append(unchecked, id)
			default:
				creates = append(creates, id)
			}
		}
		if len(taken) > 0 {
			drop[a.Name] = fmt.Sprintf("%s renders %s: an Application there would take them from their owner (Argo CD's SharedResourceWarning), so none is proposed. Give these objects a path of their own, or adopt them through the Application that owns the rest",
				a.SourcePath, names(taken))
			continue
		}
		if len(creates) > 0 {
			p.Findings = append(p.Findings, Finding{Code: CodeSyncCreates, Severity: Warning, Message: fmt.Sprintf(
				"Application %s syncs %s, which also renders %s: the cluster does not have them, so its first sync creates them. Check that they should run here before the merge",
				a.Name, a.SourcePath, names(creates))})
		}
		if len(loose) > 0 {
			p.Findings = append(p.Findings, Finding{Code: CodeSyncCreates, Severity: Warning, Message: fmt.Sprintf(
				"Application %s syncs %s, which also renders %s: the plan gives them no Application (see their findings), but this one's first sync takes them",
				a.Name, a.SourcePath, names(loose))})
		}
		if len(unchecked) > 0 {
			p.Findings = append(p.Findings, Finding{Code: CodeSyncCreates, Severity: Info, Message: fmt.Sprintf(
				"Application %s syncs %s, which also renders %s, outside what was listed (-n, or types not listed): not checked against the cluster",
				a.Name, a.SourcePath, names(unchecked))})
		}
	}
	if len(drop) == 0 {
		return
	}
	kept := p.Applications[:0]
	for _, a := range p.Applications {
		if _, ok := drop[a.Name]; !ok {
			kept = append(kept, a)
		}
	}
	p.Applications = kept
	for _, c := range cands {
		why, ok := drop[c.obj.App]
		if !ok {
			continue
		}
		c.obj.App = ""
		c.obj.Findings = append(c.obj.Findings, Finding{Code: CodePathShared, Severity: Critical, Message: why})
		sortFindings(c.obj.Findings)
		c.obj.Risk = maxSeverity(c.obj.Findings)
	}
}

func keyString(k gitindex.Key) string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace == "" {
		return kind + " " + k.Name
	}
	return kind + " " + k.Namespace + "/" + k.Name
}

// names lists ids, sorted, the first maxNamed of them.
func names(ids []string) string {
	sort.Strings(ids)
	if len(ids) > maxNamed {
		return strings.Join(ids[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(ids)-maxNamed)
	}
	return strings.Join(ids, ", ")
}
