#!/usr/bin/env bash
# Builds the real kustomize CLI that Argo CD's repo-server runs to render
# kustomize-sourced Applications (`kustomize build`), from the Go module
# proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/kustomize-<version>/kustomize
#
# usage: build-kustomize.sh [VERSION]   (default v5.7.0, the kustomize that
# Argo CD v3.2 bundles; Argo CD v2.14 bundles v5.4.3, v3.6 bundles v5.8.3,
# which needs Go 1.27: lib.sh picks the toolchain)
#
# The CLI is built as its own main module, in the module's directory in the
# module cache, so its kustomize/api and kyaml need not match what adopt
# links. It is safe to run concurrently (flock) and does nothing when the
# cache is complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v5.7.0}
mod=sigs.k8s.io/kustomize/kustomize/v5
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/kustomize-$version
mkdir -p "$cache"
complete() { [ -x "$cache/kustomize" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-kustomize.sh
. "$(dirname "$0")/lib.sh"
toolchain=$(module_toolchain "$mod@$version")
dir=$(module_dir "$mod@$version" "$toolchain")
echo "building kustomize $version from $dir into $cache (about a minute on 2 cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# As kustomize's own release does: `kustomize version` prints $version.
pkg=sigs.k8s.io/kustomize/api/provenance
ldflags="-s -w -X $pkg.version=kustomize/$version -X $pkg.buildDate=1970-01-01T00:00:00Z"
src=$dir mod=readonly
case "$version" in
v5.8.3)
  # The module proxy refuses the k8s.io/kube-openapi pseudo-version v5.8.3
  # requires (v0.0.0-20261001230523-97fa35140926: "not available"). It is
  # built, in a copy of its directory, with the kube-openapi of v5.8.2
  # (v0.0.0-20260721132016-d427ff9ee9ad); kustomize's own modules (api,
  # kyaml, cmd/config) stay v5.8.3's.
  cp -r "$dir" "$tmp/src" && chmod -R u+w "$tmp/src"
  src=$tmp/src mod=mod
  (cd "$src" && GOTOOLCHAIN=${toolchain:-local} go mod edit -replace k8s.io/kube-openapi=k8s.io/kube-openapi@v0.0.0-20260721132016-d427ff9ee9ad)
  ;;
esac
(cd "$src" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=$mod" GOTOOLCHAIN=${toolchain:-local} go build -trimpath -ldflags "$ldflags" -o "$tmp/kustomize" .)
"$tmp/kustomize" version >&2
mv -f "$tmp/kustomize" "$cache/kustomize"
echo "built kustomize $version in $(( $(date +%s) - start ))s, $(du -m "$cache/kustomize" | cut -f1) MB" >&2
echo "$cache"
