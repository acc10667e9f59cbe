#!/usr/bin/env bash
# Builds the real Argo CD multi-call binary for tests and the demo from the Go
# module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/argocd-<version>/
# with the binary `argocd`, and crds/ and config/ copied from the module's
# manifests/crds and manifests/base/config.
#
# usage: build-argocd.sh VERSION   (v2.14.21 or v3.2.6; any v2.x or v3.x tag)
#
# The build runs in a copy of the module's own directory from the module
# cache, as the main module, so that its replace directives apply (they would
# not if it were built as a dependency of another module). The copy is
# needed because one line of Argo CD is changed, and neither the read-only
# module cache nor `go build -overlay` (refused beneath GOMODCACHE) allows
# that: the application controller's metrics listener, hard-coded to 0.0.0.0
# in v2.14 and v3.2, binds 127.0.0.1 instead, because servers started by the
# tests listen on loopback only. The build stops if that line is not found
# exactly once. The copy (about 100 MB) is removed afterwards.
#
# It is safe to run concurrently (flock) and does nothing when the cache is
# complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:?usage: build-argocd.sh VERSION (for example v2.14.21)}
case "$version" in
v2.*) mod=github.com/argoproj/argo-cd/v2 ;;
v3.*) mod=github.com/argoproj/argo-cd/v3 ;;
*) echo "build-argocd.sh: unsupported Argo CD version $version; want v2.x or v3.x" >&2; exit 2 ;;
esac
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/argocd-$version
mkdir -p "$cache"
# recipe changes whenever the way the binary is built changes.
recipe="controller-metrics-loopback-1"
complete() { [ -x "$cache/argocd" ] && [ -d "$cache/crds" ] && [ -d "$cache/config" ] && [ "$(cat "$cache/.recipe" 2>/dev/null)" = "$recipe" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

dir=$(cd / && go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  echo "build-argocd.sh: could not download $mod@$version from the module proxy" >&2
  exit 1
fi
echo "building Argo CD $version from $dir into $cache (5 to 8 minutes on 2 cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Version stamps, the variables Argo CD's Makefile sets. The module proxy
# does not say which commit a tag is, so argocd-server's /api/version reports
# for example "v2.14.21+unknown" (a release image says "v2.14.21+<commit>").
pkg=$mod/common
ldflags="-s -w -X $pkg.version=${version#v} -X $pkg.gitTag=$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
cp -r "$dir" "$tmp/src"
chmod -R u+w "$tmp/src"
src="$tmp/src/controller/appcontroller.go"
pattern='"0.0.0.0:%d", metricsPort'
if [ "$(grep -cF "$pattern" "$src")" != 1 ]; then
  echo "build-argocd.sh: $dir/controller/appcontroller.go does not contain $pattern exactly once; update the patch for $version" >&2
  exit 1
fi
sed -i 's/"0\.0\.0\.0:%d", metricsPort/"127.0.0.1:%d", metricsPort/' "$src"
(cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$ldflags" -o "$tmp/argocd" ./cmd)
rm -rf "$tmp/crds" "$tmp/config"
cp -r "$dir/manifests/crds" "$tmp/crds"
cp -r "$dir/manifests/base/config" "$tmp/config"
chmod -R u+w "$tmp"
rm -rf "$cache/crds" "$cache/config"
mv "$tmp/crds" "$tmp/config" "$cache/"
mv -f "$tmp/argocd" "$cache/argocd"
echo "$recipe" >"$cache/.recipe"
echo "built Argo CD $version in $(( $(date +%s) - start ))s, $(du -m "$cache/argocd" | cut -f1) MB" >&2
echo "$cache"
