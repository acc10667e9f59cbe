package main

// Bad input (issue 8): each case ends in one error line with the
// documented exit code, on the real API server and git server; objects at
// the edges (multi-byte text at exactly the annotation cap, a 1 MiB
// ConfigMap) are measured right. Another cluster's plan is in
// reliability_input_test.go; unreachable servers and a missing context in
// plan_test.go's TestPlanBadClusterIsOneLine.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/adopt-dev/adopt/adopt/budget"
	"github.com/adopt-dev/adopt/adopt/plan"
	"github.com/adopt-dev/adopt/internal/testenv"
)

// otherCA is a PEM CA certificate that signed nothing the API server has.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-cluster-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestBadInputIsOneLine(t *testing.T) {
	dir := t.TempDir()
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hook}\ndata: {a: b}\n"), "-n", ns, "apply", "-f", "-")

	wrongToken := filepath.Join(dir, "wrong-token.kubeconfig")
	if err := testenv.WriteKubeconfig(wrongToken, cp.Server, "expired", "expired-token-0000"); err != nil {
		t.Fatal(err)
	}
	badCA := filepath.Join(dir, "bad-ca.kubeconfig")
	if err := os.WriteFile(badCA, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %s, certificate-authority-data: %s}
users:
- name: u
  user: {token: %s}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, cp.Server, base64.StdEncoding.EncodeToString(otherCA(t)), cp.AdminToken)), 0o600); err != nil {
		t.Fatal(err)
	}

	good := filepath.Join(dir, "plan.yaml")
	if out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", good); code != ExitOK {
		t.Fatalf("plan: exit %d: %s%s", code, out, errOut)
	}
	text, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	writePlanText := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newer := writePlanText("newer.yaml", strings.Replace(string(text), "apiVersion: "+plan.APIVersion, "apiVersion: adopt.dev/v1beta9", 1))
	p := readPlan(t, good)
	p.Applications[0].Objects = append(p.Applications[0].Objects, "ConfigMap "+ns+"/not-in-objects")
	inconsistent := filepath.Join(dir, "inconsistent.yaml")
	writePlanFile(t, inconsistent, p)
	truncated := writePlanText("truncated.yaml", string(text[:len(text)/2]))

	g, err := testenv.StartGitServer("alice", "private-5150")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	private, err := g.CreateRepo("private", map[string]string{"README.md": "gitops\n"})
	if err != nil {
		t.Fatal(err)
	}
	missing := g.URL + "/no-such-repo.git"

	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"plan: a rejected token", []string{"--kubeconfig", wrongToken, "plan", "-n", ns}, ExitError, []string{"rejected the credentials (401)", "Refresh the token"}},
		{"plan: a CA that did not sign the server", []string{"--kubeconfig", badCA, "plan", "-n", ns}, ExitError, []string{cp.Server, "certificate"}},
		{"apply: a rejected token", []string{"--kubeconfig", wrongToken, "apply", "--plan", good, "--repo", private, "--git-user", "alice", "--git-token", "private-5150"}, ExitError, []string{"401"}},
		{"finalize: a CA that did not sign the server", []string{"--kubeconfig", badCA, "finalize", "--plan", good}, ExitError, []string{"certificate"}},
		{"apply: a plan from a newer adopt", []string{"apply", "--plan", newer, "--repo", private}, ExitUsage, []string{"adopt.dev/v1beta9", "run adopt plan again"}},
		{"finalize: a plan from a newer adopt", []string{"finalize", "--plan", newer}, ExitUsage, []string{"adopt.dev/v1beta9", "run adopt plan again"}},
		{"apply: an inconsistent plan", []string{"apply", "--plan", inconsistent, "--repo", private}, ExitUsage, []string{"not-in-objects", "not among the plan's objects"}},
		{"finalize: an inconsistent plan", []string{"finalize", "--plan", inconsistent}, ExitUsage, []string{"not-in-objects", "not among the plan's objects"}},
		{"apply: a truncated plan", []string{"apply", "--plan", truncated, "--repo", private}, ExitUsage, []string{truncated, "run adopt plan again"}},
		{"finalize: a truncated plan", []string{"finalize", "--plan", truncated}, ExitUsage, []string{truncated, "run adopt plan again"}},
		{"apply: a repo that does not exist", []string{"apply", "--plan", good, "--repo", missing, "--git-user", "alice", "--git-token", "private-5150"}, ExitError, []string{"no-such-repo.git", "Check --repo"}},
		{"plan: a repo that does not exist", []string{"plan", "-n", ns, "--repo", missing}, ExitError, []string{"no-such-repo.git"}},
		{"apply: a private repo without credentials", []string{"apply", "--plan", good, "--repo", private}, ExitError, []string{"private.git", "--git-token"}},
		{"plan: a private repo without credentials", []string{"plan", "-n", ns, "--repo", private}, ExitError, []string{"private.git", "ADOPT_GIT_TOKEN"}},
		{"finalize: credentials in --argocd-server", []string{"finalize", "--plan", good, "--argocd-server", "https://admin:argo-pw-31337@argocd.example.invalid", "--argocd-token", "t0ken-x"}, ExitUsage, []string{"--argocd-server carries credentials", "--argocd-token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := adopt(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s%s", code, tc.code, out, errOut)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "error: ") || strings.Contains(errOut, "goroutine ") {
				t.Fatalf("want one error line, got %q (stdout %q)", errOut, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("the error lacks %q: %s", w, errOut)
				}
			}
			if strings.Contains(errOut, "argo-pw-31337") {
				t.Errorf("the error leaks the password: %s", errOut)
			}
		})
	}
	if got := refNames(t, g.BarePath("private")); strings.Contains(got, "adopt/") {
		t.Errorf("a refused run wrote a branch:\n%s", got)
	}
}

// TestPlanMeasuresEdgeObjects: multi-byte text in annotation values at
// exactly the cap, and a ConfigMap of 1 MiB of multi-byte data (the API
// server's limit for ConfigMap data), are measured in bytes as the API
// server counts them.
func TestPlanMeasuresEdgeObjects(t *testing.T) {
	ctx := context.Background()
	ns := cp.Namespace(t)
	cms := cp.Clientset().CoreV1().ConfigMaps(ns)

	const kCJK, kEmoji, kFill = "example.com/cjk", "example.com/emoji", "example.com/fill"
	cjk := strings.Repeat("漢", 1000)   // 3,000 bytes
	emoji := strings.Repeat("🚀", 1000) // 4,000 bytes
	ann := map[string]string{kCJK: cjk, kEmoji: emoji,
		kFill: strings.Repeat("x", budget.AnnotationCap-len(kCJK)-len(cjk)-len(kEmoji)-len(emoji)-len(kFill))}
	if budget.AnnotationBytes(ann) != budget.AnnotationCap {
		t.Fatalf("test setup: %d annotation bytes", budget.AnnotationBytes(ann))
	}
	unicodeData := map[string]string{"greeting": "grüße, 漢字, 🚀"}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unicode-at-cap", Annotations: ann,
		Labels: map[string]string{"team": "ünicode-is-not-allowed-here"}}, Data: unicodeData}, metav1.CreateOptions{}); err == nil {
		t.Fatal("the API server took a label value with multi-byte text: labels cannot carry it, the test's premise is wrong")
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unicode-at-cap", Annotations: ann}, Data: unicodeData}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API server refused annotations of exactly the cap: %v", err)
	}

	big := strings.Repeat("é", 1<<19) // 1 MiB in two-byte runes
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one-mib"}, Data: map[string]string{"blob": big}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the API server refused 1 MiB of data: %v", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "over-one-mib"}, Data: map[string]string{"blob": big + "x"}}, metav1.CreateOptions{}); err == nil {
		t.Fatal("the API server took more than 1 MiB of ConfigMap data: the edge is elsewhere")
	}

	p := planJSON(t, "-n", ns)
	at := findObject(p, "ConfigMap", ns, "unicode-at-cap")
	if at == nil {
		t.Fatal("plan lacks unicode-at-cap")
	}
	if at.Budget.AnnotationBytes != budget.AnnotationCap || at.Budget.Headroom != 0 || at.Budget.PercentOfCap != 100.0 {
		t.Errorf("unicode-at-cap: %+v, want %d bytes, 0 headroom, 100.0%%", at.Budget, budget.AnnotationCap)
	}
	if want := len("greeting") + len(unicodeData["greeting"]); at.DataBytes != want {
		t.Errorf("unicode-at-cap: %d data bytes, want %d", at.DataBytes, want)
	}
	mib := findObject(p, "ConfigMap", ns, "one-mib")
	if mib == nil {
		t.Fatal("plan lacks one-mib")
	}
	if want := len("blob") + 1<<20; mib.DataBytes != want {
		t.Errorf("one-mib: %d data bytes, want %d", mib.DataBytes, want)
	}
	out, errOut, code := adopt(t, "plan", "-n", ns, "-q")
	if code != ExitOK || !strings.Contains(out, "100.0%") {
		t.Errorf("table (exit %d) lacks 100.0%% for the object at the cap:\n%s%s", code, out, errOut)
	}
}

// TestEveryTruncationOfAPlanIsRefused cuts a real plan file after every
// line and checks each cut is refused: a plan cut short must never be
// taken for a smaller plan.
func TestEveryTruncationOfAPlanIsRefused(t *testing.T) {
	ns := cp.Namespace(t)
	kc(t, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\ndata: {a: b}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: two}\ndata: {c: d}\n"), "-n", ns, "apply", "-f", "-")
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if out, errOut, code := adopt(t, "plan", "-n", ns, "-q", "--out", file); code != ExitOK {
		t.Fatalf("plan: exit %d: %s%s", code, out, errOut)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n")
	for i := 1; i < len(lines)-1; i++ {
		cut := strings.Join(lines[:i], "")
		if _, err := plan.Unmarshal([]byte(cut)); err == nil {
			t.Errorf("a plan cut after line %d of %d (%q) was accepted", i, len(lines)-1, strings.TrimSpace(lines[i-1]))
		}
	}
}
