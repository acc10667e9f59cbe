package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
)

// annotationsOfSize returns annotations whose key+value bytes total n, with
// a multi-byte UTF-8 value so that bytes and characters differ.
func annotationsOfSize(n int) map[string]string {
	const k1, k2 = "example.com/utf8", "example.com/fill"
	v1 := strings.Repeat("é", 100) // 200 bytes, 100 characters
	rest := n - len(k1) - len(v1) - len(k2)
	return map[string]string{k1: v1, k2: strings.Repeat("x", rest)}
}

func planJSON(t *testing.T, args ...string) *plan.Plan {
	t.Helper()
	out, errOut, code := adopt(t, append([]string{"plan", "-o", "json", "-q"}, args...)...)
	if code != 0 {
		t.Fatalf("adopt plan exited %d: %s", code, errOut)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan output is not JSON: %v\n%s", err, out)
	}
	return &p
}

func findObject(p *plan.Plan, kind, ns, name string) *plan.Object {
	for i := range p.Objects {
		o := &p.Objects[i]
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o
		}
	}
	return nil
}

// TestBudgetIsTheAPIServersVerdict proves the byte count is the API server's
// own: exactly 262,144 bytes is accepted, 262,145 rejected, multi-byte UTF-8
// counts in bytes, and adopt reports 100.0% and 0 headroom for the first.
func TestBudgetIsTheAPIServersVerdict(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cms := cp.Clientset().CoreV1().ConfigMaps(ns)

	atCap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "at-cap", Annotations: annotationsOfSize(budget.AnnotationCap)}}
	if got := budget.AnnotationBytes(atCap.Annotations); got != budget.AnnotationCap {
		t.Fatalf("fixture: %d bytes", got)
	}
	if _, err := cms.Create(ctx, atCap, metav1.CreateOptions{}); err != nil {
		t.Fatalf("API server rejected exactly %d bytes: %v", budget.AnnotationCap, err)
	}
	over := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "over-cap", Annotations: annotationsOfSize(budget.AnnotationCap + 1)}}
	_, err := cms.Create(ctx, over, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Too long") {
		t.Fatalf("API server accepted %d bytes, or failed otherwise: %v", budget.AnnotationCap+1, err)
	}

	p := planJSON(t, "-n", ns)
	o := findObject(p, "ConfigMap", ns, "at-cap")
	if o == nil {
		t.Fatalf("at-cap not in plan: %+v", p.Objects)
	}
	if o.Budget.AnnotationBytes != 262144 || o.Budget.PercentOfCap != 100.0 || o.Budget.Headroom != 0 {
		t.Fatalf("budget = %+v, want 262144 B, 100.0%%, 0 headroom", o.Budget)
	}
	if o.Level != budget.LevelCritical {
		t.Fatalf("level = %s, want critical", o.Level)
	}
	if findObject(p, "ConfigMap", ns, "over-cap") != nil {
		t.Fatal("rejected object appears in plan")
	}
}

// TestPlanHandAppliedConfigMap applies a ConfigMap with the real kubectl and
// checks last-applied is seen, counted and judged client-side.
func TestPlanHandAppliedConfigMap(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	data := strings.Repeat("a", 200*1024)
	manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  namespace: %s\ndata:\n  hook.py: %q\n", ns, data)
	if _, err := cp.Kubectl(ctx, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	// An Application "app" in this test's own Argo CD namespace tracks one
	// ConfigMap; the namespace has no argocd-cm.
	argoNS := cp.Namespace(t)
	app := fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: app\n  namespace: %s\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: %s}\n  source: {repoURL: https://git.example.invalid/gitops.git, path: apps}\n", argoNS, ns)
	tracked := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tracked\n  namespace: %s\n  annotations:\n    argocd.argoproj.io/tracking-id: app:/ConfigMap:%s/tracked\ndata:\n  a: b\n", ns, ns)
	if _, err := cp.Kubectl(ctx, []byte(app+"---\n"+tracked), "create", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	live, err := cp.Clientset().CoreV1().ConfigMaps(ns).Get(ctx, "hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := planJSON(t, "-n", ns, "--argocd-namespace", argoNS)
	o := findObject(p, "ConfigMap", ns, "hook")
	if o == nil {
		t.Fatalf("hook not in plan")
	}
	if !o.Budget.HasLastApplied || o.Budget.AnnotationBytes != budget.AnnotationBytes(live.Annotations) {
		t.Fatalf("budget %+v, live annotations %d B", o.Budget, budget.AnnotationBytes(live.Annotations))
	}
	if o.DataBytes != len("hook.py")+len(data) {
		t.Fatalf("data bytes = %d", o.DataBytes)
	}
	if o.Provenance != "hand-applied (client-side)" {
		t.Fatalf("provenance = %q", o.Provenance)
	}
	if findObject(p, "ConfigMap", ns, "tracked") != nil {
		t.Fatal("tracked object reported as untracked")
	}
	if p.Tracking.Method != "annotation" || !strings.Contains(p.Tracking.Reason, "not found") {
		t.Fatalf("tracking = %+v", p.Tracking)
	}
	// The table shows the same figures.
	out, _, code := adopt(t, "plan", "-n", ns, "-q", "--argocd-namespace", argoNS)
	if code != 0 || !strings.Contains(out, "hook") || !strings.Contains(out, fmt.Sprintf("%.1f%%", o.Budget.PercentOfCap)) {
		t.Fatalf("table (exit %d):\n%s", code, out)
	}
}

// TestPlanTwiceIsByteIdentical checks the plan file is deterministic.
func TestPlanTwiceIsByteIdentical(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	for i := 0; i < 5; i++ {
		m := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: %s\ndata:\n  k: v%d\n", i, ns, i)
		if _, err := cp.Kubectl(ctx, []byte(m), "apply", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		path := filepath.Join(dir, fmt.Sprintf("plan%d.yaml", i))
		if _, errOut, code := adopt(t, "plan", "-q", "--out", path); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatal("two scans of the same cluster gave different plan files")
	}
	p, err := plan.Unmarshal(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if findObject(p, "ConfigMap", ns, "cm-3") == nil {
		t.Fatal("plan file lacks cm-3")
	}
	// Cluster-wide, what the API server creates for itself is skipped.
	if findObject(p, "ServiceCIDR", "", "kubernetes") != nil {
		t.Fatal("the API server's default ServiceCIDR is proposed for adoption")
	}
	skipped := false
	for _, s := range p.Skipped {
		skipped = skipped || (s.Kind == "ServiceCIDR" && s.Name == "kubernetes" && s.Class == "api-server-default")
	}
	if !skipped {
		t.Fatal("the default ServiceCIDR is not reported as skipped")
	}
}

// TestPlanBadClusterIsOneLine covers an unreachable server, a server that
// never answers (bounded by --request-timeout) and a broken kubeconfig.
func TestPlanBadClusterIsOneLine(t *testing.T) {
	dir := t.TempDir()
	// A port with nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	l.Close()
	// A server that accepts and never answers.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kc := func(server string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n", server)
	}
	cases := []struct {
		name, kubeconfig string
		extra            []string
		code             int
		want             string
	}{
		{"unreachable", write("closed", kc("https://"+closedAddr)), nil, ExitError, "cannot reach the API server"},
		{"no answer", write("hang", kc("https://"+hang.Addr().String())), []string{"--request-timeout", "250ms"}, ExitError, "request-timeout"},
		{"broken kubeconfig", write("broken", "this: [is not a kubeconfig"), nil, ExitUsage, "cannot load kubeconfig"},
		{"missing context", write("ctx", kc("https://"+closedAddr)), []string{"--context", "nope"}, ExitUsage, "cannot load kubeconfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"plan", "--kubeconfig", tc.kubeconfig}, tc.extra...)
			code := runAdopt(t, "adopt", args, strings.NewReader(""), &out, &errb)
			msg := errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, msg)
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "error: ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("want one line with %q, got %q", tc.want, msg)
			}
			if strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic") {
				t.Fatalf("stack trace in output: %s", msg)
			}
		})
	}
}

// TestUsageErrors checks bad flags exit 2 with one line.
func TestUsageErrors(t *testing.T) {
	_, errOut, code := adopt(t, "plan", "-o", "xml")
	if code != ExitUsage || !strings.Contains(errOut, `unknown output format "xml"`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = adopt(t, "plan", "--no-such-flag")
	if code != ExitUsage || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	_, errOut, code = adopt(t, "plan", "-n", "x", "-A")
	if code != ExitUsage {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	// Moved from TestPlanGroupsByLabels and TestReconcileGroupsByTeam
	// (their engine behaviour is adopt/planner's and adopt/reconcile's).
	if _, errOut, code := adopt(t, "plan", "-n", "x", "--group-by", "colour"); code != ExitUsage || !strings.Contains(errOut, "--group-by") {
		t.Errorf("bad --group-by: exit %d, %s", code, errOut)
	}
	repo := []string{"reconcile", "--repo", "https://git.example.invalid/org/gitops.git", "--provider", "gitea", "--git-token", "t0ken"}
	if _, errOut, code := adopt(t, append(repo, "--group-prs-by", "team!")...); code != ExitUsage || !strings.Contains(errOut, "not a label key") {
		t.Errorf("--group-prs-by team!: exit %d, %s; want a usage error", code, errOut)
	}
	if _, errOut, code := adopt(t, append(repo, "--argocd-server", "127.0.0.1:1", "--argocd-token", "x")...); code != ExitUsage || !strings.Contains(errOut, "--argocd-server is used only to start syncs") {
		t.Errorf("--argocd-server without --sync: exit %d, %s; want a usage error", code, errOut)
	}
}
