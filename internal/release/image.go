package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"sort"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// The container image is written as an OCI image layout, in one tar
// (adopt_<version>_oci.tar), with no base image and no container tool:
// each linux target's image is one layer holding the static binary at
// /adopt (CGO_ENABLED=0; it carries its own CA roots for when the image has
// none, golang.org/x/crypto/x509roots/fallback), run as UID/GID 65532 with
// /adopt as its entrypoint, dated at the commit. An index lists one
// manifest per platform. `skopeo copy oci-archive:adopt_…_oci.tar
// docker://registry/adopt:TAG` (or crane, podman load) publishes it;
// nothing in this workplace can run a container, so the tests check the
// layout's structure and digests, not a running image.

// OCI media types (image-spec v1.1).
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// ImageName is the image's archive: adopt_<version>_oci.tar.
func ImageName(version string) string { return "adopt_" + version + "_oci.tar" }

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is a manifest's os and architecture.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// ImageConfig is the OCI image configuration adopt's image has.
type ImageConfig struct {
	Created      string  `json:"created"`
	Architecture string  `json:"architecture"`
	OS           string  `json:"os"`
	Config       RunSpec `json:"config"`
	RootFS       RootFS  `json:"rootfs"`
}

// RunSpec is how the image runs.
type RunSpec struct {
	User       string            `json:"User"`
	Entrypoint []string          `json:"Entrypoint"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// RootFS lists the uncompressed layers' digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Index is an OCI image index.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// writeImage writes the image of the linux binaries (by target) and returns
// its archive, or "" when no linux target was built.
func writeImage(o Options, bins map[Target][]byte) (Archive, error) {
	var targets []Target
	for t := range bins {
		if t.OS == "linux" {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return Archive{}, nil
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Arch < targets[j].Arch })
	blobs := map[string][]byte{}
	put := func(media string, b []byte) Descriptor {
		d := digestOf(b)
		blobs[d] = b
		return Descriptor{MediaType: media, Digest: d, Size: int64(len(b))}
	}
	index := Index{SchemaVersion: 2, MediaType: mediaIndex}
	for _, t := range targets {
		var layerTar bytes.Buffer
		tw := tar.NewWriter(&layerTar)
		h := &tar.Header{Name: "adopt", Mode: 0o755, Size: int64(len(bins[t])), ModTime: o.Date, Typeflag: tar.TypeReg, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(h); err != nil {
			return Archive{}, err
		}
		if _, err := tw.Write(bins[t]); err != nil {
			return Archive{}, err
		}
		if err := tw.Close(); err != nil {
			return Archive{}, err
		}
		var gz bytes.Buffer
		// BestSpeed: the layer is one binary; a registry recompresses
		// nothing, and the archives already carry the best compression.
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		if err != nil {
			return Archive{}, err
		}
		zw.ModTime = o.Date
		if _, err := zw.Write(layerTar.Bytes()); err != nil {
			return Archive{}, err
		}
		if err := zw.Close(); err != nil {
			return Archive{}, err
		}
		layer := put(mediaLayer, gz.Bytes())
		cfg, err := json.Marshal(ImageConfig{Created: o.Date.UTC().Format(time.RFC3339), Architecture: t.Arch, OS: t.OS,
			Config: RunSpec{User: "65532:65532", Entrypoint: []string{"/adopt"}, Labels: map[string]string{
				"org.opencontainers.image.version": o.Version, "org.opencontainers.image.revision": o.Commit}},
			RootFS: RootFS{Type: "layers", DiffIDs: []string{digestOf(layerTar.Bytes())}}})
		if err != nil {
			return Archive{}, err
		}
		m, err := json.Marshal(Manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: put(mediaConfig, cfg), Layers: []Descriptor{layer}})
		if err != nil {
			return Archive{}, err
		}
		d := put(mediaManifest, m)
		d.Platform = &Platform{Architecture: t.Arch, OS: t.OS}
		index.Manifests = append(index.Manifests, d)
	}
	ib, err := json.Marshal(index)
	if err != nil {
		return Archive{}, err
	}
	entries := []entry{{"oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", 0o644, ib}}
	var names []string
	for d := range blobs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		entries = append(entries, entry{"blobs/sha256/" + d[len("sha256:"):], 0o644, blobs[d]})
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: o.Date, Typeflag: tar.TypeReg, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(h); err != nil {
			return Archive{}, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return Archive{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Archive{}, err
	}
	name := ImageName(o.Version)
	if err := atomicfile.WriteFile(filepath.Join(o.Out, name), out.Bytes(), 0o644); err != nil {
		return Archive{}, err
	}
	sum := sha256.Sum256(out.Bytes())
	return Archive{Name: name, SHA256: hex.EncodeToString(sum[:])}, nil
}
