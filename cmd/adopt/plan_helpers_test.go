package main

// Helpers of the plan tests: kubectl against the test control plane, a
// ConfigMap manifest, the plan's objects of one namespace by name.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

func plKubectl(t *testing.T, manifest string, args ...string) {
	t.Helper()
	if out, err := cp.Kubectl(context.Background(), []byte(manifest), args...); err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
}

func plCM(ns, name string, labels, annotations map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	for _, m := range []struct {
		key string
		kv  map[string]string
	}{{"labels", labels}, {"annotations", annotations}} {
		if len(m.kv) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", m.key)
		for k, v := range m.kv {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("data:\n  k: v\n")
	return b.String()
}

func plNames(p *plan.Plan, ns string) map[string]*plan.Object {
	out := map[string]*plan.Object{}
	for i := range p.Objects {
		if p.Objects[i].Namespace == ns {
			out[p.Objects[i].Name] = &p.Objects[i]
		}
	}
	return out
}
