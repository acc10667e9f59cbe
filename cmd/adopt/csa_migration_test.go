package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// csaHook is the incident's ConfigMap: name litellm-test-usage-hook in ns,
// one data key of n bytes, plus extra data keys.
func csaHook(ns string, n int, extra map[string]string) string {
	data := map[string]string{"usage_hook.py": strings.Repeat("a", n)}
	for k, v := range extra {
		data[k] = v
	}
	b, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "litellm-test-usage-hook", "namespace": ns},
		"data":     data,
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// seedHook hand-applies the hook with the real kubectl (client-side) so that
// its annotations total exactly want bytes, and returns the data size used.
func seedHook(t *testing.T, c *testenv.ControlPlane, ns string, want int) int {
	t.Helper()
	ctx := context.Background()
	apply := func(n int) int {
		if out, err := c.Kubectl(ctx, []byte(csaHook(ns, n, nil)), "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply: %v: %s", err, out)
		}
		cm, err := c.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "litellm-test-usage-hook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return budget.AnnotationBytes(cm.Annotations)
	}
	overhead := apply(1000) - 1000
	n := want - overhead
	if got := apply(n); got != want {
		t.Fatalf("seeded ConfigMap %s/litellm-test-usage-hook has %d B of annotations, want %d", ns, got, want)
	}
	return n
}

// incidentRepo hand-applies the incident's hook in ns at 98.1% of the cap
// (seedHook) and serves a repo whose copy of it, 4.8 KB larger, is at
// k8s/system/, on a git server stopped with the test; it returns the
// server and the repo's URL.
func incidentRepo(t *testing.T, ns string) (*testenv.GitServer, string) {
	t.Helper()
	n := seedHook(t, cp, ns, 257270)
	return gitRepo(t, "gitops", map[string]string{"k8s/system/litellm-test-usage-hook-cm.yaml": csaHook(ns, n+4800, nil)})
}

// csaPlan runs adopt plan with the given Argo CD version and returns the
// plan and the hook's entry.
func csaPlan(t *testing.T, run func(args ...string) (string, string, int), ns, repo, version, file string) (*plan.Plan, *plan.Object) {
	t.Helper()
	args := []string{"plan", "-n", ns, "-q", "-o", "json", "--repo", repo, "--out", file}
	if version != "" {
		args = append(args, "--argocd-version", version)
	}
	out, errOut, code := run(args...)
	if code != 0 {
		t.Fatalf("plan --argocd-version %s: exit %d: %s", version, code, errOut)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan -o json: %v", err)
	}
	ob := p.Object("ConfigMap " + ns + "/litellm-test-usage-hook")
	if ob == nil {
		t.Fatalf("the hook is not in the plan:\n%s", out)
	}
	return &p, ob
}

func finding(ob *plan.Object, code string) *plan.Finding {
	for i := range ob.Findings {
		if ob.Findings[i].Code == code {
			return &ob.Findings[i]
		}
	}
	return nil
}

// TestCSAMigrationPlanAndApply seeds the incident's ConfigMap at 98.1% of
// the cap (257,270 B) with the real kubectl, its Git copy 4.8 KB larger.
// plan flags the first sync failing on Argo CD v3.2.6 and not on v2.14.21;
// apply adds ClientSideApplyMigration=false under --csa-migration=auto on
// v3.2.6 only, keep and disable override it, and every Application passes
// the strict v1alpha1 decoding and a server-side dry-run create.
func TestCSAMigrationPlanAndApply(t *testing.T) {
	ns := cp.Namespace(t)
	g, url := incidentRepo(t, ns)
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) { return adopt(t, args...) }

	v3File, v2File := filepath.Join(dir, "v3.yaml"), filepath.Join(dir, "v2.yaml")
	_, v3 := csaPlan(t, run, ns, url, "v3.2.6", v3File)
	if !v3.CSAMigration.Runs || !v3.CSAMigration.Fails || v3.CSAMigration.Bytes <= budget.AnnotationCap {
		t.Fatalf("v3.2.6: csaMigration %+v, want a failing migration", v3.CSAMigration)
	}
	f := finding(v3, plan.CodeCSAMigrationFails)
	if f == nil || f.Severity != plan.Critical ||
		!strings.Contains(f.Message, "first sync would fail on Argo CD v3.2.6 (client-side-apply migration writes last-applied)") ||
		!strings.Contains(f.Message, "version from --argocd-version") ||
		!strings.Contains(f.Message, fmt.Sprintf("%d B of annotations", v3.CSAMigration.Bytes)) {
		t.Errorf("v3.2.6: finding %+v", f)
	}
	if v3.Risk != plan.Critical {
		t.Errorf("v3.2.6: risk %q, want critical", v3.Risk)
	}
	// The Git copy is 4,800 B larger; Argo CD's tracking id goes into the
	// annotations and into last-applied.
	if d := v3.CSAMigration.Bytes - 257270; d < 4800 || d > 4800+2*200 {
		t.Errorf("v3.2.6: the migration writes %d B more than the live annotations, want 4,800 B plus the tracking id twice", d)
	}

	_, v2 := csaPlan(t, run, ns, url, "v2.14.21", v2File)
	if f := finding(v2, plan.CodeCSAMigrationFails); f != nil {
		t.Errorf("v2.14.21: unexpected finding %+v", f)
	}
	// v2 tracks with the instance label by default, so the migration
	// would write no tracking id into the annotations.
	if !v2.CSAMigration.Runs || v2.CSAMigration.Bytes >= v3.CSAMigration.Bytes {
		t.Errorf("v2.14.21: csaMigration %+v, want a migration predicted below v3's %d B", v2.CSAMigration, v3.CSAMigration.Bytes)
	}
	// Without a version, the risk is named and the flag suggested.
	unknownFile := filepath.Join(dir, "unknown.yaml")
	_, unknown := csaPlan(t, run, ns, url, "", unknownFile)
	if f := finding(unknown, plan.CodeCSAMigrationFails); f == nil || f.Severity != plan.Warning || !strings.Contains(f.Message, "pass --argocd-version") {
		t.Errorf("unknown version: finding %+v", f)
	}

	for _, tc := range []struct {
		name, planFile string
		args           []string
		want           bool
		say            string
		warn           string
	}{
		{"auto on v3.2.6 from the plan", v3File, nil, true, "Argo CD v3.2.6 (from plan ", ""},
		{"auto on v2.14.21 from the plan", v2File, nil, false, "", ""},
		{"auto with --argocd-version v3.2.6", unknownFile, []string{"--argocd-version", "v3.2.6"}, true, "Argo CD v3.2.6 (from --argocd-version)", ""},
		{"auto with --argocd-version v3.3.2", v3File, []string{"--argocd-version", "v3.3.2"}, false, "", "was made for Argo CD v3.2.6"},
		{"keep on v3.2.6", v3File, []string{"--csa-migration", "keep"}, false, "--csa-migration=keep leaves ClientSideApplyMigration on", ""},
		{"disable on v2.14.21", v2File, []string{"--csa-migration", "disable"}, true, "set by --csa-migration=disable", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			branch := "csa-" + strings.NewReplacer(" ", "-", ".", "-").Replace(tc.name)
			args := append([]string{"apply", "--plan", tc.planFile, "--repo", url, "--branch", branch, "--author", "T <t@example.invalid>", "-q"}, tc.args...)
			out, errOut, code := adopt(t, args...)
			if code != 0 {
				t.Fatalf("apply exited %d: %s%s", code, out, errOut)
			}
			if tc.say != "" && !strings.Contains(out, tc.say) {
				t.Errorf("apply output does not say %q:\n%s", tc.say, out)
			}
			if got := strings.Contains(errOut, "run adopt plan --argocd-version"); got != (tc.warn != "") || !strings.Contains(errOut, tc.warn) {
				t.Errorf("version mismatch warning %v, want %q:\n%s", got, tc.warn, errOut)
			}
			tip := tipOf(t, g.BarePath("gitops"), branch)
			p := readPlan(t, tc.planFile)
			appFile := "argocd/apps/" + p.Applications[0].Name + ".yaml"
			app := fileText(t, tip, appFile)
			a, err := argoapp.DecodeApplication([]byte(app))
			if err != nil {
				t.Fatal(err)
			}
			opts := a.Spec.SyncPolicy.SyncOptions
			if !opts.HasOption(argoapp.SyncOptionServerSideApply) {
				t.Errorf("sync options %v lack ServerSideApply=true", opts)
			}
			if got := opts.HasOption(argoapp.SyncOptionNoCSAMigration); got != tc.want {
				t.Errorf("ClientSideApplyMigration=false in %v: %v, want %v\n%s", opts, got, tc.want, out)
			}
			if got := strings.Contains(tip.Message, "Sync option ClientSideApplyMigration=false: "); got != tc.want {
				t.Errorf("commit message explains ClientSideApplyMigration=false: %v, want %v\n%s", got, tc.want, tip.Message)
			}
			dryRunCreate(t, app)
		})
	}
}

// TestCSAMigrationPredictionMatchesKubectl checks the arithmetic against
// the real thing below the cap: the annotation total plan predicts for the
// migration is what a real client-side kubectl apply of the Git manifest,
// marked with the tracking id as Argo CD marks it, writes.
func TestCSAMigrationPredictionMatchesKubectl(t *testing.T) {
	ns := cp.Namespace(t)
	ctx := context.Background()
	n := seedHook(t, cp, ns, 120000)
	if out, err := cp.Kubectl(ctx, nil, "annotate", "-n", ns, "configmap/litellm-test-usage-hook", "team=sre", "note=kept by the three-way merge"); err != nil {
		t.Fatalf("kubectl annotate: %v: %s", err, out)
	}
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	inGit := csaHook(ns, n+3000, map[string]string{"added-in-git": "yes"})
	inGit = strings.Replace(inGit, "metadata:\n", "metadata:\n  annotations:\n    team: platform\n", 1)
	url, err := g.CreateRepo("gitops", map[string]string{"apps/hook/cm.yaml": inGit})
	if err != nil {
		t.Fatal(err)
	}
	_, ob := csaPlan(t, func(args ...string) (string, string, int) { return adopt(t, args...) }, ns, url, "v3.2.6", filepath.Join(t.TempDir(), "plan.yaml"))
	if !ob.CSAMigration.Runs || ob.CSAMigration.Fails || ob.CSAMigration.Bytes == 0 {
		t.Fatalf("csaMigration %+v, want a migration under the cap", ob.CSAMigration)
	}
	id := argoapp.TrackingID{AppName: ob.App, Ref: objref.Ref{Kind: "ConfigMap", Namespace: ns, Name: "litellm-test-usage-hook"}}.String()
	marked := strings.Replace(inGit, "  annotations:\n", "  annotations:\n    "+argoapp.AnnotationTrackingID+": "+id+"\n", 1)
	if out, err := cp.Kubectl(ctx, []byte(marked), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the marked Git manifest: %v: %s", err, out)
	}
	cm, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "litellm-test-usage-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := budget.AnnotationBytes(cm.Annotations); got != ob.CSAMigration.Bytes {
		t.Errorf("kubectl wrote %d B of annotations, plan predicted %d B", got, ob.CSAMigration.Bytes)
	}
}

// TestCSATrapFromControllerWorkload: adopt learns the Argo CD version from
// the application controller's workload, here the StatefulSet of each
// release's own install manifest (manifests/install.yaml of the module
// the tests build Argo CD from, with the release's image tag), applied to
// a namespace of its own. The incident's hook at 98.1% of the cap, its Git
// copy 4.8 KB larger, is then a critical first-sync failure on v3.2.6 and
// nothing on v3.6.2, where the trap rule does not apply.
func TestCSATrapFromControllerWorkload(t *testing.T) {
	ns := cp.Namespace(t)
	_, url := incidentRepo(t, ns)
	for _, tc := range []struct {
		version string
		trap    bool
	}{{testenv.ArgoCDTrap, true}, {testenv.ArgoCDCurrent, false}} {
		t.Run(tc.version, func(t *testing.T) {
			argoNS := cp.Namespace(t)
			sts := controllerStatefulSet(t, tc.version)
			kc(t, sts, "apply", "-n", argoNS, "-f", "-")
			out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "-o", "json", "--repo", url, "--argocd-namespace", argoNS)
			if code != 0 && code != ExitFindings {
				t.Fatalf("plan exited %d: %s", code, errOut)
			}
			var p plan.Plan
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatalf("plan -o json: %v", err)
			}
			if p.Tracking.Version != tc.version || !strings.Contains(p.Tracking.VersionSource, "image tag") {
				t.Fatalf("version %q from %q; want %s from the controller's image tag", p.Tracking.Version, p.Tracking.VersionSource, tc.version)
			}
			ob := p.Object("ConfigMap " + ns + "/litellm-test-usage-hook")
			if ob == nil {
				t.Fatalf("the hook is not in the plan:\n%s", out)
			}
			// csaMigration predicts the migration's bytes on any version;
			// only a version with the trap makes it a finding.
			if f := finding(ob, plan.CodeCSAMigrationFails); tc.trap != (f != nil) || !ob.CSAMigration.Fails {
				t.Fatalf("on %s: trap finding %+v, csaMigration %+v; want the finding %v", tc.version, f, ob.CSAMigration, tc.trap)
			}
		})
	}
}

// controllerStatefulSet is the argocd-application-controller StatefulSet
// of Argo CD version's install manifest, as YAML.
func controllerStatefulSet(t *testing.T, version string) []byte {
	t.Helper()
	dir, err := testenv.ArgoCDBinaries(version)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &m) == nil && m.Kind == "StatefulSet" && m.Metadata.Name == "argocd-application-controller" {
			return []byte(doc)
		}
	}
	t.Fatalf("Argo CD %s's install.yaml has no StatefulSet argocd-application-controller", version)
	return nil
}
