#!/usr/bin/env bash
# Builds the real helm CLI used by the Helm tests (helm package, repo index,
# install, upgrade) and by Argo CD's repo-server (which runs `helm template`)
# from the Go module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/helm-<version>/helm
#
# usage: build-helm.sh [VERSION]   (default v3.18.6, the Helm minor that
# Argo CD v3.2 bundles; v4.3.2 is the one Argo CD v3.6 bundles; any v3.x
# or v4.x tag)
#
# The CLI is built as its own main module, in the module's directory in the
# module cache, so it may be newer than the helm.sh/helm/v3 library that
# adopt links (which must stay on the Kubernetes minor go.mod pins). It is
# safe to run concurrently (flock) and does nothing when the cache is
# complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v3.18.6}
mod=helm.sh/helm/v${version:1:1}
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/helm-$version
mkdir -p "$cache"
complete() { [ -x "$cache/helm" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-helm.sh
. "$(dirname "$0")/lib.sh"
toolchain=$(module_toolchain "$mod@$version")
dir=$(module_dir "$mod@$version" "$toolchain")
echo "building helm $version from $dir into $cache (about 1 to 2 minutes on 2 idle cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pkg=$mod/internal/version
ldflags="-s -w -X $pkg.version=$version -X $pkg.gitTreeState=clean"
(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=${toolchain:-local} go build -trimpath -ldflags "$ldflags" -o "$tmp/helm" ./cmd/helm)
"$tmp/helm" version --short >&2
mv -f "$tmp/helm" "$cache/helm"
echo "built helm $version in $(( $(date +%s) - start ))s, $(du -m "$cache/helm" | cut -f1) MB" >&2
echo "$cache"
