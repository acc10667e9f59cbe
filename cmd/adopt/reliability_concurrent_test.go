package main

// Two people in one sprint (issue 18): two `adopt finalize` processes on
// the same plan. Before the journal was locked, both patched, the loser's
// not-applied line landed after the winner's finalized, and --undo left
// one object without its annotation.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// manyHooks hand-applies n ConfigMaps the runbook way (client-side, then
// --server-side) and syncs them as Argo CD does, tracked by app: three
// kubectl calls for all of them. It returns the plan's objects and each
// object's last-applied annotation.
func manyHooks(t *testing.T, ns, app string, n int) ([]plan.Object, map[string]string) {
	t.Helper()
	var hand, argo bytes.Buffer
	var objs []plan.Object
	for i := range n {
		name := fmt.Sprintf("hook-%02d", i)
		fmt.Fprintf(&hand, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, annotations: {team: platform}}\ndata: {k: %q, big: %s}\n",
			name, ns, name+"-"+strconv.Itoa(i*i), strings.Repeat("x", 1000+i))
		fmt.Fprintf(&argo, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, annotations: {team: platform, argocd.argoproj.io/tracking-id: %q}}\ndata: {k: %q, big: %s}\n",
			name, ns, app+":/ConfigMap:"+ns+"/"+name, name+"-"+strconv.Itoa(i*i), strings.Repeat("x", 1000+i))
		objs = append(objs, plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: app})
	}
	kc(t, hand.Bytes(), "-n", ns, "apply", "-f", "-")
	kc(t, hand.Bytes(), "-n", ns, "apply", "--server-side", "-f", "-")
	kc(t, argo.Bytes(), "-n", ns, "apply", "--server-side", "--force-conflicts", "--field-manager=argocd-controller", "-f", "-")
	return objs, lastApplied(t, ns)
}

// lastApplied is each ConfigMap of ns's last-applied annotation, by name
// (absent when it has none).
func lastApplied(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cp.Clientset().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		if v, ok := cm.Annotations[budget.LastAppliedKey]; ok {
			out[cm.Name] = v
		}
	}
	return out
}

// TestTwoFinalizeRunsOnOnePlan: run A holds the plan's journal while it
// waits for the Application's first sync; run B, started then on the same
// plan, stops before any request that writes, naming A. Once the
// Application is Healthy, A finalizes all 60 objects; B run again finds
// nothing to do. Over all runs each object was patched exactly once, and
// --undo restores every annotation byte for byte. Then two runs start
// together on a fresh namespace, and overlap for certain: the proxy holds
// each one's first request (its permission check, which comes before it
// takes the journal) until both are held at once, then lets both go on, so
// they race for the journal from the same point. Whichever wins, each
// object is patched once and --undo restores all 60.
func TestTwoFinalizeRunsOnOnePlan(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	const n = 60
	bin := adoptBinary(t)
	type setup struct {
		ns, app, planFile, kubeconfig string
		before                        map[string]string
		proxy                         *stallProxy
	}
	prepare := func(t *testing.T, health string) setup {
		s := setup{ns: cp.Namespace(t)}
		s.app = "adopt-" + s.ns
		objs, before := manyHooks(t, s.ns, s.app, n)
		if len(before) != n {
			t.Fatalf("%d of %d ConfigMaps carry the annotation before finalize", len(before), n)
		}
		s.before = before
		putApplication(t, s.app, s.ns, syncedStatus(health))
		// A proxy that never stalls: it counts every request by path.
		s.proxy = startStallProxy(t, cp.Server, true, "none", "none", 0, false)
		s.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
		if err := testenv.WriteKubeconfig(s.kubeconfig, s.proxy.URL, testenv.AdminUser, cp.AdminToken); err != nil {
			t.Fatal(err)
		}
		s.planFile = onePlan(t, s.proxy.URL, s.ns, s.app, objs)
		return s
	}
	finalizeCmd := func(s setup, extra ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"--kubeconfig", s.kubeconfig, "finalize", "--plan", s.planFile, "--poll-interval", "100ms", "--timeout", "2m", "--settle", "100ms"}, extra...)...)
	}
	// patchedOnce checks that each object was patched exactly once over
	// every run so far, and that none still has the annotation.
	patchedOnce := func(t *testing.T, s setup) {
		t.Helper()
		patches := s.proxy.Forwarded(http.MethodPatch)
		for name := range s.before {
			if got := patches["/api/v1/namespaces/"+s.ns+"/configmaps/"+name]; got != 1 {
				t.Errorf("%s was patched %d times over both runs, want exactly 1", name, got)
			}
		}
		if left := lastApplied(t, s.ns); len(left) != 0 {
			t.Errorf("%d objects still carry the annotation after finalize", len(left))
		}
	}
	undoRestoresAll := func(t *testing.T, s setup) {
		t.Helper()
		if out, err := finalizeCmd(s, "--undo", "-q").CombinedOutput(); err != nil {
			t.Fatalf("undo: %v\n%s", err, out)
		}
		after := lastApplied(t, s.ns)
		for name, want := range s.before {
			if after[name] != want {
				t.Errorf("undo restored %s's annotation as %d B, want the %d B it had, byte for byte", name, len(after[name]), len(want))
			}
		}
	}

	t.Run("the second stops before writing", func(t *testing.T) {
		s := prepare(t, "Progressing")
		a := finalizeCmd(s)
		stderr, err := a.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var aOut bytes.Buffer
		a.Stdout = &aOut
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
		// A prints that it waits once it holds the journal and has read
		// the Application: the journal is opened before Argo CD is asked.
		lines := bufio.NewScanner(stderr)
		var aErr strings.Builder
		for lines.Scan() {
			aErr.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), "Application "+s.app+": waiting") {
				break
			}
		}
		if !strings.Contains(aErr.String(), "waiting") {
			t.Fatalf("run A ended before waiting for the sync:\n%s", aErr.String())
		}
		go func() {
			for lines.Scan() {
			}
		}()

		b := finalizeCmd(s)
		out, err := b.CombinedOutput()
		if code := b.ProcessState.ExitCode(); code != ExitError || !strings.Contains(string(out), "is in use by adopt finalize") ||
			!strings.Contains(string(out), fmt.Sprintf("(pid %d ", a.Process.Pid)) {
			t.Fatalf("run B while A holds the journal: exit %d (%v), want %d naming A's pid %d:\n%s", code, err, ExitError, a.Process.Pid, out)
		}
		if patches := s.proxy.Forwarded(http.MethodPatch); len(patches) != 0 {
			t.Fatalf("patches before the Application was Healthy: %v", patches)
		}

		putApplication(t, s.app, s.ns, syncedStatus("Healthy"))
		done := make(chan error, 1)
		go func() { done <- a.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run A: %v\n%s", err, aOut.String())
			}
		case <-time.After(3 * time.Minute):
			t.Fatal("run A did not finish within 3 minutes of the Application turning Healthy")
		}
		if !strings.Contains(aOut.String(), "finalized") {
			t.Fatalf("run A's report:\n%s", aOut.String())
		}
		if out, err := finalizeCmd(s, "-q").CombinedOutput(); err != nil {
			t.Fatalf("run B after A: %v\n%s", err, out)
		}
		patchedOnce(t, s)
		undoRestoresAll(t, s)
	})

	t.Run("both start at once", func(t *testing.T) {
		s := prepare(t, "Healthy")
		// A run's first request is its first SelfSubjectAccessReview, and
		// it sends them one at a time: two held at once are one per run,
		// both before the journal lock, and they are released together.
		bothHeld := s.proxy.gather(http.MethodPost, "/selfsubjectaccessreviews", 2)
		a, b := finalizeCmd(s, "-q"), finalizeCmd(s, "-q")
		var aOut, bOut bytes.Buffer
		a.Stdout, a.Stderr, b.Stdout, b.Stderr = &aOut, &aOut, &bOut, &bOut
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Process.Kill() })
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Process.Kill() })
		aDone, bDone := make(chan error, 1), make(chan error, 1)
		go func() { aDone <- a.Wait() }()
		go func() { bDone <- b.Wait() }()
		select {
		case <-bothHeld:
		case err := <-aDone:
			t.Fatalf("run A ended (%v) before both runs were held at their permission check:\n%s", err, aOut.String())
		case err := <-bDone:
			t.Fatalf("run B ended (%v) before both runs were held at their permission check:\n%s", err, bOut.String())
		case <-time.After(2 * time.Minute):
			t.Fatalf("after 2 minutes the proxy held %d permission checks, want both runs' at once", s.proxy.gathering())
		}
		aErr, bErr := <-aDone, <-bDone
		// Each either finalized, found everything done, or stopped on the
		// lock before writing; at least one of them finalized.
		for _, r := range []struct {
			err error
			out string
		}{{aErr, aOut.String()}, {bErr, bOut.String()}} {
			// The lock's message names the holder, or says its lock file
			// names none yet when the holder has not written it.
			if r.err != nil && !strings.Contains(r.out, "is in use by adopt finalize") && !strings.Contains(r.out, "is in use by another adopt finalize (its lock file names no holder yet)") {
				t.Fatalf("a run failed other than on the lock: %v\n%s", r.err, r.out)
			}
		}
		if aErr != nil && bErr != nil {
			t.Fatalf("both runs stopped on the lock:\n%s\n%s", aOut.String(), bOut.String())
		}
		patchedOnce(t, s)
		undoRestoresAll(t, s)
	})
}
