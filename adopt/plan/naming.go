package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/adopt-dev/adopt/adopt/config"
	"github.com/adopt-dev/adopt/argoapp"
)

// CodeNaming: the pattern the new Applications' names follow, and where
// it came from (adopt.yaml's nameTemplate, or the repo's Applications).
const CodeNaming = "naming"

// repoNaming is the name template the repo's Applications follow (those
// in the cluster, those defined in Git and those ApplicationSets
// generate): each Application whose name holds its destination namespace
// follows "<before>{namespace}<after>" (<app>-<env> into namespace
// <app>-<env> is {namespace}; <env>-<app> into <app> is <env>-{namespace}
// only when every env is the same; a prefix is kept). The template most
// of them follow wins, when at least two and more than half of those
// that follow one do (ties to the first in sort order); "" when none
// does. A name that holds no namespace (one per directory, say) gives no
// template: it would name two namespaces' Applications alike. from says
// how many follow it, with examples.
func repoNaming(specs []argoapp.Spec) (template, from string) {
	by := map[string][]string{}
	n := 0
	for i := range specs {
		s := &specs[i]
		if s.Err != "" || s.Name == "" {
			continue
		}
		if s.Destination == "" || !strings.Contains(s.Name, s.Destination) {
			continue
		}
		t := strings.Replace(s.Name, s.Destination, "{namespace}", 1)
		by[t] = append(by[t], s.Name)
		n++
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(by[keys[i]]) != len(by[keys[j]]) {
			return len(by[keys[i]]) > len(by[keys[j]])
		}
		return keys[i] < keys[j]
	})
	if len(keys) == 0 || len(by[keys[0]]) < 2 || 2*len(by[keys[0]]) <= n {
		return "", ""
	}
	names := by[keys[0]]
	sort.Strings(names)
	ex := names
	if len(ex) > 3 {
		ex = ex[:3]
	}
	return keys[0], fmt.Sprintf("the repo's Applications: %d of %d follow it (%s)", len(names), n, strings.Join(ex, ", "))
}

// naming is the config the new Applications are named with, and the
// finding that names the pattern: adopt.yaml's nameTemplate when set,
// else the repo's pattern (repoNaming), else cfg as it is (no finding).
func naming(cfg *config.Config, specs []argoapp.Spec, s *Settings) (*config.Config, []Finding) {
	if cfg.NameTemplate != "" {
		s.Naming, s.NamingFrom = cfg.NameTemplate, "adopt.yaml nameTemplate"
	} else if t, from := repoNaming(specs); t != "" {
		c := *cfg
		c.Naming = t
		cfg = &c
		s.Naming, s.NamingFrom = t, from
	} else {
		return cfg, nil
	}
	return cfg, []Finding{{Code: CodeNaming, Severity: Info, Message: fmt.Sprintf("new Application names follow %s (from %s); set nameTemplate in adopt.yaml to choose another", s.Naming, s.NamingFrom)}}
}
