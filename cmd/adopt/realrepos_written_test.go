package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var upstreamClones = flag.String("upstream", "", "fixture=git-dir,...: rewrite the upstream fingerprints of TestRealRepoFixturesWrittenHere from clones of the repos the fixtures model")

// fingerprintRun is how many lines in a row a fixture file may not share
// with the upstream repo it models (issue 46).
const fingerprintRun = 8

// upstreamReadme is the first line of a fixture's README.md: the repo and
// the commit it models.
var upstreamReadme = regexp.MustCompile(`^Modelled on ([\w.-]+/[\w.-]+) at ([0-9a-f]{7,40})\b`)

// TestRealRepoFixturesWrittenHere (issue 46, fixtures written here): a
// fixture modelled on a public repo takes its layout and its kustomize and
// Helm features, never its files. No fixture file equals an upstream file,
// or shares a run of fingerprintRun lines (blank lines left out, each line
// trimmed) with one, in the upstream's directories the fixture models.
// The upstream text is not kept here: testdata/realrepos/<fixture>.upstream
// holds hashes only, written from a clone with
//
//	go test ./cmd/adopt -run TestRealRepoFixturesWrittenHere -upstream example-apps=/path/to/clone/.git,...
//
// at the commit the fixture's README names.
func TestRealRepoFixturesWrittenHere(t *testing.T) {
	// cmd/adopt's fixtures, and the planner's (its tests plan them on the
	// package's own control plane).
	roots := []string{filepath.Join("testdata", "realrepos"), filepath.Join("..", "..", "adopt", "planner", "testdata", "realrepos")}
	n := 0
	for _, root := range roots {
		n += checkFixturesWrittenHere(t, root)
	}
	if n == 0 {
		t.Fatal("no fixture in " + strings.Join(roots, ", "))
	}
}

// checkFixturesWrittenHere checks every fixture under root and returns
// how many there are.
func checkFixturesWrittenHere(t *testing.T, root string) int {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	clones := map[string]string{}
	if *upstreamClones != "" {
		for _, kv := range strings.Split(*upstreamClones, ",") {
			name, dir, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("-upstream %q: want fixture=git-dir", kv)
			}
			clones[name] = dir
		}
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatalf("every fixture names the repo it models: %v", err)
			}
			m := upstreamReadme.FindStringSubmatch(string(readme))
			if m == nil {
				t.Fatalf("%s/README.md does not start with \"Modelled on <owner>/<repo> at <commit>\"", dir)
			}
			fixture, err := fixtureFiles(dir)
			if err != nil {
				t.Fatal(err)
			}
			fpFile := filepath.Join(root, name+".upstream")
			if clone, ok := clones[name]; ok {
				fp, err := fingerprintUpstream(clone, m[2], fixtureTops(fixture))
				if err != nil {
					t.Fatal(err)
				}
				fp.repo, fp.commit = m[1], m[2]
				if err := os.WriteFile(fpFile, []byte(fp.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fp, err := readFingerprints(fpFile)
			if err != nil {
				t.Fatalf("%v (write it with -upstream %s=<git dir of a clone of %s>)", err, name, m[1])
			}
			if fp.repo != m[1] || fp.commit != m[2] {
				t.Fatalf("%s is of %s at %s, the README models %s at %s: write it again with -upstream", fpFile, fp.repo, fp.commit, m[1], m[2])
			}
			for _, p := range sortedKeys(fixture) {
				lines := fingerprintLines(fixture[p])
				if up, ok := fp.files[fingerprintHash(lines)]; ok {
					t.Errorf("%s/%s equals upstream %s (%s at %s)", dir, p, up, fp.repo, fp.commit)
					continue
				}
				for i := 0; i+fingerprintRun <= len(lines); i++ {
					if up, ok := fp.windows[fingerprintHash(lines[i:i+fingerprintRun])]; ok {
						t.Errorf("%s/%s shares %d lines from its line %d with upstream %s (%s at %s): write them here", dir, p, fingerprintRun, lines[i].n, up, fp.repo, fp.commit)
						break
					}
				}
			}
		})
	}
	return n
}

// fixtureFiles are the files of a fixture directory, by slash path.
func fixtureFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	return files, err
}

// fixtureTops are the top-level directories of a fixture's files ("" for
// its root): the parts of the upstream repo it models.
func fixtureTops(files map[string]string) map[string]bool {
	tops := map[string]bool{}
	for p := range files {
		top, _, ok := strings.Cut(p, "/")
		if !ok {
			top = ""
		}
		tops[top] = true
	}
	return tops
}

type fpLine struct {
	text string
	n    int // 1-based line number in the file
}

// fingerprintLines are a file's lines as they are compared: trimmed, and
// blank ones left out, so that indenting or spacing a copy again does not
// hide it.
func fingerprintLines(s string) []fpLine {
	var out []fpLine
	for i, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, fpLine{l, i + 1})
		}
	}
	return out
}

func fingerprintHash(lines []fpLine) string {
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l.text))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// fingerprints are an upstream repo's files as hashes: each whole file's
// and each run of fingerprintRun lines', with where it is (path or
// path:line) for the message.
type fingerprints struct {
	repo, commit   string
	files, windows map[string]string
}

func (f *fingerprints) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Hashes of %s at %s (no text of it): each file's, then each run of %d\n", f.repo, f.commit, fingerprintRun)
	b.WriteString("# trimmed non-blank lines', for TestRealRepoFixturesWrittenHere (realrepos_written_test.go).\n")
	fmt.Fprintf(&b, "repo %s\ncommit %s\n", f.repo, f.commit)
	for _, h := range sortedKeys(f.files) {
		fmt.Fprintf(&b, "file %s %s\n", h, f.files[h])
	}
	for _, h := range sortedKeys(f.windows) {
		fmt.Fprintf(&b, "run %s %s\n", h, f.windows[h])
	}
	return b.String()
}

func readFingerprints(file string) (*fingerprints, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f := &fingerprints{files: map[string]string{}, windows: map[string]string{}}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 3)
		switch {
		case fields[0] == "" || strings.HasPrefix(fields[0], "#"):
		case fields[0] == "repo" && len(fields) == 2:
			f.repo = fields[1]
		case fields[0] == "commit" && len(fields) == 2:
			f.commit = fields[1]
		case fields[0] == "file" && len(fields) == 3:
			f.files[fields[1]] = fields[2]
		case fields[0] == "run" && len(fields) == 3:
			f.windows[fields[1]] = fields[2]
		default:
			return nil, fmt.Errorf("%s: bad line %q", file, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if f.repo == "" || f.commit == "" || len(f.files) == 0 {
		return nil, fmt.Errorf("%s: no repo, commit or file", file)
	}
	return f, nil
}

// fingerprintUpstream hashes the text files of the clone at gitDir, at
// commit, under the top-level directories tops ("" the root's own files).
// Files of more than 2000 lines (vendored installs) are left out.
func fingerprintUpstream(gitDir, commit string, tops map[string]bool) (*fingerprints, error) {
	out, err := exec.Command("git", "-C", gitDir, "ls-tree", "-r", "-z", "--name-only", commit).Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-tree %s in %s: %w", commit, gitDir, err)
	}
	f := &fingerprints{files: map[string]string{}, windows: map[string]string{}}
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		top, _, ok := strings.Cut(p, "/")
		if !ok {
			top = ""
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".tpl", ".txt", ".md", ".json", ".jsonnet", ".libsonnet", "":
		default:
			continue
		}
		if !tops[top] {
			continue
		}
		b, err := exec.Command("git", "-C", gitDir, "show", commit+":"+p).Output()
		if err != nil {
			return nil, fmt.Errorf("git show %s:%s: %w", commit, p, err)
		}
		if strings.IndexByte(string(b), 0) >= 0 {
			continue
		}
		lines := fingerprintLines(string(b))
		if len(lines) == 0 || len(lines) > 2000 {
			continue
		}
		f.files[fingerprintHash(lines)] = p
		for i := 0; i+fingerprintRun <= len(lines); i++ {
			h := fingerprintHash(lines[i : i+fingerprintRun])
			if _, seen := f.windows[h]; !seen {
				f.windows[h] = fmt.Sprintf("%s:%d", p, lines[i].n)
			}
		}
	}
	return f, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
