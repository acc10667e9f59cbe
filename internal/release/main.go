// Command release builds adopt's release artifacts offline, reproducibly:
// for each target a stripped binary (-trimpath, -s -w, no build id) stamped
// with the version, commit and commit date from git; an archive (tar.gz,
// zip for windows) holding it with LICENSE and README.md, entries sorted
// and dated at the commit (SOURCE_DATE_EPOCH); checksums.txt (sha256); and the krew manifest
// plugins/adopt.yaml whose sha256s are the archives'. The same commit gives
// the same bytes. `make release` runs it for all six targets.
//
//	go run ./internal/release -out dist [-targets linux/amd64,...]
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// AllTargets are the platforms make release builds.
const AllTargets = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"

// DefaultBaseURL is where the archives are published; the krew manifest's
// uris are BaseURL/<version>/<archive>.
const DefaultBaseURL = "https://github.com/adopt-dev/adopt/releases/download"

func main() {
	var o Options
	var targets, epoch string
	flag.StringVar(&o.Out, "out", "dist", "output directory (emptied first)")
	flag.StringVar(&targets, "targets", AllTargets, "comma-separated GOOS/GOARCH list")
	flag.StringVar(&o.Version, "version", "", "version (default: git describe, as semver)")
	flag.StringVar(&o.Commit, "commit", "", "commit (default: git rev-parse HEAD)")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "build date in Unix seconds (default: the commit's date)")
	flag.StringVar(&o.BaseURL, "base-url", DefaultBaseURL, "where the archives are published")
	flag.Parse()
	o.Root = "."
	var err error
	if o.Targets, err = ParseTargets(targets); err == nil {
		err = o.fromGit(context.Background(), epoch)
	}
	var res *Result
	if err == nil {
		res, err = Run(context.Background(), o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, a := range res.Archives {
		fmt.Printf("%s  %s (binary %d bytes)\n", a.SHA256, filepath.Join(o.Out, a.Name), a.BinarySize)
	}
	fmt.Printf("%s\n%s\n", filepath.Join(o.Out, "checksums.txt"), filepath.Join(o.Out, "plugins", "adopt.yaml"))
}

// Target is one GOOS/GOARCH.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// ParseTargets reads "linux/amd64,darwin/arm64".
func ParseTargets(s string) ([]Target, error) {
	var ts []Target
	for _, f := range strings.Split(s, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || goos == "" || arch == "" {
			return nil, fmt.Errorf("target %q: want GOOS/GOARCH", f)
		}
		ts = append(ts, Target{goos, arch})
	}
	return ts, nil
}

// Options are one release build's inputs.
type Options struct {
	Root    string // the repository root (holds go.mod, cmd/adopt, LICENSE, README.md)
	Out     string
	Targets []Target
	Version string // semver, v-prefixed (krew requires it)
	Commit  string
	Date    time.Time
	BaseURL string
	// Env is added to the go build environment (tests set GOCACHE).
	Env []string
}

// fromGit fills what the flags left empty from git.
func (o *Options) fromGit(ctx context.Context, epoch string) error {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", o.Root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	var err error
	if o.Commit == "" {
		if o.Commit, err = git("rev-parse", "HEAD"); err != nil {
			return fmt.Errorf("git rev-parse HEAD: %v (give -commit)", err)
		}
	}
	if epoch == "" {
		if epoch, err = git("log", "-1", "--format=%ct", o.Commit); err != nil {
			return fmt.Errorf("git log: %v (give -source-date-epoch)", err)
		}
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH %q is not Unix seconds", epoch)
	}
	o.Date = time.Unix(sec, 0).UTC()
	if o.Version == "" {
		d, _ := git("describe", "--tags", "--always", "--dirty")
		o.Version = Semver(d, o.Commit, o.Date)
	}
	return nil
}

var semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// Semver is describe when it is a v-prefixed semantic version (a tag, or
// tag-N-gHASH[-dirty]), else a pseudo-version v0.0.0-DATE-COMMIT as Go
// modules have, so krew (which requires semver) takes every build.
func Semver(describe, commit string, date time.Time) string {
	if semverRE.MatchString(describe) {
		return describe
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	v := "v0.0.0-" + date.UTC().Format("20060102150405") + "-" + commit
	if strings.HasSuffix(describe, "-dirty") {
		v += ".dirty"
	}
	return v
}

// Archive is one built archive.
type Archive struct {
	Target     Target
	Name       string
	SHA256     string
	BinarySize int64
}

// Result lists what Run wrote under Options.Out: the archives, and the
// container image of the linux targets (Name "" when none was built).
type Result struct {
	Archives []Archive
	Image    Archive
}

// Run builds every target, then writes checksums.txt and plugins/adopt.yaml.
func Run(ctx context.Context, o Options) (*Result, error) {
	if !semverRE.MatchString(o.Version) {
		return nil, fmt.Errorf("version %q is not a v-prefixed semantic version (krew requires one)", o.Version)
	}
	if _, err := os.Stat(filepath.Join(o.Out, "go.mod")); err == nil || o.Out == "" {
		return nil, fmt.Errorf("output directory %q holds a Go module: give a directory of its own", o.Out)
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(o.Out, "plugins"), 0o755); err != nil {
		return nil, err
	}
	var docs []entry
	for _, name := range DocFiles() {
		b, err := os.ReadFile(filepath.Join(o.Root, name))
		if err != nil {
			return nil, err
		}
		docs = append(docs, entry{name, 0o644, b})
	}
	res := &Result{}
	bins := map[Target][]byte{}
	for _, t := range o.Targets {
		bin, err := buildBinary(ctx, o, t)
		if err != nil {
			return nil, err
		}
		bins[t] = bin
		a, err := writeArchive(o, t, bin, docs)
		if err != nil {
			return nil, err
		}
		res.Archives = append(res.Archives, a)
	}
	var err error
	if res.Image, err = writeImage(o, bins); err != nil {
		return nil, err
	}
	sums := append([]Archive(nil), res.Archives...)
	if res.Image.Name != "" {
		sums = append(sums, res.Image)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Name < sums[j].Name })
	var b strings.Builder
	for _, a := range sums {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.Name)
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, "checksums.txt"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	m, err := KrewManifest(o, res.Archives)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, "plugins", "adopt.yaml"), m, 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// DocFiles go into every archive next to the binary, and krew installs
// them with it (krew's validator requires a LICENSE among them).
func DocFiles() []string { return []string{"LICENSE", "README.md"} }

func binName(t Target) string {
	if t.OS == "windows" {
		return "adopt.exe"
	}
	return "adopt"
}

// LDFlags are the linker flags of a release binary.
func LDFlags(o Options) string {
	return strings.Join([]string{"-s", "-w", "-buildid=",
		"-X", "main.version=" + o.Version,
		"-X", "main.commit=" + o.Commit,
		"-X", "main.date=" + o.Date.Format(time.RFC3339)}, " ")
}

func buildBinary(ctx context.Context, o Options, t Target) ([]byte, error) {
	dir := filepath.Join(o.Out, "build", t.OS+"-"+t.Arch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := filepath.Abs(filepath.Join(dir, binName(t)))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", LDFlags(o), "-o", out, "./cmd/adopt")
	cmd.Dir = o.Root
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch, "GOFLAGS=-mod=readonly"), o.Env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", t, err, b)
	}
	return os.ReadFile(out)
}

// ArchiveName is adopt_<version>_<os>_<arch>.tar.gz (.zip for windows).
func ArchiveName(version string, t Target) string {
	ext := ".tar.gz"
	if t.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("adopt_%s_%s_%s%s", version, t.OS, t.Arch, ext)
}

type entry struct {
	name string
	mode int64
	data []byte
}

func writeArchive(o Options, t Target, bin []byte, docs []entry) (Archive, error) {
	entries := append([]entry{{binName(t), 0o755, bin}}, docs...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	var err error
	if t.OS == "windows" {
		err = writeZip(&buf, entries, o.Date)
	} else {
		err = writeTarGz(&buf, entries, o.Date)
	}
	if err != nil {
		return Archive{}, err
	}
	name := ArchiveName(o.Version, t)
	if err := atomicfile.WriteFile(filepath.Join(o.Out, name), buf.Bytes(), 0o644); err != nil {
		return Archive{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return Archive{Target: t, Name: name, SHA256: hex.EncodeToString(sum[:]), BinarySize: int64(len(bin))}, nil
}

func writeTarGz(w io.Writer, entries []entry, date time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	gz.ModTime = date // the header's own time, not the clock's
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: date, Typeflag: tar.TypeReg, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, entries []entry, date time.Time) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: date}
		h.SetMode(os.FileMode(e.mode))
		f, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// KrewManifest is plugins/adopt.yaml: one platform per archive, selected
// by os and arch, installing the adopt binary as the plugin.
func KrewManifest(o Options, archives []Archive) ([]byte, error) {
	type file struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	type platform struct {
		Selector map[string]map[string]string `json:"selector"`
		URI      string                       `json:"uri"`
		SHA256   string                       `json:"sha256"`
		Files    []file                       `json:"files"`
		Bin      string                       `json:"bin"`
	}
	var ps []platform
	for _, a := range archives {
		files := []file{{From: binName(a.Target), To: "."}}
		for _, d := range DocFiles() {
			files = append(files, file{From: d, To: "."})
		}
		ps = append(ps, platform{
			Selector: map[string]map[string]string{"matchLabels": {"os": a.Target.OS, "arch": a.Target.Arch}},
			URI:      strings.TrimSuffix(o.BaseURL, "/") + "/" + o.Version + "/" + a.Name,
			SHA256:   a.SHA256,
			Files:    files,
			Bin:      binName(a.Target),
		})
	}
	m := map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]any{"name": "adopt"},
		"spec": map[string]any{
			"version":          o.Version,
			"homepage":         "https://github.com/adopt-dev/adopt",
			"shortDescription": "Move hand-applied objects under Argo CD",
			"description": "Finds Kubernetes objects applied by hand that no Argo CD Application\n" +
				"tracks, measures their annotation budget as the API server counts it,\n" +
				"writes Applications for them into the GitOps repo, and after the first\n" +
				"sync removes the stale last-applied annotation and field ownership.\n",
			"caveats": "Run `kubectl adopt plan` first: it is read-only. For shell completion of\n" +
				"`kubectl adopt`, link the plugin as kubectl_complete-adopt on your PATH:\n" +
				"  ln -s \"$(command -v kubectl-adopt)\" \"$(dirname \"$(command -v kubectl-adopt)\")/kubectl_complete-adopt\"\n",
			"platforms": ps,
		},
	}
	return yaml.Marshal(m)
}
