#!/usr/bin/env bash
# Builds krew (the kubectl plugin manager) and krew's own manifest validator
# from the Go module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/krew-<version>/{krew,validate-krew-manifest}
# The release test validates the generated plugins/adopt.yaml with
# validate-krew-manifest and installs the archive with
# `kubectl krew install --manifest --archive` into a temporary KREW_ROOT.
#
# usage: build-krew.sh [VERSION]   (default v0.4.3)
#
# Both are built as their own main module, in the module's directory in the
# module cache, so krew's old client-go never meets adopt's go.mod. It is
# safe to run concurrently (flock) and does nothing when the cache is
# complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v0.4.3}
mod=sigs.k8s.io/krew
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/krew-$version
mkdir -p "$cache"
complete() { [ -x "$cache/krew" ] && [ -x "$cache/validate-krew-manifest" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-krew.sh
. "$(dirname "$0")/lib.sh"
dir=$(module_dir "$mod@$version")
echo "building krew $version from $dir into $cache (about 1 minute on 2 cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pkg=sigs.k8s.io/krew/internal/version
ldflags="-s -w -X $pkg.gitTag=$version -X $pkg.gitCommit=$version"
(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$ldflags" -o "$tmp/" ./cmd/krew ./cmd/validate-krew-manifest)
mv -f "$tmp/validate-krew-manifest" "$cache/validate-krew-manifest"
mv -f "$tmp/krew" "$cache/krew"
echo "built krew $version in $(( $(date +%s) - start ))s" >&2
echo "$cache"
