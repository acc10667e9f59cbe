package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/adopt-dev/adopt/internal/testenv"
)

// cp is the package's real control plane, started once in TestMain.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) {
	testenv.Main(m, func(c *testenv.ControlPlane) { cp = c })
}

func TestSemver(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]string{
		"v1.2.3":                  "v1.2.3",
		"v1.2.3-4-gabcdef0":       "v1.2.3-4-gabcdef0",
		"v1.2.3-4-gabcdef0-dirty": "v1.2.3-4-gabcdef0-dirty",
		"6ecb4d5":                 "v0.0.0-20260102030405-6ecb4d5b7a2c",
		"6ecb4d5-dirty":           "v0.0.0-20260102030405-6ecb4d5b7a2c.dirty",
		"1.2.3":                   "v0.0.0-20260102030405-6ecb4d5b7a2c",
	} {
		if got := Semver(in, "6ecb4d5b7a2c0123456789", date); got != want {
			t.Errorf("Semver(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReleaseLinuxAmd64 is make release for one target, as make test runs
// it: built twice into two directories, byte for byte the same; stripped,
// trimmed, without a build id and stamped; checksums.txt and the krew
// manifest naming the archive's sha256; the manifest passes krew's own
// validator; the real krew installs the archive with the real kubectl; and
// `kubectl adopt plan` runs against the test control plane.
func TestReleaseLinuxAmd64(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	target := Target{"linux", "amd64"}
	dirs := []string{t.TempDir(), t.TempDir()}
	// The manifest's uris point at a local server holding the first build's
	// archives, as the releases page will, so krew's validator can download
	// and install them.
	base := Options{Root: root, Targets: []Target{target}}
	if err := base.fromGit(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/"+base.Version, http.FileServer(http.Dir(filepath.Join(dirs[0], "dist")))))
	defer srv.Close()
	base.BaseURL = srv.URL
	var res []*Result
	for i, d := range dirs {
		o := base
		o.Out = filepath.Join(d, "dist")
		start := time.Now()
		r, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("build %d: %s, binary %d bytes", i+1, time.Since(start).Round(time.Second), r.Archives[0].BinarySize)
		res = append(res, r)
	}
	dist := filepath.Join(dirs[0], "dist")
	archive := filepath.Join(dist, ArchiveName(base.Version, target))
	manifest := filepath.Join(dist, "plugins", "adopt.yaml")

	// Reproducible: every artifact, byte for byte.
	for _, rel := range []string{ArchiveName(base.Version, target), ImageName(base.Version), "checksums.txt", "plugins/adopt.yaml", "build/linux-amd64/adopt"} {
		a, errA := os.ReadFile(filepath.Join(dirs[0], "dist", rel))
		b, errB := os.ReadFile(filepath.Join(dirs[1], "dist", rel))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", rel, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of the same commit", rel)
		}
	}

	// checksums.txt and the manifest name the archive's sha256.
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	sums, _ := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	image, err := os.ReadFile(filepath.Join(dist, ImageName(base.Version)))
	if err != nil {
		t.Fatal(err)
	}
	isum := sha256.Sum256(image)
	if want := hexsum + "  " + filepath.Base(archive) + "\n" + hex.EncodeToString(isum[:]) + "  " + ImageName(base.Version) + "\n"; string(sums) != want {
		t.Errorf("checksums.txt %q, want the archive's and the image's sha256s:\n%s", sums, want)
	}
	built, err := os.ReadFile(filepath.Join(dist, "build/linux-amd64/adopt"))
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, image, built)
	var m struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				SHA256 string `json:"sha256"`
				URI    string `json:"uri"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	mb, _ := os.ReadFile(manifest)
	if err := yaml.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Spec.Platforms) != 1 || m.Spec.Platforms[0].SHA256 != hexsum || m.Spec.Version != base.Version ||
		!strings.HasSuffix(m.Spec.Platforms[0].URI, "/"+base.Version+"/"+filepath.Base(archive)) {
		t.Errorf("manifest %+v, want the archive's sha256 %s and version %s", m.Spec, hexsum, base.Version)
	}

	// The archive: sorted entries dated at the commit, the binary executable,
	// the LICENSE the repository's.
	bin := checkArchive(t, data, base.Date, root)

	// The binary: stamped, trimmed, stripped, no build id.
	binPath := filepath.Join(t.TempDir(), "adopt")
	if err := os.WriteFile(binPath, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binPath, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version, Commit, Date, Platform string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != base.Version || v.Commit != base.Commit || v.Date != base.Date.Format(time.RFC3339) || v.Platform != "linux/amd64" {
		t.Errorf("adopt version -o json: %s, want %s %s %s", out, base.Version, base.Commit, base.Date.Format(time.RFC3339))
	}
	info, err := exec.Command("go", "version", "-m", binPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-trimpath=true", "CGO_ENABLED=0"} {
		if !bytes.Contains(info, []byte(want)) {
			t.Errorf("go version -m lacks %q:\n%s", want, info)
		}
	}
	if id, err := exec.Command("go", "tool", "buildid", binPath).Output(); err != nil || strings.TrimSpace(string(id)) != "" {
		t.Errorf("build id %q (%v), want none", id, err)
	}
	if bytes.Contains(bin, []byte(root+"/")) {
		t.Errorf("the binary holds the build directory %s", root)
	}
	ef, err := elf.Open(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if ef.Section(".symtab") != nil || ef.Section(".debug_info") != nil {
		t.Error("the binary has a symbol table or DWARF: not stripped")
	}
	ef.Close()

	krewDir, err := testenv.KrewBinaries()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	krewRoot := filepath.Join(home, ".krew")
	pathDir := filepath.Join(home, "path")
	if err := os.MkdirAll(pathDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(krewDir, "krew"), filepath.Join(pathDir, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	// krew's own validator in full: structure and selectors, then for each
	// platform `kubectl krew install --manifest` (downloading the uri,
	// checking the sha256) and a LICENSE among the installed files.
	validate := func(path string) (string, error) {
		cmd := exec.Command(filepath.Join(krewDir, "validate-krew-manifest"), "-manifest", path)
		cmd.Env = []string{"PATH=" + strings.Join([]string{pathDir, cp.Bin, "/usr/bin", "/bin"}, string(os.PathListSeparator))}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := validate(manifest); err != nil || !strings.Contains(out, "all 1 spec.platforms installed fine") {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}
	for _, c := range []struct{ what, old, new, want string }{
		{"a bad sha256", "sha256: " + hexsum, "sha256: nothex", "`sha256` value nothex is not valid"},
		{"no LICENSE installed", "    - from: LICENSE\n      to: .\n", "", "could not find license file"},
	} {
		broken := filepath.Join(t.TempDir(), "adopt.yaml")
		if err := os.WriteFile(broken, bytes.Replace(mb, []byte(c.old), []byte(c.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := validate(broken); err == nil || !strings.Contains(out, c.want) {
			t.Fatalf("validate-krew-manifest with %s: %v, want %q\n%s", c.what, err, c.want, out)
		}
	}

	// kubectl krew install --manifest --archive, into a temporary KREW_ROOT.
	env := []string{
		"HOME=" + home, "KREW_ROOT=" + krewRoot, "KREW_NO_UPGRADE_CHECK=1", "NO_COLOR=1",
		"PATH=" + strings.Join([]string{filepath.Join(krewRoot, "bin"), pathDir, cp.Bin, "/usr/bin", "/bin"}, string(os.PathListSeparator)),
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(cp.Bin, "kubectl"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// A tampered archive is refused: krew checks the manifest's sha256.
	tampered := filepath.Join(t.TempDir(), filepath.Base(archive))
	if err := os.WriteFile(tampered, append(append([]byte(nil), data...), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl("krew", "install", "--manifest="+manifest, "--archive="+tampered); err == nil || !strings.Contains(out, "checksum does not match") {
		t.Fatalf("krew install of an archive whose sha256 is not the manifest's: %v\n%s", err, out)
	}

	if out, err := kubectl("krew", "install", "--manifest="+manifest, "--archive="+archive); err != nil {
		t.Fatalf("kubectl krew install: %v\n%s", err, out)
	}
	// What krew records and links: its receipt, and kubectl-adopt in its bin.
	if _, err := os.Stat(filepath.Join(krewRoot, "receipts", "adopt.yaml")); err != nil {
		t.Fatalf("no krew receipt: %v", err)
	}
	if link, err := os.Readlink(filepath.Join(krewRoot, "bin", "kubectl-adopt")); err != nil || !strings.HasPrefix(link, filepath.Join(krewRoot, "store", "adopt", base.Version)) {
		t.Fatalf("kubectl-adopt links to %q (%v), want the store's %s", link, err, base.Version)
	}
	// kubectl adopt: help says so, and plan runs against the control plane.
	out2, err := kubectl("adopt", "plan", "--help")
	if err != nil || !strings.Contains(out2, "kubectl adopt plan [flags]") {
		t.Fatalf("kubectl adopt plan --help: %v\n%s", err, out2)
	}
	ns := cp.Namespace(t)
	if _, err := cp.Kubectl(context.Background(), nil, "-n", ns, "create", "configmap", "by-hand", "--from-literal=k=v"); err != nil {
		t.Fatal(err)
	}
	out2, err = kubectl("adopt", "--kubeconfig", cp.Kubeconfig, "plan", "-n", ns, "-o", "json", "-q")
	if err != nil {
		t.Fatalf("kubectl adopt plan: %v\n%s", err, out2)
	}
	var p struct {
		Kind    string
		Objects []struct{ Kind, Namespace, Name string }
	}
	if err := json.Unmarshal([]byte(out2), &p); err != nil {
		t.Fatalf("kubectl adopt plan -o json: %v\n%s", err, out2)
	}
	found := false
	for _, o := range p.Objects {
		found = found || (o.Kind == "ConfigMap" && o.Namespace == ns && o.Name == "by-hand")
	}
	if p.Kind != "AdoptionPlan" || !found {
		t.Fatalf("kubectl adopt plan found %+v, want ConfigMap %s/by-hand", p, ns)
	}
	out2, err = kubectl("adopt", "version")
	if err != nil || !strings.Contains(out2, base.Version) {
		t.Fatalf("kubectl adopt version: %v %s", err, out2)
	}
}

// checkArchive checks the tar.gz's entries and returns the binary.
func checkArchive(t *testing.T, data []byte, date time.Time, root string) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !gz.ModTime.Equal(date) {
		t.Errorf("gzip header time %s, want the commit's %s", gz.ModTime, date)
	}
	tr := tar.NewReader(gz)
	var names []string
	var bin []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(date) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %s uid %d gid %d, want %s and 0", h.Name, h.ModTime, h.Uid, h.Gid, date)
		}
		if h.Name == "LICENSE" {
			got, _ := io.ReadAll(tr)
			if want, err := os.ReadFile(filepath.Join(root, "LICENSE")); err != nil || !bytes.Equal(got, want) {
				t.Errorf("the archive's LICENSE is not the repository's (%v)", err)
			}
		}
		if h.Name == "adopt" {
			if h.Mode != 0o755 {
				t.Errorf("adopt mode %o", h.Mode)
			}
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(names, ",") != "LICENSE,README.md,adopt" {
		t.Errorf("entries %v, want LICENSE,README.md,adopt sorted", names)
	}
	return bin
}

// checkImage reads the OCI image layout archive as a registry client would:
// every blob is named by its sha256; the index's one manifest is
// linux/amd64; its config runs /adopt as 65532:65532 and its diff_id is the
// uncompressed layer's digest; the layer holds exactly the binary at
// /adopt, executable.
func checkImage(t *testing.T, image, bin []byte) {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(image))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	blob := func(d Descriptor) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok || digestOf(b) != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s: present %v, or its digest or size differs", d.Digest, ok)
		}
		return b
	}
	var idx Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || idx.MediaType != mediaIndex || len(idx.Manifests) != 1 {
		t.Fatalf("index.json %s (%v): want one manifest", files["index.json"], err)
	}
	if p := idx.Manifests[0].Platform; p == nil || p.OS != "linux" || p.Architecture != "amd64" {
		t.Errorf("manifest platform %+v, want linux/amd64", p)
	}
	var m Manifest
	if err := json.Unmarshal(blob(idx.Manifests[0]), &m); err != nil || m.MediaType != mediaManifest || len(m.Layers) != 1 {
		t.Fatalf("manifest %+v (%v)", m, err)
	}
	var cfg ImageConfig
	if err := json.Unmarshal(blob(m.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/adopt" || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("image config %+v", cfg)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(m.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != digestOf(layer) {
		t.Errorf("diff_ids %v, want the uncompressed layer's %s", cfg.RootFS.DiffIDs, digestOf(layer))
	}
	lr := tar.NewReader(bytes.NewReader(layer))
	h, err := lr.Next()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(lr)
	if h.Name != "adopt" || h.Mode&0o111 == 0 || !bytes.Equal(got, bin) {
		t.Errorf("the layer holds %s (mode %o, %d bytes), want the release binary (%d bytes) at /adopt, executable", h.Name, h.Mode, len(got), len(bin))
	}
	if _, err := lr.Next(); err != io.EOF {
		t.Errorf("the layer holds more than the binary")
	}
}
