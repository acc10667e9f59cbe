package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// TestCSAMigrationOnRealArgoCDv3 runs plan and apply against a real Argo CD
// v3.2.6 on its own control plane, for four hand-applied ConfigMaps:
//
//   - incident: at 98.1% of the cap, Git copy 4.8 KB larger. The Application
//     adopt apply generates (ClientSideApplyMigration=false) syncs.
//   - incident-trap: the same, with the option taken out of the generated
//     Application: the first sync fails with the quoted "Too long" message
//     and the object is left as it was.
//   - at-cap: tuned so plan predicts the migration writes exactly 262,144 B.
//     apply adds no option, and the Application syncs.
//   - over-cap: one byte more. apply adds the option; taken out, the sync
//     fails. Together with at-cap this pins the prediction to the byte.
//   - unknown-version: the incident planned without --argocd-version (the
//     test's Argo CD runs no controller workload, so plan cannot read the
//     version). apply refuses with the remedy and writes nothing; with the
//     remedy (--csa-migration=disable) the first sync succeeds.
//
// For each failed sync, finalize stops at once (the sync failed for good)
// and names the trap and its remedy, instead of waiting for --timeout.
func TestCSAMigrationOnRealArgoCDv3(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, a := argoCDPlane(ctx, t, "v3.2.6")
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	run := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := runAdopt(t, "adopt", append([]string{"--kubeconfig", c.Kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}

	type hook struct {
		name      string
		ns        string
		stripped  bool // the generated Application with the option taken out
		wantSync  bool
		wantOpt   bool
		wantBytes int // the predicted migration total; 0: only over the cap
		planFile  string
		// unknown plans without --argocd-version: apply must refuse first.
		unknown bool
	}
	hooks := []*hook{
		{name: "incident", wantSync: true, wantOpt: true},
		{name: "incident-trap", stripped: true, wantOpt: true},
		{name: "at-cap", wantSync: true, wantBytes: budget.AnnotationCap},
		{name: "over-cap", stripped: true, wantOpt: true, wantBytes: budget.AnnotationCap + 1},
		{name: "unknown-version", wantSync: true, wantOpt: true, unknown: true},
	}
	files := map[string]string{}
	for _, h := range hooks {
		h.ns = c.Namespace(t)
		switch h.wantBytes {
		case 0:
			n := seedHook(t, c, h.ns, 257270)
			files["apps/"+h.name+"/cm.yaml"] = csaHook(h.ns, n+4800, nil)
		default:
			n := seedHook(t, c, h.ns, 250000)
			files["apps/"+h.name+"/cm.yaml"] = csaHook(h.ns, n+1000, map[string]string{"added-in-git": "yes"})
		}
	}
	url, err := g.CreateRepo("gitops", files)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	for _, h := range hooks {
		planFile := filepath.Join(dir, h.name+".yaml")
		h.planFile = planFile
		version := "v3.2.6"
		if h.unknown {
			version = ""
		}
		_, ob := csaPlan(t, run, h.ns, url, version, planFile)
		if h.wantBytes != 0 {
			// A filler annotation (kubectl annotate keeps the
			// client-side manager) brings the prediction to the byte.
			const key = "adopt.dev/filler"
			fill := h.wantBytes - ob.CSAMigration.Bytes - len(key)
			if fill < 0 {
				t.Fatalf("%s: predicted %d B before filling, want at most %d", h.name, ob.CSAMigration.Bytes, h.wantBytes-len(key))
			}
			if out, err := c.Kubectl(ctx, nil, "annotate", "-n", h.ns, "configmap/litellm-test-usage-hook", key+"="+strings.Repeat("f", fill)); err != nil {
				t.Fatalf("kubectl annotate: %v: %s", err, out)
			}
			if _, ob = csaPlan(t, run, h.ns, url, "v3.2.6", planFile); ob.CSAMigration.Bytes != h.wantBytes {
				t.Fatalf("%s: predicted %d B after filling, want %d", h.name, ob.CSAMigration.Bytes, h.wantBytes)
			}
		}
		if got := finding(ob, plan.CodeCSAMigrationFails) != nil; got != h.wantOpt {
			t.Errorf("%s: trap finding %v, want %v (predicted %d B)", h.name, got, h.wantOpt, ob.CSAMigration.Bytes)
		}

		branch := "adopt-" + h.name
		args := []string{"apply", "--plan", planFile, "--repo", url, "--branch", branch, "--auto-sync", "--author", "T <t@example.invalid>", "-q"}
		if h.unknown {
			_, errOut, code := run(args...)
			if code != ExitUsage || !strings.Contains(errOut, "Argo CD version unknown") || !strings.Contains(errOut, "--argocd-version") ||
				!strings.Contains(errOut, "--csa-migration=disable") || !strings.Contains(errOut, "Nothing was written") {
				t.Fatalf("%s: apply with the version unknown: exit %d, %s; want exit 2 with the remedy", h.name, code, errOut)
			}
			if _, err := exec.Command("git", "--git-dir", g.BarePath("gitops"), "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output(); err == nil {
				t.Fatalf("%s: the refused apply pushed branch %s", h.name, branch)
			}
			args = append(args, "--csa-migration", "disable")
		}
		out, errOut, code := run(args...)
		if code != 0 {
			t.Fatalf("%s: apply exited %d: %s%s", h.name, code, out, errOut)
		}
		p := readPlan(t, planFile)
		app := fileText(t, tipOf(t, g.BarePath("gitops"), branch), p.Settings.AppsDir+"/"+p.Applications[0].Name+".yaml")
		opt := "    - " + fmt.Sprintf("%q", argoapp.SyncOptionNoCSAMigration) + "\n"
		if got := strings.Contains(app, opt); got != h.wantOpt {
			t.Fatalf("%s: generated Application has %s: %v, want %v\n%s", h.name, argoapp.SyncOptionNoCSAMigration, got, h.wantOpt, app)
		}
		if h.stripped {
			app = strings.Replace(app, opt, "", 1)
			// One quick retry, so the failed sync ends in seconds rather
			// than after automated sync's default five retries with backoff.
			if !strings.Contains(app, "  syncPolicy:\n") {
				t.Fatalf("%s: no syncPolicy in the generated Application:\n%s", h.name, app)
			}
			app = strings.Replace(app, "  syncPolicy:\n", "  syncPolicy:\n    retry:\n      limit: 1\n      backoff: {duration: 1s, factor: 1, maxDuration: 1s}\n", 1)
		}
		if err := a.CreateApplication(ctx, []byte(app)); err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		h.name = p.Applications[0].Name + "|" + h.name
	}

	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer waitCancel()
	var failed []*hook
	for _, h := range hooks {
		appName, label, _ := strings.Cut(h.name, "|")
		st, err := a.WaitApplication(waitCtx, appName, func(s testenv.AppStatus) bool { return s.Failed() || testenv.SyncedHealthy(s) })
		if err != nil {
			t.Fatalf("%s: %v\ncontroller: %s", label, err, a.LogTail("argocd-application-controller", 3000))
		}
		cm, err := c.Clientset().CoreV1().ConfigMaps(h.ns).Get(ctx, "litellm-test-usage-hook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, lastApplied := cm.Annotations[budget.LastAppliedKey]
		t.Logf("%s: %s; annotations %d B, last-applied kept %v", label, st, budget.AnnotationBytes(cm.Annotations), lastApplied)
		if !h.wantSync {
			msg := strings.Join(st.Resources, "; ")
			if !st.Failed() || !strings.Contains(msg, "client-side apply migration on manager kubectl-client-side-apply") ||
				!strings.Contains(msg, "metadata.annotations: Too long: may not be more than 262144 bytes") {
				t.Errorf("%s: want the first sync to fail with the migration's \"Too long\"; got %s", label, st)
			}
			if !lastApplied || cm.Data["added-in-git"] != "" || len(cm.Data["usage_hook.py"]) > 257270 {
				t.Errorf("%s: the failed sync changed the object", label)
			}
			failed = append(failed, h)
			continue
		}
		if !testenv.SyncedHealthy(st) {
			t.Errorf("%s: want Synced/Healthy, got %s", label, st)
		}
		if h.wantBytes == 0 && len(cm.Data["usage_hook.py"]) < 257270 {
			t.Errorf("%s: the Git copy was not applied", label)
		}
		if h.wantBytes != 0 && cm.Data["added-in-git"] != "yes" {
			t.Errorf("%s: the Git copy was not applied", label)
		}
		// finalize is right both when Argo CD migrated ownership (at-cap)
		// and when it did not (incident, ClientSideApplyMigration=false).
		before := managerSet(cm.ManagedFields)
		out, errOut, code := run("finalize", "--plan", h.planFile, "--timeout", "2m", "-q")
		if code != 0 {
			t.Fatalf("%s: finalize exited %d: %s%s", label, code, out, errOut)
		}
		cm, err = c.Clientset().CoreV1().ConfigMaps(h.ns).Get(ctx, "litellm-test-usage-hook", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, lastApplied = cm.Annotations[budget.LastAppliedKey]
		after := managerSet(cm.ManagedFields)
		t.Logf("%s: managers before finalize %v, after %v", label, before, after)
		// kubectl-annotate owns at-cap's filler annotation, which is not
		// in Git: it stays.
		if lastApplied || strings.Contains(after, "kubectl-client-side-apply") || strings.Contains(after, "kubectl-last-applied") || !strings.Contains(after, "argocd-controller/Apply") {
			t.Errorf("%s: after finalize, last-applied kept %v, managers %v", label, lastApplied, after)
		}
	}
	// A failed sync is retried (the phase stays Running while a retry is
	// due); once the retries are spent the phase is Failed with nothing
	// running. finalize then says so at once, with the
	// remedy, instead of waiting for its --timeout.
	for _, h := range failed {
		appName, label, _ := strings.Cut(h.name, "|")
		termCtx, termCancel := context.WithTimeout(ctx, 12*time.Minute)
		st, err := a.WaitApplication(termCtx, appName, func(s testenv.AppStatus) bool {
			return s.OperationPhase == "Failed" || s.OperationPhase == "Error"
		})
		termCancel()
		if err != nil {
			t.Fatalf("%s: the failed sync did not end: %v", label, err)
		}
		t.Logf("%s: retries over: %s", label, st)
		out, errOut, code := run("finalize", "--plan", h.planFile, "--timeout", "30m", "--poll-interval", "1s", "-q")
		if code != ExitPartial || !strings.Contains(out, "its last sync Failed") || !strings.Contains(out, "no sync is running") ||
			!strings.Contains(out, argoapp.SyncOptionNoCSAMigration) || strings.Contains(out, "not ready after") {
			t.Errorf("%s: finalize on the failed sync: exit %d\n%s%s", label, code, out, errOut)
		}
	}
}

func managerSet(mf []metav1.ManagedFieldsEntry) string {
	var out []string
	for _, m := range mf {
		out = append(out, m.Manager+"/"+string(m.Operation))
	}
	return strings.Join(out, ",")
}
