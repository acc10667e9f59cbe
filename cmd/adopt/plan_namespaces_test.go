package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestPlanNamespaceList: -n takes a comma-separated list and plans exactly
// those namespaces; a namespace that does not exist is bad input (exit 2)
// naming it (a namespace the credentials may not get is planned and said
// to be unchecked: adopt/planner's TestViewerPlansWhatItMayList). The
// verbs that work on a plan refuse -n rather than ignore it.
func TestPlanNamespaceList(t *testing.T) {
	a, b, c := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	for _, ns := range []string{a, b, c} {
		kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in-"+ns+"}\ndata: {k: v}\n"), "apply", "-n", ns, "-f", "-")
	}
	planned := func(p *plan.Plan) map[string]bool {
		seen := map[string]bool{}
		for _, o := range p.Objects {
			seen[o.Namespace] = true
		}
		return seen
	}

	p := planJSON(t, "-n", b+", "+a)
	if seen := planned(p); !seen[a] || !seen[b] || seen[c] || len(seen) != 2 {
		t.Fatalf("-n %s,%s planned the namespaces %v", b, a, seen)
	}
	for _, ns := range []string{a, b} {
		if findObject(p, "ConfigMap", ns, "in-"+ns) == nil {
			t.Errorf("in-%s is not planned", ns)
		}
	}
	scope := []string{a, b}
	slices.Sort(scope)
	if want := strings.Join(scope, ","); p.Cluster.Namespace != want {
		t.Errorf("the plan records the scope %q, want %q", p.Cluster.Namespace, want)
	}

	const missing = "no-such-namespace-here"
	for _, flag := range []string{missing, a + "," + missing} {
		out, errOut, code := adopt(t, "plan", "-q", "-n", flag)
		if code != ExitUsage || !strings.Contains(errOut, `namespace "`+missing+`"`) || strings.Contains(errOut, `namespace "`+a+`"`) || !strings.Contains(errOut, "kubectl get namespaces") {
			t.Errorf("plan -n %s: exit %d, stderr %q, stdout %q; want exit 2 naming %s only", flag, code, errOut, out, missing)
		}
	}
	// apply without --plan plans the same way.
	if _, errOut, code := adopt(t, "apply", "-q", "-n", missing, "--repo", t.TempDir(), "--dry-run"); code != ExitUsage || !strings.Contains(errOut, missing) {
		t.Errorf("apply -n %s: exit %d: %s", missing, code, errOut)
	}
	for _, flag := range []string{a + ",,", "Bad_Name"} {
		if _, errOut, code := adopt(t, "plan", "-q", "-n", flag); code != ExitUsage || !strings.Contains(errOut, "-n") {
			t.Errorf("plan -n %q: exit %d: %s", flag, code, errOut)
		}
	}

	// The verbs that read a plan refuse -n instead of ignoring it.
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-q", "-n", a, "--out", planFile); code != 0 {
		t.Fatalf("plan: %s", errOut)
	}
	for _, args := range [][]string{
		{"finalize", "--plan", planFile, "-n", a},
		{"status", "--plan", planFile, "-n", a},
		{"apply", "--plan", planFile, "--repo", t.TempDir(), "-n", a},
	} {
		if _, errOut, code := adopt(t, args...); code != ExitUsage || !strings.Contains(errOut, "drop -n") {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
}
