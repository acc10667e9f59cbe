package status

import (
	"context"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/adopt/discover"
	"github.com/adopt-dev/adopt/adopt/judge"
	"github.com/adopt-dev/adopt/argoapp"
)

// CoverageOptions say what to count.
type CoverageOptions struct {
	Clients discover.Clients
	// Namespaces to count; empty means every namespace and the
	// cluster-scoped objects, as `adopt plan -A` scans.
	Namespaces []string
	// Config is adopt.yaml (its exclusions); nil means the defaults.
	Config   *config.Config
	Tracking argoapp.Tracking
	Apps     argoapp.Applications
}

// Count lists every listable object and counts, per namespace, the user
// objects and those an Argo CD Application tracks, the way plan does: the
// types judge.UserTypes skips or adopt.yaml excludes are left out, then each
// object judge.UserObject skips or adopt.yaml excludes; an object is tracked when
// its mark names an existing Application (argoapp.Tracking.Check).
func Count(ctx context.Context, o CoverageOptions) (*Coverage, error) {
	byNS := map[string]*NamespaceCoverage{}
	res, err := discover.Collect(ctx, o.Clients, discover.Options{Namespaces: o.Namespaces, SkipType: judge.UserTypes(o.Config)})
	if err != nil {
		return nil, err
	}
	for i := range res.Objects {
		ob := &res.Objects[i]
		v := judge.UserObject(ob, o.Config, o.Tracking, o.Apps)
		if by := judge.SealedBy(ob); by != "" && v.SkipClass == judge.SkipOwned {
			// A Secret its SealedSecret took over is adopted: counted,
			// and tracked through the SealedSecret.
			v.Skip, v.TrackedBy = "", "SealedSecret "+by
		}
		if by := judge.ExternalSecretBy(ob); by != "" && v.SkipClass == judge.SkipOwned {
			// Likewise a Secret its ExternalSecret took over.
			v.Skip, v.TrackedBy = "", "ExternalSecret "+by
		}
		if v.Skip != "" {
			continue
		}
		c := byNS[ob.Namespace]
		if c == nil {
			c = &NamespaceCoverage{Namespace: ob.Namespace}
			byNS[ob.Namespace] = c
		}
		c.Objects++
		if v.TrackedBy != "" {
			c.Tracked++
		}
	}
	cov := &Coverage{Namespaces: []NamespaceCoverage{}, Scope: "all namespaces"}
	if len(o.Namespaces) > 0 {
		cov.Scope = strings.Join(o.Namespaces, ", ")
	}
	for _, c := range byNS {
		c.Percent = Percent(c.Tracked, c.Objects)
		cov.Tracked += c.Tracked
		cov.Objects += c.Objects
		cov.Namespaces = append(cov.Namespaces, *c)
	}
	sort.Slice(cov.Namespaces, func(i, j int) bool { return cov.Namespaces[i].Namespace < cov.Namespaces[j].Namespace })
	cov.Percent = Percent(cov.Tracked, cov.Objects)
	return cov, nil
}
