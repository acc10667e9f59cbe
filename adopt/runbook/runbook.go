// Package runbook finds the runbooks that still tell a person to apply an
// adopted manifest by hand (kubectl apply/create/replace naming the file or
// its directory, in Markdown and shell files), and rewrites those lines to
// say which Argo CD Application owns the object now and to use server-side
// apply where a manual apply stays documented. It works on file contents
// handed to it; it reads and writes nothing itself.
package runbook

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Marker starts the note --fix-runbooks adds above a rewritten line; a line
// under it is not reported again.
const Marker = "Managed by the Argo CD Application"

// Target is an adopted manifest in the repo and the Application owning it.
type Target struct {
	// Path is slash-separated and relative to the repository root.
	Path string
	App  string
}

// Finding is one runbook line that applies an adopted file by hand.
type Finding struct {
	File     string
	Line     int // 1-based
	Text     string
	Manifest string
	App      string
}

// String is "file:line: this runbook still applies an adopted file by hand".
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: this runbook still applies an adopted file by hand (%s, now managed by Application %s)", f.File, f.Line, f.Manifest, f.App)
}

// IsRunbook reports whether a repo file is scanned: Markdown or shell.
func IsRunbook(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".md", ".markdown", ".sh", ".bash":
		return true
	}
	return false
}

var kubectlVerb = regexp.MustCompile(`\bkubectl\b(?:\s+[^|;&]*?)?\s(apply|create|replace)\b`)

// Scan returns the lines of file that apply one of the targets by hand.
func Scan(file string, content []byte, targets []Target) []Finding {
	var out []Finding
	lines := strings.Split(string(content), "\n")
	for i, line := range lines {
		if !kubectlVerb.MatchString(line) {
			continue
		}
		if i > 0 && strings.Contains(lines[i-1], Marker) {
			continue
		}
		for _, arg := range fileArgs(line) {
			if t, ok := match(file, arg, targets); ok {
				out = append(out, Finding{File: file, Line: i + 1, Text: strings.TrimSpace(line), Manifest: t.Path, App: t.App})
				break
			}
		}
	}
	return out
}

// fileArgs extracts the values of -f/--filename/-k/--kustomize.
func fileArgs(line string) []string {
	fields := strings.Fields(line)
	for i := range fields {
		fields[i] = strings.TrimRight(strings.Trim(fields[i], "`\"'("), "`\"'.,;:)")
	}
	var out []string
	for i, f := range fields {
		switch {
		case f == "-f" || f == "--filename" || f == "-k" || f == "--kustomize":
			if i+1 < len(fields) {
				out = append(out, fields[i+1])
			}
		case strings.HasPrefix(f, "--filename="), strings.HasPrefix(f, "--kustomize="), strings.HasPrefix(f, "-f="), strings.HasPrefix(f, "-k="):
			out = append(out, f[strings.Index(f, "=")+1:])
		}
	}
	return out
}

// match resolves arg relative to the repo root and to the runbook's own
// directory, and compares it with each target's path and directory.
func match(file, arg string, targets []Target) (Target, bool) {
	arg = strings.TrimSuffix(strings.TrimPrefix(arg, "./"), "/")
	if arg == "" || arg == "-" {
		return Target{}, false
	}
	cands := []string{path.Clean(arg), path.Join(path.Dir(file), arg)}
	for _, t := range targets {
		dir := path.Dir(t.Path)
		for _, c := range cands {
			if c == t.Path || c == dir || strings.HasSuffix(c, "/"+t.Path) || strings.HasSuffix(c, "/"+dir) {
				return t, true
			}
		}
	}
	return Target{}, false
}

// Fix rewrites the finding lines of one file: a note above names the
// Application that owns the object now, and the command becomes
// `kubectl apply --server-side`. Lines already fixed are left alone.
func Fix(content []byte, findings []Finding, planID string) []byte {
	if len(findings) == 0 {
		return content
	}
	at := map[int]Finding{}
	for _, f := range findings {
		at[f.Line] = f
	}
	markdown := strings.HasSuffix(strings.ToLower(findings[0].File), ".md") || strings.HasSuffix(strings.ToLower(findings[0].File), ".markdown")
	var b bytes.Buffer
	inFence := false
	lines := strings.Split(string(content), "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		f, ok := at[i+1]
		if ok {
			indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			note := fmt.Sprintf("%s %q since adopt plan %s: change %s in Git and let Argo CD sync it. If you must apply by hand, use server-side apply:", Marker, f.App, planID, f.Manifest)
			if markdown && !inFence {
				fmt.Fprintf(&b, "%s> %s\n", indent, note)
			} else {
				fmt.Fprintf(&b, "%s# %s\n", indent, note)
			}
			line = serverSide(line)
		}
		b.WriteString(line)
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

var verb = regexp.MustCompile(`\b(kubectl\b(?:\s+[^|;&]*?)?\s)(apply|create|replace)\b`)

// serverSide turns a client-side apply, create or replace into a
// server-side apply.
func serverSide(line string) string {
	if strings.Contains(line, "--server-side") {
		return line
	}
	return verb.ReplaceAllString(line, "${1}apply --server-side")
}
