#!/usr/bin/env bash
# Builds the real Gitea server used by the pull-request tests and the demo
# from the Go module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/gitea-<version>/gitea
# and records the module directory (for STATIC_ROOT_PATH) in
#   .../gitea-<version>/moddir
#
# usage: build-gitea.sh [VERSION]   (default v1.26.0; v1.27 and later moved
# the module to another path and are not supported here)
#
# The build runs inside the module's own directory in the module cache so
# that its replace directives apply. It needs cgo for sqlite. It is safe to
# run concurrently (flock) and does nothing when the cache is complete.
# Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v1.26.0}
mod=code.gitea.io/gitea
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/gitea-$version
mkdir -p "$cache"
complete() { [ -x "$cache/gitea" ] && [ -s "$cache/moddir" ] && [ -d "$(cat "$cache/moddir")" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-gitea.sh
. "$(dirname "$0")/lib.sh"
dir=$(module_dir "$mod@$version")
echo "building Gitea $version from $dir into $cache (about 3 minutes on 2 idle cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ldflags="-s -w -X main.Version=${version#v}"
(cd "$dir" && CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -trimpath -tags 'sqlite sqlite_unlock_notify' -ldflags "$ldflags" -o "$tmp/gitea" .)
printf '%s\n' "$dir" > "$tmp/moddir"
mv -f "$tmp/moddir" "$cache/moddir"
mv -f "$tmp/gitea" "$cache/gitea"
echo "built Gitea $version in $(( $(date +%s) - start ))s, $(du -m "$cache/gitea" | cut -f1) MB" >&2
echo "$cache"
