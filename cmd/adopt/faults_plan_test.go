package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// seedConfigMaps applies n ConfigMaps with the real kubectl.
func seedConfigMaps(t *testing.T, ns string, n int) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%03d\n  namespace: %s\ndata:\n  k: v%d\n", i, ns, i)
	}
	if _, err := cp.Kubectl(context.Background(), []byte(b.String()), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// planVia runs `adopt plan -n ns` through kubeconfig and decodes the JSON.
func planVia(t *testing.T, kubeconfig, ns string, extra ...string) (*plan.Plan, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"--kubeconfig", kubeconfig, "plan", "-q", "-o", "json", "-n", ns}, extra...)
	code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
	if code != 0 {
		return nil, errb.String(), code
	}
	var p plan.Plan
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	return &p, errb.String(), code
}

func objectNames(p *plan.Plan) []string {
	var names []string
	for _, o := range p.Objects {
		names = append(names, o.Kind+"/"+o.Name)
	}
	return names
}

// TestPlanUnderAPIServerFaults puts the fault proxy between adopt and the
// real API server. Transient faults must not change the result; a type that
// keeps failing must be reported as not scanned, with the fault named.
func TestPlanUnderAPIServerFaults(t *testing.T) {
	ns := cp.Namespace(t)
	seedConfigMaps(t, ns, 30)
	want, errOut, code := planVia(t, cp.Kubeconfig, ns)
	if code != 0 {
		t.Fatalf("baseline plan failed: %s", errOut)
	}
	if len(want.Objects) < 30 {
		t.Fatalf("baseline has %d objects", len(want.Objects))
	}
	wantNames := strings.Join(objectNames(want), ",")

	transient := []testenv.Fault{
		{Kind: testenv.TooManyRequests, Path: "/configmaps", Times: 2},
		{Kind: testenv.InternalError, Path: "/configmaps", Times: 1},
		{Kind: testenv.Unavailable, Path: "/configmaps", Times: 2},
		{Kind: testenv.ResetMidBody, Path: "/configmaps", Times: 1},
		{Kind: testenv.ExpiredContinue, Path: "/configmaps", Times: 1},
	}
	for _, f := range transient {
		t.Run(f.Kind.String(), func(t *testing.T) {
			fp, err := testenv.StartFaultProxy(cp, t.TempDir(), f)
			if err != nil {
				t.Fatal(err)
			}
			defer fp.Close()
			got, errOut, code := planVia(t, fp.Kubeconfig, ns, "--chunk-size", "7")
			if code != 0 {
				t.Fatalf("plan failed under a transient %s: %s", f.Kind, errOut)
			}
			if fp.Injected(f.Kind) == 0 {
				t.Fatalf("fault %s was never injected", f.Kind)
			}
			if len(got.NotScanned) != 0 {
				t.Fatalf("not scanned under a transient fault: %+v", got.NotScanned)
			}
			if names := strings.Join(objectNames(got), ","); names != wantNames {
				t.Fatalf("result changed under %s:\n got %s\nwant %s", f.Kind, names, wantNames)
			}
		})
	}

	persistent := []struct {
		fault testenv.Fault
		extra []string
		why   string
	}{
		{testenv.Fault{Kind: testenv.InternalError, Path: "/configmaps"}, nil, "500"},
		{testenv.Fault{Kind: testenv.Slow, Path: "/configmaps", Delay: 30 * time.Second}, []string{"--request-timeout", "1s"}, "timeout"},
	}
	for _, tc := range persistent {
		t.Run("persistent "+tc.fault.Kind.String(), func(t *testing.T) {
			fp, err := testenv.StartFaultProxy(cp, t.TempDir(), tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			defer fp.Close()
			got, errOut, code := planVia(t, fp.Kubeconfig, ns, tc.extra...)
			if code != 0 {
				t.Fatalf("plan aborted instead of reporting the type: exit %d: %s", code, errOut)
			}
			var reason string
			for _, n := range got.NotScanned {
				if n.Type == "configmaps" {
					reason = n.Reason
				}
			}
			if !strings.Contains(strings.ToLower(reason), tc.why) {
				t.Fatalf("configmaps not reported as not scanned with %q: %+v", tc.why, got.NotScanned)
			}
			for _, o := range got.Objects {
				if o.Kind == "ConfigMap" {
					t.Fatalf("partial ConfigMap result leaked into the plan: %s", o.Name)
				}
			}
		})
	}
}
