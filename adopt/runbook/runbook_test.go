package runbook

import (
	"fmt"
	"strings"
	"testing"
)

var targets = []Target{{Path: "k8s/system/litellm-test-usage-hook-cm.yaml", App: "adopt-litellm-test"}}

// The incident's runbook, k8s/system/README.md, in the shapes seen in
// practice: repo-relative, relative to the README, the whole directory, in
// a fenced block and inline, and lines that must not match.
const readme = "# System manifests\n" +
	"\n" +
	"Apply the hook after regenerating it:\n" +
	"\n" +
	"```sh\n" +
	"kubectl -n litellm-test apply -f k8s/system/litellm-test-usage-hook-cm.yaml\n" +
	"  kubectl create -f ./litellm-test-usage-hook-cm.yaml\n" +
	"kubectl apply -f k8s/system/\n" +
	"kubectl apply -f k8s/other/thing.yaml\n" +
	"kubectl get cm -f k8s/system/litellm-test-usage-hook-cm.yaml\n" +
	"```\n" +
	"\n" +
	"Or inline: `kubectl replace --filename=k8s/system/litellm-test-usage-hook-cm.yaml`.\n"

func TestScanFindsHandAppliesOfAdoptedFiles(t *testing.T) {
	got := Scan("k8s/system/README.md", []byte(readme), targets)
	var lines []int
	for _, f := range got {
		lines = append(lines, f.Line)
	}
	if want := []int{6, 7, 8, 13}; fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("findings on lines %v, want %v: %+v", lines, want, got)
	}
	if s := got[0].String(); s != "k8s/system/README.md:6: this runbook still applies an adopted file by hand (k8s/system/litellm-test-usage-hook-cm.yaml, now managed by Application adopt-litellm-test)" {
		t.Fatalf("message %q", s)
	}
}

func TestFixRewritesAndIsIdempotent(t *testing.T) {
	findings := Scan("k8s/system/README.md", []byte(readme), targets)
	fixed := string(Fix([]byte(readme), findings, "3f9a1c0b7d2e"))
	for _, want := range []string{
		"# " + Marker + " \"adopt-litellm-test\" since adopt plan 3f9a1c0b7d2e",
		"kubectl -n litellm-test apply --server-side -f k8s/system/litellm-test-usage-hook-cm.yaml",
		"  # " + Marker,
		"  kubectl apply --server-side -f ./litellm-test-usage-hook-cm.yaml",
		"kubectl apply --server-side -f k8s/system/\n",
		"kubectl apply -f k8s/other/thing.yaml",
		"> " + Marker,
		"`kubectl apply --server-side --filename=k8s/system/litellm-test-usage-hook-cm.yaml`",
	} {
		if !strings.Contains(fixed, want) {
			t.Errorf("fixed runbook lacks %q:\n%s", want, fixed)
		}
	}
	if again := Scan("k8s/system/README.md", []byte(fixed), targets); len(again) != 0 {
		t.Fatalf("fixed runbook still reported: %+v", again)
	}
	if strings.Count(fixed, "\n") != strings.Count(readme, "\n")+4 {
		t.Fatalf("want exactly 4 note lines added:\n%s", fixed)
	}
}

func TestShellScript(t *testing.T) {
	sh := "#!/bin/sh\nset -e\nkubectl apply -f \"$REPO/k8s/system/litellm-test-usage-hook-cm.yaml\"\n"
	got := Scan("scripts/deploy.sh", []byte(sh), targets)
	if len(got) != 1 || got[0].Line != 3 {
		t.Fatalf("%+v", got)
	}
	fixed := string(Fix([]byte(sh), got, "p1"))
	if !strings.Contains(fixed, "\n# "+Marker) || !strings.Contains(fixed, "kubectl apply --server-side -f \"$REPO/") {
		t.Fatalf("%s", fixed)
	}
	if IsRunbook("a/b.yaml") || !IsRunbook("docs/RUN.md") || !IsRunbook("x.sh") {
		t.Fatal("IsRunbook")
	}
}
