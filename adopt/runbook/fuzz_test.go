package runbook

import (
	"strings"
	"testing"
)

// FuzzScanAndFix feeds arbitrary runbook text to the scanner: it never
// panics, every finding points at a real line that names kubectl, and after
// Fix the same text yields no finding (a fixed line is not reported again)
// while every original line is kept, each rewritten one in its own place.
func FuzzScanAndFix(f *testing.F) {
	f.Add("k8s/system/README.md", []byte(readme))
	f.Add("run.sh", []byte("#!/bin/sh\nkubectl apply -f k8s/system/litellm-test-usage-hook-cm.yaml && kubectl apply -f k8s/system/\n"))
	f.Add("notes.md", []byte("kubectl apply -f\nkubectl apply --filename=\n-f k8s/system/litellm-test-usage-hook-cm.yaml kubectl create\n"))
	f.Add("k8s/system/README.md", []byte("```\r\nkubectl apply -f ./litellm-test-usage-hook-cm.yaml\r\n```\r\n"))
	f.Fuzz(func(t *testing.T, file string, content []byte) {
		if !IsRunbook(file) {
			file += ".md"
		}
		lines := strings.Split(string(content), "\n")
		found := Scan(file, content, targets)
		for _, fd := range found {
			if fd.Line < 1 || fd.Line > len(lines) {
				t.Fatalf("finding on line %d of a %d-line file", fd.Line, len(lines))
			}
			if !strings.Contains(lines[fd.Line-1], "kubectl") || fd.Manifest == "" || fd.App == "" {
				t.Fatalf("finding %+v for line %q", fd, lines[fd.Line-1])
			}
		}
		fixed := Fix(content, found, "p1")
		if again := Scan(file, fixed, targets); len(again) != 0 {
			t.Fatalf("fixed text still has findings %+v:\n%s", again, fixed)
		}
		out := strings.Split(string(fixed), "\n")
		if len(out) != len(lines)+len(found) {
			t.Fatalf("fix made %d lines from %d with %d findings", len(out), len(lines), len(found))
		}
		at := map[int]bool{}
		for _, fd := range found {
			at[fd.Line] = true
		}
		j := 0
		for i, l := range lines {
			if at[i+1] {
				if !strings.Contains(out[j], Marker) {
					t.Fatalf("no note above rewritten line %d", i+1)
				}
				j++
				if !strings.Contains(out[j], "--server-side") {
					t.Fatalf("line %d not turned into a server-side apply: %q", i+1, out[j])
				}
			} else if out[j] != l {
				t.Fatalf("line %d changed from %q to %q", i+1, l, out[j])
			}
			j++
		}
	})
}
