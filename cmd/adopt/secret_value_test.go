package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adopt-dev/adopt/adopt/plan"
)

// TestSecretValuesOutsideSecrets (issue 36): credentials in objects that
// are not Secrets, hand-applied with kubectl apply: a ConfigMap holding a
// database URL with a password, and a Deployment whose env has a literal
// password under an ordinary-looking name's value. plan, with and without
// --preview, names each key path and rule in a critical secret-value
// finding and never the value;
// apply exports neither object, names both, says why and what to do, and
// writes no byte of either value to Git. After review, adopt.yaml's allowValues
// passes both: the plan records the entries and says which passed each,
// and apply exports them as they are, the reviewer's choice.
func TestSecretValuesOutsideSecrets(t *testing.T) {
	ns := cp.Namespace(t)
	canary := func(prefix string) string {
		b := make([]byte, 12)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return prefix + hex.EncodeToString(b)
	}
	urlPass, envPass := canary("Up"), canary("Ev")
	objs := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: app-settings, namespace: %[1]s}
data:
  DATABASE_URL: postgres://app:%[2]s@db.example.invalid:5432/app
  LOG_LEVEL: info
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: %[1]s}
spec:
  replicas: 0
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers:
      - name: worker
        image: registry.invalid/worker:1.0
        env:
        - {name: SMTP_PASSWORD, value: "%[3]s"}
        - {name: QUEUE, value: jobs-default}
`, ns, urlPass, envPass)
	kc(t, []byte(objs), "apply", "-f", "-")

	_, url := gitRepo(t, "gitops", map[string]string{"README.md": "gitops\n"})
	dir := t.TempDir()
	planFile := filepath.Join(dir, "plan.json")
	out, errOut, code := adopt(t, "plan", "-n", ns, "--repo", url, "--preview", "-o", "json", "--out", planFile)
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	noCanary := func(where, s string) {
		t.Helper()
		for _, c := range []string{urlPass, envPass} {
			if strings.Contains(s, c) {
				t.Errorf("a secret value is in %s", where)
			}
		}
	}
	noCanary("the plan's output", out+errOut)
	b, _ := os.ReadFile(planFile)
	noCanary("the plan file", string(b))
	// Without --preview too (issue 44): the plan reads what apply exports.
	noPreview := filepath.Join(dir, "plan-no-preview.json")
	out, errOut, code = adopt(t, "plan", "-n", ns, "--repo", url, "-o", "json", "--out", noPreview)
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	noCanary("the plan's output without --preview", out+errOut)
	for _, f := range []string{planFile, noPreview} {
		p := readPlan(t, f)
		for _, c := range []struct{ kind, name, path, rule string }{
			{"ConfigMap", "app-settings", "data.DATABASE_URL", "url-password"},
			{"Deployment", "worker", "spec.template.spec.containers[0].env[0].value", "secret-key-name"},
		} {
			o := findObject(p, c.kind, ns, c.name)
			if o == nil || o.Risk != plan.Critical || !findingSays(o.Findings, plan.CodeSecretValue, c.path+" looks like a secret (rule "+c.rule+")") {
				t.Errorf("%s: %s %s: %s, want a critical secret-value finding at %s (rule %s)", filepath.Base(f), c.kind, c.name, previewOf(o), c.path, c.rule)
			}
		}
	}
	p := readPlan(t, planFile)
	if o := findObject(p, "Deployment", ns, "worker"); o != nil && findingSays(o.Findings, plan.CodeSecretValue, "env[1]") {
		t.Errorf("QUEUE's value is flagged: %+v", o.Findings)
	}

	apply := func(planFile string) (string, string, int) {
		return adopt(t, "apply", "--plan", planFile, "--repo", url, "--author", "T <t@example.invalid>", "-q")
	}
	out, errOut, code = apply(planFile)
	noCanary("apply's output", out+errOut)
	if code == ExitOK || !strings.Contains(errOut, "data.DATABASE_URL looks like a secret") || !strings.Contains(errOut, "env[0].value looks like a secret") || !strings.Contains(errOut, "Move the value into a Secret") {
		t.Fatalf("apply exited %d, want it to refuse the ConfigMap and the Deployment and say why: %s %s", code, out, errOut)
	}
	gitLog := func() string {
		clone := filepath.Join(t.TempDir(), "clone")
		o, err := exec.Command("git", "clone", "-q", "--mirror", url, clone).CombinedOutput()
		if err != nil {
			t.Fatalf("git clone: %v: %s", err, o)
		}
		o, err = exec.Command("git", "-C", clone, "log", "--all", "-p").CombinedOutput()
		if err != nil {
			t.Fatalf("git log: %v: %s", err, o)
		}
		return string(o)
	}
	noCanary("Git", gitLog())

	// After review: both are allowed.
	cfg := filepath.Join(dir, "adopt.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("apiVersion: adopt.dev/v1alpha1\nkind: AdoptConfig\nallowValues:\n- {kinds: [ConfigMap], namespaces: [%[1]s], names: [app-settings], paths: [data.DATABASE_URL]}\n- {kinds: [Deployment], namespaces: [%[1]s], paths: [\"spec.template.spec.containers[*].env[*].value\"]}\n", ns)), 0o644); err != nil {
		t.Fatal(err)
	}
	planFile2 := filepath.Join(dir, "plan2.json")
	if _, errOut, code := adopt(t, "plan", "-n", ns, "--repo", url, "--config", cfg, "--preview", "-o", "json", "--out", planFile2); code != ExitOK && code != ExitFindings {
		t.Fatalf("plan exited %d: %s", code, errOut)
	}
	p = readPlan(t, planFile2)
	if o := findObject(p, "ConfigMap", ns, "app-settings"); o == nil || !findingSays(o.Findings, plan.CodeSecretValue, "adopt.yaml allowValues[0] allows it") || o.Risk == plan.Critical {
		t.Errorf("the allowed URL: %s", previewOf(o))
	}
	if o := findObject(p, "Deployment", ns, "worker"); o == nil || !findingSays(o.Findings, plan.CodeSecretValue, "adopt.yaml allowValues[1] allows it") || o.Risk == plan.Critical {
		t.Errorf("the allowed env value: %s", previewOf(o))
	}
	if len(p.Settings.AllowValues) != 2 {
		t.Errorf("the plan does not record allowValues: %+v", p.Settings)
	}
	if out, errOut, code := apply(planFile2); code != ExitOK {
		t.Fatalf("apply exited %d: %s %s", code, out, errOut)
	}
	if log := gitLog(); !strings.Contains(log, urlPass) || !strings.Contains(log, envPass) {
		t.Errorf("the allowed values were not exported")
	}
}
