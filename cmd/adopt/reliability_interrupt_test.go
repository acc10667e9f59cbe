package main

// Interruption and resume (issue 8): the real adopt binary is killed with
// SIGKILL at chosen points, then the same command runs again and must reach
// the end state of an uninterrupted run, with no duplicate patch or commit
// and no object half-cleaned. The points are chosen by a stall proxy on
// loopback that holds one request (before or after forwarding it) until the
// process is killed, so no hook lives in the product code.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/apply"
	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/finalize"
	"github.com/adopt-dev/adopt/adopt/objref"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/argoapp"
	"github.com/adopt-dev/adopt/internal/testenv"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// adoptBinary builds the adopt binary once for the package's subprocess tests.
func adoptBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "adopt-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "adopt")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// stallProxy forwards everything to target and holds the stallAt-th request
// matching method and path suffix until the client goes away: before
// forwarding it (the write never happens) or after (the write happened, the
// client never hears). It counts the requests it forwarded, by path. With
// gather it also holds requests until several are held at once.
type stallProxy struct {
	URL     string
	method  string
	suffix  string
	stallAt int
	after   bool
	stalled chan struct{}
	release chan struct{}

	mu        sync.Mutex
	seen      int
	forwarded map[string]int
	gate      *gate
}

// gate holds the requests matching method and path suffix until n are
// held at once, then lets them all go on together (open is closed) and
// holds no more (see stallProxy.gather).
type gate struct {
	method, suffix string
	n, held        int
	open           chan struct{}
}

func startStallProxy(t *testing.T, target string, tlsOn bool, method, suffix string, stallAt int, after bool) *stallProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	p := &stallProxy{method: method, suffix: suffix, stallAt: stallAt, after: after, stalled: make(chan struct{}), release: make(chan struct{}), forwarded: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.pass(r) {
			return
		}
		match := r.Method == p.method && strings.HasSuffix(r.URL.Path, p.suffix)
		p.mu.Lock()
		stall := false
		if match {
			p.seen++
			stall = p.seen == p.stallAt
		}
		p.mu.Unlock()
		if stall && !p.after {
			// Consume the body so the server notices the client going away.
			io.Copy(io.Discard, r.Body)
			close(p.stalled)
			p.hold(r)
			return
		}
		if stall {
			rp.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithoutCancel(r.Context())))
			p.count(r)
			close(p.stalled)
			p.hold(r)
			return
		}
		rp.ServeHTTP(w, r)
		p.count(r)
	}))
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(p.release) }) // runs first: no handler outlives the test
	p.URL = srv.URL
	return p
}

// gather makes the proxy hold every request matching method and path
// suffix until n of them are held at once, then let those n go on
// together; later ones pass. The returned channel is closed at that
// moment. Call it before the requests are sent.
func (p *stallProxy) gather(method, suffix string, n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = &gate{method: method, suffix: suffix, n: n, open: make(chan struct{})}
	return p.gate.open
}

// gathering is how many requests the gate holds now.
func (p *stallProxy) gathering() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate == nil {
		return 0
	}
	return p.gate.held
}

// pass holds r at the gate, if it is one the gate holds, until the gate
// opens; it reports false when r's client went away first or the test
// ended (nothing was forwarded).
func (p *stallProxy) pass(r *http.Request) bool {
	p.mu.Lock()
	g := p.gate
	if g == nil || r.Method != g.method || !strings.HasSuffix(r.URL.Path, g.suffix) || g.held >= g.n {
		p.mu.Unlock()
		return true
	}
	g.held++
	if g.held == g.n {
		close(g.open) // the n-th: all go on, and the gate holds no more
	}
	p.mu.Unlock()
	select {
	case <-g.open:
		return true
	case <-r.Context().Done():
	case <-p.release:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.held < g.n {
		g.held--
	}
	return false
}

// hold blocks a stalled request until its client is gone or the test ends.
func (p *stallProxy) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-p.release:
	}
}

func (p *stallProxy) count(r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forwarded[r.Method+" "+r.URL.Path]++
}

// Forwarded returns how many requests of method went to each path.
func (p *stallProxy) Forwarded(method string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.forwarded {
		if m, path, _ := strings.Cut(k, " "); m == method {
			out[path] = v
		}
	}
	return out
}

// killWhenStalled starts the binary and SIGKILLs it once the proxy holds
// its request. It fails the test if the process ends on its own first.
func killWhenStalled(t *testing.T, p *stallProxy, args ...string) string {
	t.Helper()
	out, ws := signalWhenStalled(t, p, syscall.SIGKILL, t.TempDir(), args...)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("process was not killed by SIGKILL: %v", ws)
	}
	return out
}

// signalWhenStalled starts the binary with TMPDIR set to tmp, sends it sig
// once the proxy holds its request and waits for it to end. It fails the
// test if the process ends on its own first.
func signalWhenStalled(t *testing.T, p *stallProxy, sig syscall.Signal, tmp string, args ...string) (string, syscall.WaitStatus) {
	t.Helper()
	cmd := exec.Command(adoptBinary(t), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-p.stalled:
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		<-exited
	case err := <-exited:
		t.Fatalf("adopt %s ended (%v) before reaching the signal point:\n%s", strings.Join(args, " "), err, out.String())
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return out.String(), ws
}

// threeHooks hand-applies three ConfigMaps (client-side, then a runbook's
// --server-side) in ns and syncs them the way Argo CD does, tracked by app.
func threeHooks(t *testing.T, ns, app string) []plan.Object {
	t.Helper()
	var objs []plan.Object
	for _, name := range []string{"hook-a", "hook-b", "hook-c"} {
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": name, "big": strings.Repeat("x", 100_000)}}
		handThenArgo(t, cm, app+":/ConfigMap:"+ns+"/"+name)
		objs = append(objs, plan.Object{Ref: objref.Ref{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: ns, Name: name}, App: app})
	}
	return objs
}

// onePlan writes a plan with one Application over objs, for server.
func onePlan(t *testing.T, server, ns, app string, objs []plan.Object) string {
	t.Helper()
	p := &plan.Plan{APIVersion: plan.APIVersion, Kind: plan.Kind, Cluster: plan.Cluster{Server: server},
		Tracking: argoapp.Tracking{Method: argoapp.TrackingAnnotation, InstanceLabelKey: argoapp.DefaultInstanceLabelKey, Namespace: argoNS},
		Objects:  objs}
	a := plan.Application{Name: app, Namespace: ns, Project: "default", SourcePath: "adopted/" + ns}
	for _, o := range objs {
		a.Objects = append(a.Objects, o.Ref.String())
	}
	p.Applications = []plan.Application{a}
	path := filepath.Join(t.TempDir(), "plan.yaml")
	writePlanFile(t, path, p)
	return path
}

// endState is what must be equal after an interrupted-and-resumed run and
// an uninterrupted one: per object, data, annotation keys, and each
// manager's operation and owned fields.
func endState(t *testing.T, ns string, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		cm, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range cm.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "%s data=%v annotations=%v\n", n, cm.Data, keys)
		for _, m := range cm.ManagedFields {
			fmt.Fprintf(&b, "  %s %s %s\n", m.Manager, m.Operation, m.FieldsV1.Raw)
		}
	}
	return b.String()
}

// TestFinalizeKilledAndResumed kills `adopt finalize` after one object was
// patched, with the second patch either never sent or sent but unanswered,
// then runs it again: every object ends exactly as after an uninterrupted
// run, each was patched once, the journal accounts for every removal and
// --undo restores every annotation.
func TestFinalizeKilledAndResumed(t *testing.T) {
	t.Parallel() // a long test that may run beside others: see TestMain
	names := []string{"hook-a", "hook-b", "hook-c"}

	// The reference: an uninterrupted run on an identical namespace.
	refNS := cp.Namespace(t)
	refApp := "adopt-" + refNS
	refPlan := onePlan(t, cp.Server, refNS, refApp, threeHooks(t, refNS, refApp))
	putApplication(t, refApp, refNS, syncedStatus("Healthy"))
	if out, errOut, code := adopt(t, "finalize", "--plan", refPlan, "--poll-interval", "100ms", "-q"); code != ExitOK {
		t.Fatalf("uninterrupted finalize: exit %d\n%s%s", code, out, errOut)
	}
	want := endState(t, refNS, names...)

	for _, after := range []bool{false, true} {
		name := "second patch never sent"
		if after {
			name = "second patch sent, reply lost"
		}
		t.Run(name, func(t *testing.T) {
			ns := cp.Namespace(t)
			app := "adopt-" + ns
			objs := threeHooks(t, ns, app)
			putApplication(t, app, ns, syncedStatus("Healthy"))
			before := map[string]string{}
			for _, n := range names {
				cm, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), n, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				before[n] = cm.Annotations[budget.LastAppliedKey]
			}
			p := startStallProxy(t, cp.Server, true, http.MethodPatch, "/namespaces/"+ns+"/configmaps/hook-b", 1, after)
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			if err := testenv.WriteKubeconfig(kubeconfig, p.URL, testenv.AdminUser, cp.AdminToken); err != nil {
				t.Fatal(err)
			}
			planFile := onePlan(t, p.URL, ns, app, objs)
			// --parallel 1: the kill point is between two objects in plan order.
			args := []string{"--kubeconfig", kubeconfig, "finalize", "--plan", planFile, "--poll-interval", "100ms", "-q", "--parallel", "1"}
			killWhenStalled(t, p, args...)

			// Killed: hook-a finalized, hook-c untouched; hook-b depends on the point.
			cmB, _ := cp.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), "hook-b", metav1.GetOptions{})
			if _, has := cmB.Annotations[budget.LastAppliedKey]; has == after {
				t.Fatalf("after the kill, hook-b has the annotation: %v; want %v", has, !after)
			}
			entries, err := finalize.ReadJournal(planFile + ".journal")
			if err != nil {
				t.Fatalf("journal after SIGKILL: %v", err)
			}
			if last := entries[len(entries)-1]; last.Target.Name != "hook-b" || last.Result != "pending" {
				t.Fatalf("journal does not end with hook-b pending: %+v", last)
			}

			var out, errOut strings.Builder
			code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errOut)
			if code != ExitOK {
				t.Fatalf("re-run: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			if got := strings.ReplaceAll(endState(t, ns, names...), ns, refNS); got != want {
				t.Fatalf("resumed end state differs from an uninterrupted run:\n got %s\nwant %s", got, want)
			}
			for _, n := range names {
				if got := p.Forwarded(http.MethodPatch)["/api/v1/namespaces/"+ns+"/configmaps/"+n]; got != 1 {
					t.Errorf("%s was patched %d times over both runs, want exactly 1", n, got)
				}
			}

			// The journal accounts for hook-b even when its reply was lost: undo restores all three.
			if _, errUndo, code := adopt(t, "--kubeconfig", kubeconfig, "finalize", "--plan", planFile, "--undo", "-q"); code != ExitOK {
				t.Fatalf("undo: exit %d: %s", code, errUndo)
			}
			for _, n := range names {
				cm, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(context.Background(), n, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if cm.Annotations[budget.LastAppliedKey] != before[n] {
					t.Errorf("undo did not restore %s's annotation (%d B, want %d B)", n, len(cm.Annotations[budget.LastAppliedKey]), len(before[n]))
				}
			}
		})
	}
}

// commitsOn lists the commits of a branch, tip first.
func commitsOn(t *testing.T, bare, branch string) []*gitobject.Commit {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return nil
	}
	var out []*gitobject.Commit
	it, err := r.Log(&git.LogOptions{From: ref.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	_ = it.ForEach(func(c *gitobject.Commit) error { out = append(out, c); return nil })
	return out
}

// TestApplyKilledAndResumed kills `adopt apply` after it committed, while
// its push is held (not yet received, or received with the reply lost),
// then runs it again: the branch holds exactly one adoption commit on the
// base, with the same tree as an uninterrupted run, and a third run is a
// no-op. Interrupted (SIGINT) at the same point instead, apply stops
// the push, says so, and leaves nothing in its temporary directory.
func TestApplyKilledAndResumed(t *testing.T) {
	ns := cp.Namespace(t)
	handApplied(t, ns)
	planFile := filepath.Join(t.TempDir(), "plan.yaml")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", planFile); code != ExitOK {
		t.Fatalf("plan: %s", errOut)
	}
	id := apply.AdoptionID(readPlan(t, planFile))
	branch := "adopt/" + id
	g, err := testenv.StartGitServer("", "")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	applyTo := func(repoURL string) []string {
		return []string{"--kubeconfig", cp.Kubeconfig, "apply", "--plan", planFile, "--repo", repoURL, "--repo-url", "https://git.example.invalid/gitops.git", "--author", "T <t@example.invalid>", "-q"}
	}

	refURL, err := g.CreateRepo("reference", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := adopt(t, applyTo(refURL)[2:]...); code != ExitOK {
		t.Fatalf("uninterrupted apply: exit %d\n%s%s", code, out, errOut)
	}
	wantTree := commitsOn(t, g.BarePath("reference"), branch)[0].TreeHash

	for _, after := range []bool{false, true} {
		name := "push never received"
		if after {
			name = "push received, reply lost"
		}
		t.Run(name, func(t *testing.T) {
			repo := "killed-" + strings.Fields(name)[1]
			if _, err := g.CreateRepo(repo, map[string]string{"README.md": "gitops\n"}); err != nil {
				t.Fatal(err)
			}
			p := startStallProxy(t, g.URL, false, http.MethodPost, "/git-receive-pack", 1, after)
			repoURL := p.URL + "/" + repo + ".git"
			killWhenStalled(t, p, applyTo(repoURL)...)
			got := commitsOn(t, g.BarePath(repo), branch)
			if after != (len(got) > 0) {
				t.Fatalf("after the kill the branch has %d commits (push received: %v)", len(got), after)
			}

			var out, errOut strings.Builder
			if code := runAdopt(t, "adopt", applyTo(repoURL), strings.NewReader(""), &out, &errOut); code != ExitOK {
				t.Fatalf("re-run: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			got = commitsOn(t, g.BarePath(repo), branch)
			main := commitsOn(t, g.BarePath(repo), "main")
			if len(got) != len(main)+1 || got[0].TreeHash != wantTree || got[1].Hash != main[0].Hash {
				t.Fatalf("branch has %d commits over main's %d, tree %s (want one commit, tree %s)\n%s", len(got), len(main), got[0].TreeHash, wantTree, out.String())
			}
			if after && !strings.Contains(out.String(), "up to date") {
				t.Errorf("re-run after a push that landed should say up to date:\n%s", out.String())
			}
			out.Reset()
			if code := runAdopt(t, "adopt", applyTo(repoURL), strings.NewReader(""), &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "up to date") {
				t.Fatalf("third run: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			if n := len(commitsOn(t, g.BarePath(repo), branch)); n != len(main)+1 {
				t.Fatalf("third run added a commit: %d", n)
			}
		})
	}

	t.Run("interrupted", func(t *testing.T) {
		if _, err := g.CreateRepo("interrupted", map[string]string{"README.md": "gitops\n"}); err != nil {
			t.Fatal(err)
		}
		p := startStallProxy(t, g.URL, false, http.MethodPost, "/git-receive-pack", 1, false)
		tmp := t.TempDir()
		out, ws := signalWhenStalled(t, p, syscall.SIGINT, tmp, applyTo(p.URL+"/interrupted.git")...)
		if ws.Signaled() || ws.ExitStatus() != ExitError || !strings.Contains(out, "interrupted") {
			t.Fatalf("interrupted apply: %v\n%s", ws, out)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Fatalf("the interrupted apply left %v in its temporary directory", left)
		}
		if got := commitsOn(t, g.BarePath("interrupted"), branch); len(got) != 0 {
			t.Fatalf("the interrupted push landed: %d commits", len(got))
		}
	})
}
