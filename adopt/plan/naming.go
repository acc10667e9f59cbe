package plan

import (
	"fmt"
	"path"
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
// generate). A template is built from an Application's name by putting
// placeholders for whole "-"-separated runs of it that equal its
// destination namespace ({namespace}), its destination cluster's name
// ({cluster}) or the last segment of its source path ({env}); it must
// hold {namespace}, else it would name two namespaces' Applications
// alike. An Application follows a template when the template, rendered
// as a new name is (config.RenderName: a doubled segment dropped), gives
// its name. The template most of them follow wins, when at least two and
// more than half of those that follow one do (ties: fewer literal
// letters, then fewer placeholders, then sort order); "" when none does.
// from says how many follow it, with examples.
func repoNaming(specs []argoapp.Spec) (template, from string) {
	by := map[string][]string{}
	n := 0
	for i := range specs {
		s := &specs[i]
		if s.Err != "" || s.Name == "" || s.Destination == "" {
			continue
		}
		v := nameVars(s)
		follows := false
		for _, t := range templatesOf(s.Name, v) {
			if config.RenderName(t, v) == s.Name {
				by[t] = append(by[t], s.Name)
				follows = true
			}
		}
		if follows {
			n++
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if len(by[a]) != len(by[b]) {
			return len(by[a]) > len(by[b])
		}
		if la, lb := literal(a), literal(b); la != lb {
			return la < lb
		}
		if pa, pb := strings.Count(a, "{"), strings.Count(b, "{"); pa != pb {
			return pa < pb
		}
		return a < b
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

// nameVars are the placeholders' values for an existing Application.
func nameVars(s *argoapp.Spec) config.NameVars {
	v := config.NameVars{Namespace: s.Destination, Cluster: s.Cluster}
	for _, src := range s.Sources {
		if p := strings.Trim(src.Path, "/"); p != "" && p != "." {
			v.Env = path.Base(p)
			break
		}
	}
	return v
}

// templatesOf are the templates name may follow with v: each choice of
// placeholders, in turn {namespace}, {cluster} and {env}, put for the
// first whole "-"-separated run still literal that equals the value;
// only those that hold {namespace}.
func templatesOf(name string, v config.NameVars) []string {
	vars := [][2]string{{"{namespace}", v.Namespace}, {"{cluster}", v.Cluster}, {"{env}", v.Env}}
	out := []string{}
	seen := map[string]bool{}
	for mask := 1; mask < 1<<len(vars); mask += 2 { // {namespace} always
		t := name
		ok := true
		for i, pv := range vars {
			if mask&(1<<i) == 0 {
				continue
			}
			if t, ok = putVar(t, pv[1], pv[0]); !ok {
				break
			}
		}
		if ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// putVar puts placeholder for the first whole "-"-separated run of t
// that equals value.
func putVar(t, value, placeholder string) (string, bool) {
	if value == "" {
		return t, false
	}
	s := "-" + t + "-"
	i := strings.Index(s, "-"+value+"-")
	if i < 0 {
		return t, false
	}
	return strings.Trim(s[:i+1]+placeholder+s[i+1+len(value):], "-"), true
}

// literal counts a template's letters and digits outside placeholders.
func literal(t string) int {
	n, in := 0, false
	for _, r := range t {
		switch {
		case r == '{':
			in = true
		case r == '}':
			in = false
		case !in && r != '-':
			n++
		}
	}
	return n
}

// naming is the config the new Applications are named with, and the
// finding that names the pattern: adopt.yaml's nameTemplate when set,
// else the repo's pattern (repoNaming; not one with {cluster} when the
// new Applications' cluster has no known name, or in a fleet plan, whose
// clusters' Applications one ApplicationSet names alike), else cfg as it
// is (no finding).
func naming(cfg *config.Config, specs []argoapp.Spec, fleet bool, s *Settings) (*config.Config, []Finding) {
	if cfg.NameTemplate != "" {
		s.Naming, s.NamingFrom = cfg.NameTemplate, "adopt.yaml nameTemplate"
	} else if t, from := repoNaming(specs); t != "" && (!strings.Contains(t, "{cluster}") || (cfg.Cluster() != "" && !fleet)) {
		c := *cfg
		c.Naming = t
		cfg = &c
		s.Naming, s.NamingFrom = t, from
	} else {
		return cfg, nil
	}
	var gloss []string
	if strings.Contains(s.Naming, "{cluster}") {
		gloss = append(gloss, "{cluster} is the destination cluster's name, here "+cfg.Cluster())
	}
	if strings.Contains(s.Naming, "{env}") {
		gloss = append(gloss, "{env} is the last segment of the Application's source path")
	}
	what := s.Naming
	if len(gloss) > 0 {
		what += " (" + strings.Join(gloss, "; ") + ")"
	}
	return cfg, []Finding{{Code: CodeNaming, Severity: Info, Message: fmt.Sprintf("new Application names follow %s (from %s); set nameTemplate in adopt.yaml to choose another", what, s.NamingFrom)}}
}
