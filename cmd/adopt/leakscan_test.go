package main

// The leak scanner (issue 26): canaries, the forms a canary can take in
// text, a collector that files every text adopt printed or wrote under the
// channel it went out through, a runner that feeds it, and the scan. The
// leak suite (leak_test.go) and the older canary tests (the credential
// test in reliability_canary_test.go, the Helm, hub-and-spoke and
// registered-fleet tests) all use it, the latter through leakScan.
// TestLeakScannerForms and TestLeakSuiteCatchesEachChannel test it.

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	htmltemplate "html/template"
	"io"
	"maps"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// leakChannel is where a text went out: each has a name of its own, so a
// leak says which way it left.
type leakChannel string

const (
	chPlanFile      leakChannel = "plan file"
	chStdout        leakChannel = "stdout"
	chStderr        leakChannel = "stderr"
	chGitObject     leakChannel = "git object"
	chGitRef        leakChannel = "git ref"
	chCommitMessage leakChannel = "commit message"
	chPullRequest   leakChannel = "pull request title/body"
	chJournal       leakChannel = "finalize journal"
	chStatusHistory leakChannel = "status history"
	chSARIF         leakChannel = "SARIF"
	chJUnit         leakChannel = "JUnit"
	chHTML          leakChannel = "HTML report"
	chMetrics       leakChannel = "metrics file"
	chStored        leakChannel = "reconcile's stored plans"
)

// leakChannels are every channel, each of which the suite must collect
// from and the self-test must plant in.
var leakChannels = []leakChannel{chPlanFile, chStdout, chStderr, chGitObject, chGitRef, chCommitMessage, chPullRequest, chJournal, chStatusHistory, chSARIF, chJUnit, chHTML, chMetrics, chStored}

// leakCanary is one secret the suite planted. Value is bytes (a Go
// string may hold any). Lines of a multi-line value are needles of their
// own, since YAML prints such a value as an indented block.
type leakCanary struct {
	Name  string
	Value string
	// Extra are more spellings of the same secret, each searched raw (a
	// number's exponent form, for example).
	Extra []string
	// Random says the value is random from its first byte (not a JWT,
	// whose first bytes every JWT shares), so that its first prefixLen
	// bytes, and those of each line, are needles too: a display that
	// shortens a long value keeps its start.
	Random bool
}

// leakNeedle is one byte string to look for, and what it stands for.
type leakNeedle struct {
	canary, form, text string
}

// prefixLen is how much of a Random canary's start is a needle of its
// own, for values of at least prefixLen+8 bytes.
const prefixLen = 16

// minNeedle is the shortest needle searched: shorter ones (the ends of a
// short canary's shifted base64) could match by chance.
const minNeedle = 8

// canaryNeedles are the forms of c in text: raw, URL-escaped (query and
// path), JSON-escaped, HTML-escaped (html/template's and
// html.EscapeString's), XML-escaped, base64 (standard and URL alphabets,
// padded or not) at every alignment inside a longer encoded text, base64
// of its base64 (a Secret's data is base64 already, and a text that holds
// it may be encoded again), c.Extra, and for a Random canary its first
// bytes and each line of a multi-line value.
func canaryNeedles(c leakCanary) []leakNeedle {
	var out []leakNeedle
	seen := map[string]bool{}
	add := func(form, text string) {
		if len(text) < minNeedle || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, leakNeedle{canary: c.Name, form: form, text: text})
	}
	v := c.Value
	add("raw", v)
	add("URL query-escaped", url.QueryEscape(v))
	add("URL path-escaped", url.PathEscape(v))
	// A binary value too: the encoders write its invalid bytes as U+FFFD
	// and the rest as it is, which is what a leak through them holds.
	b, _ := json.Marshal(v)
	add("JSON-escaped", strings.Trim(string(b), `"`))
	var h strings.Builder
	_ = htmlText.Execute(&h, v)
	add("HTML-escaped", h.String())
	add("HTML-escaped", html.EscapeString(v))
	h.Reset()
	_ = xml.EscapeText(&h, []byte(v))
	add("XML-escaped", h.String())
	// Go's %q (a binary value prints escaped), and hex both ways.
	add("%q-quoted", strings.Trim(strconv.Quote(v), `"`))
	add("hex", hex.EncodeToString([]byte(v)))
	add("HEX", strings.ToUpper(hex.EncodeToString([]byte(v))))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for _, n := range base64Shifts(enc, v) {
			add("base64", n)
			// v anywhere in a text that is base64-encoded again: each
			// alignment of the inner encoding at each outer one.
			for _, nn := range base64Shifts(base64.StdEncoding, n) {
				add("base64 of base64", nn)
			}
		}
		for _, n := range base64Shifts(base64.StdEncoding, enc.EncodeToString([]byte(v))) {
			add("base64 of base64", n)
		}
	}
	shortened := func(form, text string) {
		if c.Random && len(text) >= prefixLen+8 {
			add(form+", shortened", text[:prefixLen])
		}
		// A secret of 16 bytes or more: its end and its middle too (a
		// display may keep either).
		if len(text) >= 2*prefixLen {
			add(form+", its end", text[len(text)-prefixLen:])
			mid := (len(text) - prefixLen) / 2
			add(form+", its middle", text[mid:mid+prefixLen])
		}
	}
	shortened("raw", v)
	// The lines of a value that is not random (a certificate) may be
	// shared with others ("-----BEGIN CERTIFICATE-----").
	if c.Random && strings.Contains(v, "\n") {
		for i, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			add(fmt.Sprintf("line %d", i+1), line)
			shortened(fmt.Sprintf("line %d", i+1), line)
		}
	}
	for i, e := range c.Extra {
		add(fmt.Sprintf("spelling %d", i+1), e)
	}
	return out
}

// htmlText escapes as html/template does in text (+ and quotes too).
var htmlText = htmltemplate.Must(htmltemplate.New("text").Parse("{{.}}"))

// base64Shifts are the parts of s's encoding that do not depend on what
// surrounds s in a longer encoded text: s may start at any of the three
// byte positions of a base64 group. The groups that mix s with its
// neighbours' bytes are left out.
func base64Shifts(enc *base64.Encoding, s string) []string {
	var out []string
	for shift := 0; shift < 3; shift++ {
		b := append(make([]byte, shift), s...)
		e := enc.EncodeToString(b)
		start := 0
		if shift > 0 {
			start = 4 // the first group holds the shift's bytes
		}
		end := len(b) / 3 * 4 // whole groups only
		if end-start >= minNeedle {
			out = append(out, e[start:end])
		}
	}
	return out
}

// leakText is one text and where it was.
type leakText struct {
	channel leakChannel
	where   string
	text    string
}

// leakCollector files every text by channel. Safe for concurrent use.
type leakCollector struct {
	mu    sync.Mutex
	texts []leakText
	// files and dirs are read at the end (collectFiles), so that a journal
	// or a history directory is scanned as the last run left it.
	files map[string]leakChannel
	dirs  map[string]leakChannel
}

func newLeakCollector() *leakCollector {
	return &leakCollector{files: map[string]leakChannel{}, dirs: map[string]leakChannel{}}
}

func (c *leakCollector) add(ch leakChannel, where, text string) {
	if text == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.texts = append(c.texts, leakText{channel: ch, where: where, text: text})
}

// noteFile and noteDir register a file, or every file under a directory,
// to be read by collectFiles.
func (c *leakCollector) noteFile(ch leakChannel, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[path] = ch
}

func (c *leakCollector) noteDir(ch leakChannel, dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirs[dir] = ch
}

// verbOf is the adopt verb in args (the first of plan, apply, finalize,
// status, reconcile).
func verbOf(args []string) string {
	for _, a := range args {
		switch a {
		case "plan", "apply", "finalize", "status", "reconcile":
			return a
		}
	}
	return ""
}

// flagValues returns every value of a flag in args (--name V, --name=V and,
// for a short name, -n V).
func flagValues(args []string, names ...string) []string {
	var out []string
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				out = append(out, args[i+1])
			} else if strings.HasPrefix(a, n+"=") {
				out = append(out, strings.TrimPrefix(a, n+"="))
			}
		}
	}
	return out
}

// streamChannel is where an adopt run's stdout goes: a SARIF log or a
// JUnit report when -o asked for one, else plain stdout.
func streamChannel(args []string) leakChannel {
	o := flagValues(args, "-o", "--output")
	if len(o) > 0 {
		switch o[len(o)-1] {
		case "sarif":
			return chSARIF
		case "junit":
			return chJUnit
		}
	}
	return chStdout
}

// noteOutputs registers the files an adopt run with args writes: plan
// files (--out, every file of --out-dir), the HTML report (--html), the
// status history (--record) and finalize's journal (--journal, else
// <plan>.journal). With onlyExisting (after a run that failed), only those
// that exist.
func (c *leakCollector) noteOutputs(args []string, onlyExisting bool) {
	exists := func(p string) bool {
		_, err := os.Stat(p)
		return !onlyExisting || err == nil
	}
	file := func(ch leakChannel, p string) {
		if exists(p) {
			c.noteFile(ch, p)
		}
	}
	dir := func(ch leakChannel, p string) {
		if exists(p) {
			c.noteDir(ch, p)
		}
	}
	for _, f := range flagValues(args, "--out") {
		file(chPlanFile, f)
	}
	for _, d := range flagValues(args, "--out-dir") {
		dir(chPlanFile, d)
	}
	for _, f := range flagValues(args, "--html") {
		file(chHTML, f)
	}
	for _, d := range flagValues(args, "--record") {
		dir(chStatusHistory, d)
	}
	for _, f := range flagValues(args, "--metrics-file") {
		file(chMetrics, f)
	}
	// reconcile writes a journal only when it finalizes a merged group: its
	// directory is scanned when a run made it.
	for _, d := range flagValues(args, "--journal-dir") {
		if _, err := os.Stat(d); err == nil {
			c.noteDir(chJournal, d)
		}
	}
	if verbOf(args) == "finalize" {
		journals := flagValues(args, "--journal")
		if len(journals) == 0 {
			for _, p := range flagValues(args, "--plan") {
				journals = append(journals, p+".journal")
			}
		}
		for _, j := range journals {
			file(chJournal, j)
		}
	}
}

// collectFiles reads every registered file and every file under every
// registered directory. A registered file that is missing fails the
// test: a channel that was never written proves nothing.
func (c *leakCollector) collectFiles(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	files, dirs := c.files, c.dirs
	c.mu.Unlock()
	for f, ch := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("the %s %s was not written: %v", ch, f, err)
			continue
		}
		c.add(ch, f, string(b))
	}
	for d, ch := range dirs {
		n := 0
		err := filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			c.add(ch, p, string(b))
			n++
			return err
		})
		if err != nil || n == 0 {
			t.Errorf("the %s directory %s: %d files, %v", ch, d, n, err)
		}
	}
}

// addGitRepo decodes every object of the repository at dir (loose or in a
// compressed packfile, reachable or not): blobs, trees and the headers of
// commits and tags as git objects, commit and tag messages as commit
// messages, and every ref (name and target) as git refs.
func (c *leakCollector) addGitRepo(t testing.TB, dir string) {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	objs, err := r.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = objs.ForEach(func(o plumbing.EncodedObject) error {
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return err
		}
		n++
		where := fmt.Sprintf("%s: %s %s", dir, o.Type(), o.Hash())
		raw := string(b)
		if o.Type() == plumbing.CommitObject || o.Type() == plumbing.TagObject {
			// Headers, a blank line, the message.
			head, msg, _ := strings.Cut(raw, "\n\n")
			c.add(chGitObject, where+" (headers)", head)
			c.add(chCommitMessage, where, msg)
			return nil
		}
		c.add(chGitObject, where, raw)
		return nil
	})
	if err != nil {
		t.Fatalf("read the objects of %s: %v", dir, err)
	}
	if n == 0 {
		t.Errorf("%s has no objects", dir)
	}
	refs, err := r.References()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		b.WriteString(ref.String() + "\n")
		return nil
	})
	c.add(chGitRef, dir+": refs", b.String())
}

// giteaRepoDir is where Gitea keeps the admin's repository on disk.
func giteaRepoDir(g *testenv.Gitea, repo string) string {
	return filepath.Join(g.Dir, "repos", strings.ToLower(g.User), strings.ToLower(repo)+".git")
}

// addGiteaPRs adds the title and body of every pull request of the admin's
// repo, as Gitea's API returns them.
func (c *leakCollector) addGiteaPRs(ctx context.Context, t testing.TB, g *testenv.Gitea, repo string) int {
	t.Helper()
	prs, err := g.PullRequests(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs {
		c.add(chPullRequest, fmt.Sprintf("%s pull request #%d", repo, pr.Number), pr.Title+"\n"+pr.Body)
	}
	return len(prs)
}

// addStored adds the records reconcile keeps in namespace ns (ConfigMaps
// labelled app.kubernetes.io/managed-by=adopt: each group's plan), data
// and annotations, and returns how many it read.
func (c *leakCollector) addStored(ctx context.Context, t testing.TB, kube kubernetes.Interface, ns string) int {
	t.Helper()
	cms, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=adopt"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		var b strings.Builder
		for k, v := range cm.Annotations {
			b.WriteString(k + ": " + v + "\n")
		}
		for k, v := range cm.Data {
			b.WriteString(k + ": " + v + "\n")
		}
		c.add(chStored, "ConfigMap "+ns+"/"+cm.Name, b.String())
	}
	return len(cms.Items)
}

// leakFinding is one canary found in one text.
type leakFinding struct {
	canary, form string
	channel      leakChannel
	where        string
}

func (f leakFinding) String() string {
	return fmt.Sprintf("%s (%s) leaked into the %s: %s", f.canary, f.form, f.channel, f.where)
}

// scanLeaks looks for every needle of every canary in every text, one pass
// over each text (needles indexed by their first minNeedle bytes), and
// returns one finding per canary, form and text.
func scanLeaks(canaries []leakCanary, texts []leakText) []leakFinding {
	byPrefix := map[string][]leakNeedle{}
	for _, c := range canaries {
		for _, n := range canaryNeedles(c) {
			byPrefix[n.text[:minNeedle]] = append(byPrefix[n.text[:minNeedle]], n)
		}
	}
	var out []leakFinding
	var all []leakText
	for _, tx := range texts {
		all = append(all, tx)
		all = append(all, decodedVariants(tx)...)
	}
	for _, tx := range all {
		seen := map[[2]string]bool{}
		s := tx.text
		for i := 0; i+minNeedle <= len(s); i++ {
			ns, ok := byPrefix[s[i:i+minNeedle]]
			if !ok {
				continue
			}
			for _, n := range ns {
				k := [2]string{n.canary, n.form}
				if !seen[k] && strings.HasPrefix(s[i:], n.text) {
					seen[k] = true
					out = append(out, leakFinding{canary: n.canary, form: n.form, channel: tx.channel, where: tx.where})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// decodedVariants are the texts a leak may hide in inside tx: the text
// with its line breaks removed (base64 wrapped at 64, 70 or 76 columns),
// and what gzip or zlib data holds, raw or base64-encoded (Helm's
// ConfigMap driver stores a release as base64 of gzip). Each keeps tx's
// channel and says how it was found.
func decodedVariants(tx leakText) []leakText {
	var out []leakText
	if strings.ContainsAny(tx.text, "\r\n") {
		flat := strings.NewReplacer("\r", "", "\n", "").Replace(tx.text)
		out = append(out, leakText{channel: tx.channel, where: tx.where + " (lines joined)", text: flat})
	}
	inflate := func(b []byte) (string, bool) {
		var r io.Reader
		var err error
		switch {
		case len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b:
			r, err = gzip.NewReader(bytes.NewReader(b))
		case len(b) > 2 && b[0] == 0x78 && (b[1] == 0x01 || b[1] == 0x5e || b[1] == 0x9c || b[1] == 0xda):
			r, err = zlib.NewReader(bytes.NewReader(b))
		default:
			return "", false
		}
		if err != nil {
			return "", false
		}
		d, err := io.ReadAll(io.LimitReader(r, 64<<20))
		return string(d), err == nil || len(d) > 0
	}
	if d, ok := inflate([]byte(tx.text)); ok {
		out = append(out, leakText{channel: tx.channel, where: tx.where + " (decompressed)", text: d})
	}
	for _, run := range base64Run.FindAllString(strings.NewReplacer("\r", "", "\n", "").Replace(tx.text), -1) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			b, err := enc.DecodeString(run)
			if err != nil {
				continue
			}
			if d, ok := inflate(b); ok {
				out = append(out, leakText{channel: tx.channel, where: tx.where + " (base64 of compressed data)", text: d})
			}
			break
		}
	}
	return out
}

// base64Run finds base64 text long enough to hold compressed data.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{24,}={0,2}`)

// scan runs scanLeaks over everything collected.
func (c *leakCollector) scan(canaries []leakCanary) []leakFinding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return scanLeaks(canaries, c.texts)
}

// channels lists the channels with texts, and how many bytes each holds.
func (c *leakCollector) channels() map[leakChannel]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[leakChannel]int{}
	for _, tx := range c.texts {
		out[tx.channel] += len(tx.text)
	}
	return out
}

// leakRunner runs adopt in-process and files what each run printed and
// wrote with its collector.
type leakRunner struct {
	col *leakCollector
	// env is adopt's environment in every run, under each run's own.
	env map[string]string
}

// leakRun is one finished run.
type leakRun struct {
	out, errOut string
	code        int
}

// run runs adopt with kubeconfig and args in a subtest named name, with
// env set for that subtest only. Its stdout is filed under the channel
// its -o asks for (SARIF, JUnit or stdout), its stderr under stderr, and
// the files it writes are noted for collectFiles: all of them after a run
// that exits 0, 3 or 4, those that exist after one that failed.
func (r *leakRunner) run(t *testing.T, name, kubeconfig string, env map[string]string, args ...string) leakRun {
	t.Helper()
	var res leakRun
	t.Run(name, func(t *testing.T) {
		own := maps.Clone(r.env)
		if own == nil {
			own = map[string]string{}
		}
		for k, v := range env {
			if k == "PATH" || strings.HasPrefix(k, "SOPS_") {
				// What adopt's child processes (sops) get is the
				// process's environment: a test that sets it is not
				// parallel.
				t.Setenv(k, v)
				continue
			}
			own[k] = v
		}
		var out, errb bytes.Buffer
		res.code = runAdoptEnv(t, own, "adopt", append([]string{"--kubeconfig", kubeconfig}, args...), strings.NewReader(""), &out, &errb)
		res.out, res.errOut = out.String(), errb.String()
	})
	r.col.add(streamChannel(args), name, res.out)
	r.col.add(chStderr, name, res.errOut)
	ok := res.code == 0 || res.code == ExitFindings || res.code == ExitPartial
	r.col.noteOutputs(args, !ok)
	return res
}

// leakPlants are the canaries of one run, by name.
type leakPlants struct {
	list []leakCanary
}

// add registers a canary made by randomWord (random from its first byte)
// and returns its value.
func (p *leakPlants) add(name, value string, extra ...string) string {
	p.list = append(p.list, leakCanary{Name: name, Value: value, Extra: extra, Random: true})
	return value
}

// external registers a secret made elsewhere (a token, a password): it
// may share its first bytes with others of its kind.
func (p *leakPlants) external(name, value string) string {
	p.list = append(p.list, leakCanary{Name: name, Value: value})
	return value
}

// hide replaces each canary's value in text with its name, so a failing
// test's message quotes adopt's output without a planted value.
func (p *leakPlants) hide(text string) string {
	for _, c := range p.list {
		if len(c.Value) >= minNeedle {
			text = strings.ReplaceAll(text, c.Value, "<canary: "+c.Name+">")
		}
	}
	return text
}

// numberForms are the spellings of a decimal integer after a trip through
// a float64 (JSON numbers decode as float64): 8.0123456789e+10 and its
// mantissa.
func numberForms(digits string) []string {
	f, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return nil
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, _, _ := strings.Cut(e, "e")
	return []string{e, strings.Replace(e, "e+", "e", 1), mantissa, strconv.FormatFloat(f, 'E', -1, 64)}
}

// Canaries, fresh from crypto/rand on every run.

const base62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randomFrom(t testing.TB, alphabet string, n int) string {
	t.Helper()
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			t.Fatal(err)
		}
		b[i] = alphabet[k.Int64()]
	}
	return string(b)
}

// randomWord is prefix and n random letters and digits: never a number
// or a boolean to Helm's --set.
func randomWord(t testing.TB, prefix string, n int) string {
	return prefix + randomFrom(t, base62, n)
}

// randomHex is n random lowercase hex digits (usable in object names).
func randomHex(t testing.TB, n int) string { return randomFrom(t, "0123456789abcdef", n) }

// randomDigits is an n-digit decimal number with no leading zero.
func randomDigits(t testing.TB, n int) string {
	return randomFrom(t, "123456789", 1) + randomFrom(t, "0123456789", n-1)
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// leakScan is the older interface of the scanner, kept for the tests that
// name their secrets by hand: texts by where, secrets by name, looked for
// in every form canaryNeedles knows.
type leakScan struct {
	secrets map[string]string // name -> value
	texts   map[string]string // where -> text
}

func (s *leakScan) add(where, text string) { s.texts[where] += text }

// addTree adds every file under dir (a clone's .git included).
func (s *leakScan) addTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		s.add(p, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (s *leakScan) canaries() []leakCanary {
	var out []leakCanary
	for name, v := range s.secrets {
		out = append(out, leakCanary{Name: name, Value: v})
	}
	return out
}

// forms are ways a secret shows up in text: as is, URL-escaped, in base64
// (an Authorization header), and as basic auth with a user. The scanner
// looks for more (canaryNeedles); these are the ones the credential test
// proves it finds.
func forms(user, secret string) []string {
	return []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.StdEncoding.EncodeToString([]byte(user + ":" + secret))}
}

// find names the secrets text holds, in any form.
func (s *leakScan) find(text string) []string {
	var found []string
	seen := map[string]bool{}
	for _, f := range scanLeaks(s.canaries(), []leakText{{text: text}}) {
		if !seen[f.canary] {
			seen[f.canary] = true
			found = append(found, f.canary)
		}
	}
	return found
}

func (s *leakScan) check(t *testing.T) {
	t.Helper()
	var texts []leakText
	for where, text := range s.texts {
		texts = append(texts, leakText{where: where, text: text})
	}
	for _, f := range scanLeaks(s.canaries(), texts) {
		t.Errorf("%s leaked into %s (%s)", f.canary, f.where, f.form)
	}
}

// refNames lists every ref name of a bare repo, for the scan.
func refNames(t *testing.T, bare string) string {
	t.Helper()
	r, err := git.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := r.References()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		b.WriteString(ref.Name().String() + " " + ref.Target().String() + "\n")
		return nil
	})
	return b.String()
}

// TestLeakScannerForms: the scanner finds a canary in each form it claims,
// at every base64 alignment, and nothing in text that lacks it.
func TestLeakScannerForms(t *testing.T) {
	special := leakCanary{Name: "special", Value: randomWord(t, "Fm", 12) + "@:/?&=+ %<'\"" + randomWord(t, "", 12), Random: true}
	multi := leakCanary{Name: "multi", Value: randomWord(t, "", 40) + "\n" + randomWord(t, "", 40) + "\n", Random: true}
	digits := randomDigits(t, 11)
	number := leakCanary{Name: "number", Value: digits, Extra: numberForms(digits)}
	bin := leakCanary{Name: "binary", Value: string(randomBytes(t, 30)), Random: true}
	// A binary value with characters HTML escapes: random bytes alone
	// often need no escaping, and their HTML form is then the raw one.
	binHTML := leakCanary{Name: "binary, HTML-special", Value: string(randomBytes(t, 14)) + "<&'\"" + string(randomBytes(t, 14)), Random: true}
	canaries := []leakCanary{special, multi, number, bin, binHTML}
	pad := func(n int) string { return strings.Repeat("z", n) }
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	type probe struct{ canary, form, text string } // form: one of a|b
	v := special.Value
	probes := []probe{
		{"special", "raw", "x" + v + "x"},
		{"special", "URL query-escaped", "u?p=" + url.QueryEscape(v)},
		{"special", "URL path-escaped", "/" + url.PathEscape(v) + "/"},
		{"special", "HTML-escaped", func() string {
			var b strings.Builder
			_ = htmlText.Execute(&b, v)
			return "<td>" + b.String() + "</td>"
		}()},
		{"special", "XML-escaped|HTML-escaped", func() string {
			var b strings.Builder
			_ = xml.EscapeText(&b, []byte(v))
			return "<system-out>" + b.String() + "</system-out>"
		}()},
		{"special", "raw, shortened", "value: " + v[:prefixLen+4] + "…"},
		{"multi", "JSON-escaped", func() string { b, _ := json.Marshal(map[string]string{"k": multi.Value}); return string(b) }()},
		{"multi", "line 2", "k: |\n  " + strings.ReplaceAll(multi.Value, "\n", "\n  ")},
		{"number", "spelling 1", "n: " + numberForms(digits)[0]},
		{"number", "raw", "port: " + digits},
		// Issue 36: hex, Go's %q of a binary value, a secret's end and
		// middle, compressed data raw and as base64 (Helm's ConfigMap
		// driver: base64 of gzip).
		{"special", "hex", "sum " + hex.EncodeToString([]byte(v))},
		{"special", "HEX", "SUM " + strings.ToUpper(hex.EncodeToString([]byte(v)))},
		{"binary", "%q-quoted", fmt.Sprintf("value %q", bin.Value)},
		{"binary", "hex", "0x" + hex.EncodeToString([]byte(bin.Value))},
		{"special", "raw, its end", "…" + v[len(v)-prefixLen:]},
		{"special", "raw, its middle", "…" + v[(len(v)-prefixLen)/2:(len(v)-prefixLen)/2+prefixLen] + "…"},
		{"special", "raw", compressed(t, "gzip", "release: "+v)},
		{"special", "raw", compressed(t, "zlib", "release: "+v)},
		{"special", "raw", "release: " + b64(base64.StdEncoding, compressed(t, "gzip", `{"config":{"password":"`+v+`"}}`))},
		{"binary", "JSON-escaped", func() string { b, _ := json.Marshal(map[string]string{"k": bin.Value}); return string(b) }()},
		{"binary, HTML-special", "HTML-escaped", func() string {
			var b strings.Builder
			_ = htmlText.Execute(&b, binHTML.Value)
			return "<td>" + b.String() + "</td>"
		}()},
	}
	for shift := 0; shift < 3; shift++ {
		probes = append(probes,
			probe{"special", "base64", b64(base64.StdEncoding, pad(shift)+v+"tail")},
			probe{"special", "base64", b64(base64.RawURLEncoding, pad(shift)+v)},
			probe{"special", "base64 of base64", b64(base64.StdEncoding, pad(shift)+b64(base64.StdEncoding, v)+"tail")},
			probe{"number", "base64", "Authorization: Basic " + b64(base64.StdEncoding, pad(shift)+"user:"+digits)},
			// base64 wrapped at 70 and 76 columns
			probe{"special", "base64", wrapAt(b64(base64.StdEncoding, pad(shift)+v+strings.Repeat("t", 90)), 70)},
			probe{"special", "base64", wrapAt(b64(base64.StdEncoding, pad(shift)+v+strings.Repeat("t", 90)), 76)},
			probe{"special", "base64", wrapAt(b64(base64.StdEncoding, pad(40+shift)+v+strings.Repeat("t", 90)), 70)},
			probe{"special", "base64", wrapAt(b64(base64.StdEncoding, pad(40+shift)+v+strings.Repeat("t", 90)), 76)},
		)
		for outer := 0; outer < 3; outer++ {
			// base64 of base64, the canary at any offset of the inner text
			probes = append(probes, probe{"special", "base64 of base64", b64(base64.StdEncoding, pad(outer)+b64(base64.StdEncoding, pad(shift)+v+"tail")+"tail")})
		}
	}
	for i, p := range probes {
		found := false
		for _, f := range scanLeaks(canaries, []leakText{{channel: chStdout, where: fmt.Sprint("probe ", i), text: p.text}}) {
			w := fmt.Sprint("probe ", i)
			if f.canary == p.canary && strings.Contains("|"+p.form+"|", "|"+f.form+"|") && f.channel == chStdout && (f.where == w || strings.HasPrefix(f.where, w+" (")) {
				found = true
			}
		}
		if !found {
			t.Errorf("probe %d: %s in the form %q was not found in a text of %d bytes", i, p.canary, p.form, len(p.text))
		}
	}
	noise := base64.StdEncoding.EncodeToString(randomBytes(t, 1<<20))
	for _, text := range []string{noise, v[:prefixLen-1], digits[1:], b64(base64.StdEncoding, v[:len(v)/2]), multi.Value[:prefixLen-1]} {
		if f := scanLeaks(canaries, []leakText{{text: text}}); len(f) > 0 {
			t.Errorf("found in text without the canary: %v", f)
		}
	}
}

// compressed is s compressed with gzip or zlib.
func compressed(t *testing.T, how, s string) string {
	var b bytes.Buffer
	var w io.WriteCloser = gzip.NewWriter(&b)
	if how == "zlib" {
		w = zlib.NewWriter(&b)
	}
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wrapAt breaks s into lines of n characters, as base64 tools wrap.
func wrapAt(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return b.String() + s
}

// TestLeakSuiteCatchesEachChannel plants one canary in each channel, the
// way the suite meets it (a real adopt run's stdout, stderr, SARIF and
// JUnit; the files an adopt run names, reconcile's metrics file and
// journal directory among them; reconcile's stored plans in the cluster;
// a blob, a commit message and a ref
// in a bare repository whose objects are all packed; a pull request on
// the real Gitea), collects with the suite's collector and proves the scan
// reports that canary in exactly its channel.
func TestLeakSuiteCatchesEachChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	giteaUp := giteaInBackground(ctx, t)

	col := newLeakCollector()
	r := &leakRunner{col: col}
	plants := &leakPlants{}
	want := map[string]leakChannel{}
	probe := func(ch leakChannel, what string) string {
		name := string(ch) + ": " + what
		want[name] = ch
		return plants.add(name, "leak"+randomHex(t, 24))
	}
	apply := func(obj string) {
		t.Helper()
		if out, err := cp.Kubectl(ctx, []byte(obj), "apply", "-f", "-"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}

	// Streams of real adopt runs.
	nsOut, nsSARIF, nsJUnit := cp.Namespace(t), cp.Namespace(t), cp.Namespace(t)
	apply(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: v}\n", probe(chStdout, "a ConfigMap's name in plan -o json"), nsOut))
	apply(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData: {k: v}\n", probe(chSARIF, "a Secret's name in plan -o sarif"), nsSARIF))
	apply(fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\nstringData: {k: v}\n", probe(chJUnit, "a Secret's name in plan -o junit"), nsJUnit))
	if res := r.run(t, "plan -o json", cp.Kubeconfig, nil, "plan", "-n", nsOut, "-o", "json", "-q"); res.code != 0 {
		t.Fatalf("plan -o json: exit %d: %s", res.code, res.errOut)
	}
	if res := r.run(t, "plan -o sarif", cp.Kubeconfig, nil, "plan", "-n", nsSARIF, "-o", "sarif", "-q"); res.code != 0 {
		t.Fatalf("plan -o sarif: exit %d: %s", res.code, res.errOut)
	}
	if res := r.run(t, "plan -o junit", cp.Kubeconfig, nil, "plan", "-n", nsJUnit, "-o", "junit", "-q"); res.code != 0 {
		t.Fatalf("plan -o junit: exit %d: %s", res.code, res.errOut)
	}
	if res := r.run(t, "plan with an unknown flag", cp.Kubeconfig, nil, "plan", "-n", nsOut, "--"+probe(chStderr, "an unknown flag, quoted in the error")); res.code != ExitUsage {
		t.Fatalf("plan with an unknown flag: exit %d: %s", res.code, res.errOut)
	}

	// Files, registered from the flags of the runs that write them.
	dir := t.TempDir()
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	planPath, journalPlan := filepath.Join(dir, "plan.yaml"), filepath.Join(dir, "fin.yaml")
	history, html := filepath.Join(dir, "history"), filepath.Join(dir, "status.html")
	write(planPath, "kind: AdoptionPlan\nnote: "+probe(chPlanFile, "a plan file")+"\n")
	write(journalPlan+".journal", `{"object":"`+probe(chJournal, "a journal line")+`"}`+"\n")
	write(filepath.Join(history, "status-20260101T000000Z.json"), `{"note":"`+probe(chStatusHistory, "a snapshot")+`"}`)
	write(html, "<p>"+probe(chHTML, "an HTML report")+"</p>")
	metrics, journals := filepath.Join(dir, "adopt.prom"), filepath.Join(dir, "journals")
	write(metrics, `adopt_untracked_objects{note="`+probe(chMetrics, "a metrics file")+`"} 1`+"\n")
	write(filepath.Join(journals, "adopt_c_app.journal"), `{"object":"`+probe(chJournal, "a journal in reconcile's --journal-dir")+`"}`+"\n")
	col.noteOutputs([]string{"plan", "--out", planPath, "-o", "sarif"}, false)
	col.noteOutputs([]string{"finalize", "--plan", journalPlan, "--sync"}, false)
	col.noteOutputs([]string{"status", "--plan", planPath, "--record", history, "--html", html}, false)
	col.noteOutputs([]string{"reconcile", "-A", "--metrics-file", metrics, "--journal-dir", journals}, false)

	// reconcile's stored plans: a ConfigMap of adopt's in the lock
	// namespace.
	nsStore := cp.Namespace(t)
	stored := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adopt-reconcile-0123456789abcdef", Namespace: nsStore,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "adopt"}}, Data: map[string]string{"plan.yaml": "note: " + probe(chStored, "a stored plan") + "\n"}}
	if _, err := cp.Clientset().CoreV1().ConfigMaps(nsStore).Create(ctx, stored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := col.addStored(ctx, t, cp.Clientset(), nsStore); n != 1 {
		t.Fatalf("%d stored records read back, want 1", n)
	}

	// A bare repository: the base64 form (and the base64 of that) in blobs
	// on a side branch, a commit message on another, a ref's name; every
	// object packed and compressed.
	blobProbe := probe(chGitObject, "base64 in a blob on a side branch")
	msgProbe := probe(chCommitMessage, "a commit message on a side branch")
	refProbe := probe(chGitRef, "a branch name")
	bare, work := filepath.Join(dir, "probe.git"), filepath.Join(dir, "work")
	gitCLI := func(in string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=probe", "-c", "user.email=probe@example.invalid"}, args...)...)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	enc := base64.StdEncoding.EncodeToString([]byte(blobProbe))
	write(filepath.Join(work, "README.md"), "clean\n")
	gitCLI(dir, "init", "-q", "--bare", "-b", "main", bare)
	gitCLI(dir, "init", "-q", "-b", "main", work)
	gitCLI(work, "add", "-A")
	gitCLI(work, "commit", "-q", "-m", "seed")
	gitCLI(work, "checkout", "-q", "-b", "side-blob")
	write(filepath.Join(work, "data.txt"), strings.Repeat("token: "+enc+"\n", 40))
	write(filepath.Join(work, "double.txt"), "data: "+base64.StdEncoding.EncodeToString([]byte(enc))+"\n")
	gitCLI(work, "add", "-A")
	gitCLI(work, "commit", "-q", "-m", "data")
	gitCLI(work, "checkout", "-q", "-b", "side-message", "main")
	write(filepath.Join(work, "other.txt"), "clean\n")
	gitCLI(work, "add", "-A")
	gitCLI(work, "commit", "-q", "-m", "note "+msgProbe)
	gitCLI(work, "branch", refProbe, "main")
	gitCLI(work, "push", "-q", bare, "--all")
	gitCLI(bare, "repack", "-a", "-d", "-q")
	gitCLI(bare, "prune-packed")
	packs, _ := filepath.Glob(filepath.Join(bare, "objects", "pack", "*.pack"))
	if len(packs) == 0 {
		t.Fatal("no packfile in the probe repository")
	}
	for _, pk := range packs {
		b, _ := os.ReadFile(pk)
		if bytes.Contains(b, []byte(enc)) || bytes.Contains(b, []byte(msgProbe)) {
			t.Fatalf("%s holds a probe uncompressed: the test would not prove that objects are decoded", pk)
		}
	}
	col.addGitRepo(t, bare)

	// A pull request on the real Gitea, its title and body holding probes;
	// its repository is scanned too, and holds neither.
	g := giteaUp()
	probeRepo := giteaName(t, "probe")
	cloneURL, err := g.CreateRepo(ctx, probeRepo)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PushBranch(ctx, cloneURL, "side", map[string]string{"x.txt": "clean\n"}); err != nil {
		t.Fatal(err)
	}
	client, err := gitea.NewClient(g.URL, gitea.SetToken(g.Token), gitea.SetGiteaVersion(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.CreatePullRequest(g.User, probeRepo, gitea.CreatePullRequestOption{Head: "side", Base: "main",
		Title: "adopt " + probe(chPullRequest, "a pull request's title"), Body: "Objects:\n\n" + probe(chPullRequest, "a pull request's body") + "\n"}); err != nil {
		t.Fatal(err)
	}
	if n := col.addGiteaPRs(ctx, t, g, probeRepo); n != 1 {
		t.Fatalf("%d pull requests read back, want 1", n)
	}
	col.addGitRepo(t, giteaRepoDir(g, probeRepo))
	col.collectFiles(t)

	got := map[string]map[leakChannel]bool{}
	forms := map[string]bool{}
	for _, f := range col.scan(plants.list) {
		if got[f.canary] == nil {
			got[f.canary] = map[leakChannel]bool{}
		}
		got[f.canary][f.channel] = true
		if f.channel == chGitObject {
			forms[f.form] = true
		}
	}
	covered := map[leakChannel]bool{}
	for name, ch := range want {
		covered[ch] = true
		if len(got[name]) != 1 || !got[name][ch] {
			t.Errorf("%s: found in %v, want exactly the %s", name, got[name], ch)
		}
	}
	if !forms["base64"] || !forms["base64 of base64"] {
		t.Errorf("the blobs' probe was found in the forms %v, want base64 and base64 of base64", forms)
	}
	for _, ch := range leakChannels {
		if !covered[ch] {
			t.Errorf("no probe for the %s channel", ch)
		}
	}
}

// giteaInBackground starts the package's shared Gitea (sharedGitea), if it
// is not up yet, while the caller starts its other parts; the function it
// returns waits for it and fails the test (never a skip) when it did not
// start.
func giteaInBackground(ctx context.Context, t *testing.T) func() *testenv.Gitea {
	sharedGitea.once.Do(func() {
		sharedGitea.up = make(chan struct{})
		go func() {
			defer close(sharedGitea.up)
			sharedGitea.g, sharedGitea.err = testenv.StartGitea(context.Background())
		}()
	})
	return func() *testenv.Gitea {
		t.Helper()
		select {
		case <-sharedGitea.up:
		case <-ctx.Done():
			t.Fatalf("the real Gitea did not start: %v", ctx.Err())
		}
		if sharedGitea.err != nil {
			t.Fatalf("the real Gitea did not start: %v", sharedGitea.err)
		}
		return sharedGitea.g
	}
}

// giteaName is base with a random suffix, for a repository or token on the
// shared Gitea: it outlives the test, so a second run in the same process
// (-count=2) would otherwise meet the first's name and be refused.
func giteaName(t testing.TB, base string) string { return base + "-" + randomHex(t, 8) }

// sharedGitea is the real Gitea the package's tests share (a start costs
// seconds): started on first use, in the background, and stopped when the
// tests end. Each test works in repositories of its own names (giteaName).
var sharedGitea struct {
	once sync.Once
	up   chan struct{}
	g    *testenv.Gitea
	err  error
}

// stopSharedGitea stops the shared Gitea (TestMain, after the tests).
func stopSharedGitea() {
	if sharedGitea.up == nil {
		return
	}
	<-sharedGitea.up
	if sharedGitea.g != nil {
		sharedGitea.g.Stop()
	}
}
