#!/usr/bin/env bash
# Builds the real Argo CD multi-call binary for tests and the demo from the Go
# module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/argocd-<version>/
# with the binary `argocd`, the image's shell wrappers that the repo-server
# runs from its PATH (hack/git-verify-wrapper.sh, hack/gpg-wrapper.sh, where
# the module has them), crds/ and config/ copied from the module's
# manifests/crds and manifests/base/config, and its manifests/install.yaml
# (the release's install manifest, whose workloads name the image tag).
#
# usage: build-argocd.sh VERSION   (v2.14.21, v3.2.6 or v3.6.2; any v2.x or v3.x tag)
#
# The build runs in a copy of the module's own directory from the module
# cache, as the main module, so that its replace directives apply (they would
# not if it were built as a dependency of another module). The copy is
# needed because one line of Argo CD is changed, and neither the read-only
# module cache nor `go build -overlay` (refused beneath GOMODCACHE) allows
# that: the application controller's metrics listener, hard-coded to 0.0.0.0
# in v2.14, v3.2 and v3.6, binds 127.0.0.1 instead, because servers started
# by the tests listen on loopback only. The build stops if that line is not
# found exactly once. The copy (about 100 MB) is removed afterwards.
#
# Since v3.4 the module's go.mod replaces github.com/argoproj/argo-cd/gitops-engine/v3
# with ./gitops-engine, a nested module that the module zip leaves out; the
# proxy serves it as its own module at the same version, and it is placed
# there. The go line of the module's go.mod picks the toolchain (v3.6 needs
# Go 1.27): GOTOOLCHAIN is set to it for this build alone (lib.sh).
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
complete() { [ -x "$cache/argocd" ] && [ -d "$cache/crds" ] && [ -d "$cache/config" ] && [ -f "$cache/install.yaml" ] && [ "$(cat "$cache/.recipe" 2>/dev/null)" = "$recipe" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

script=build-argocd.sh
. "$(dirname "$0")/lib.sh"
toolchain=$(module_toolchain "$mod@$version")
dir=$(module_dir "$mod@$version" "$toolchain")
echo "building Argo CD $version from $dir into $cache (about 3 to 4 minutes on 2 idle cores, once${toolchain:+; with $toolchain})" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Version stamps, the variables Argo CD's Makefile sets. The module proxy
# does not say which commit a tag is, so argocd-server's /api/version reports
# for example "v2.14.21+unknown" (a release image says "v2.14.21+<commit>").
# Without them the binary reports v99.99.99.
pkg=$mod/common
ldflags="-s -w -X $pkg.version=${version#v} -X $pkg.gitTag=$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
cp -r "$dir" "$tmp/src"
chmod -R u+w "$tmp/src"
if grep -q '=> ./gitops-engine' "$tmp/src/go.mod"; then
  ge=$(module_dir "github.com/argoproj/argo-cd/gitops-engine/v3@$version" "$toolchain")
  rm -rf "$tmp/src/gitops-engine"
  cp -r "$ge" "$tmp/src/gitops-engine"
  chmod -R u+w "$tmp/src/gitops-engine"
fi
src="$tmp/src/controller/appcontroller.go"
pattern='"0.0.0.0:%d", metricsPort'
if [ "$(grep -cF "$pattern" "$src")" != 1 ]; then
  echo "build-argocd.sh: $dir/controller/appcontroller.go does not contain $pattern exactly once; update the patch for $version" >&2
  exit 1
fi
sed -i 's/"0\.0\.0\.0:%d", metricsPort/"127.0.0.1:%d", metricsPort/' "$src"
(cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=${toolchain:-local} go build -trimpath -ldflags "$ldflags" -o "$tmp/argocd" ./cmd)
rm -rf "$tmp/crds" "$tmp/config"
cp -r "$dir/manifests/crds" "$tmp/crds"
cp -r "$dir/manifests/base/config" "$tmp/config"
cp "$dir/manifests/install.yaml" "$tmp/install.yaml"
for w in git-verify-wrapper.sh gpg-wrapper.sh; do
  [ -f "$dir/hack/$w" ] && install -m 0755 "$dir/hack/$w" "$tmp/$w"
done
chmod -R u+w "$tmp"
rm -rf "$cache/crds" "$cache/config"
mv "$tmp/crds" "$tmp/config" "$cache/"
mv -f "$tmp/install.yaml" "$cache/install.yaml"
for w in git-verify-wrapper.sh gpg-wrapper.sh; do
  [ -f "$tmp/$w" ] && mv -f "$tmp/$w" "$cache/$w"
done
mv -f "$tmp/argocd" "$cache/argocd"
echo "$recipe" >"$cache/.recipe"
echo "built Argo CD $version in $(( $(date +%s) - start ))s, $(du -m "$cache/argocd" | cut -f1) MB" >&2
echo "$cache"
