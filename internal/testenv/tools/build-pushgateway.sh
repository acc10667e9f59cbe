#!/usr/bin/env bash
# Builds the real Prometheus Pushgateway, where `adopt reconcile
# --metrics-pushgateway` pushes a run's metrics, from the Go module proxy,
# into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/pushgateway-<version>/pushgateway
#
# usage: build-pushgateway.sh [VERSION]   (default v1.11.5)
#
# It is built as its own main module, in the module's directory in the
# module cache. It is safe to run concurrently (flock) and does nothing
# when the cache is complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v1.11.5}
mod=github.com/prometheus/pushgateway
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/pushgateway-$version
mkdir -p "$cache"
complete() { [ -x "$cache/pushgateway" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-pushgateway.sh
. "$(dirname "$0")/lib.sh"
toolchain=$(module_toolchain "$mod@$version")
dir=$(module_dir "$mod@$version" "$toolchain")
echo "building the Pushgateway $version from $dir into $cache (about a minute on 2 cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pkg=github.com/prometheus/common/version
ldflags="-s -w -X $pkg.Version=${version#v}"
(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=${toolchain:-local} go build -trimpath -ldflags "$ldflags" -o "$tmp/pushgateway" .)
mv -f "$tmp/pushgateway" "$cache/pushgateway"
echo "built the Pushgateway $version in $(( $(date +%s) - start ))s" >&2
echo "$cache"
