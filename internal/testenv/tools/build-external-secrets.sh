#!/usr/bin/env bash
# Builds the real External Secrets Operator controller from the Go module
# proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/external-secrets-<version>/external-secrets
#
# usage: build-external-secrets.sh [VERSION]   (default v0.16.2)
#
# v0.16.2 is the newest version the proxy can build: v1.x splits into
# nested modules (apis, runtime, providers/v1/...) that the proxy does
# not serve (issue 45). v0.16.2's go.mod has a replace directive, so `go
# install …@v0.16.2` refuses it: it is built inside a copy of its module
# directory, as its own main module, so its client-go never meets adopt's
# go.mod.
#
# To make the build cheaper, the copy registers one secret provider,
# `kubernetes` (the one the tests use: it needs nothing but the API
# server), and no generator: the two registry packages, whose blank
# imports pull in every cloud SDK, are rewritten in the copy. The
# controllers, the CRDs' API types and the kubernetes provider are the
# module's own, unchanged. Built with -trimpath, no cgo, stripped. The
# CRDs are not copied: StartExternalSecrets reads them from the module
# cache. It is safe to run concurrently (flock) and does nothing when the
# cache is complete. Prints the cache directory on stdout.
set -euo pipefail
script=build-external-secrets.sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
version=${1:-v0.16.2}
mod=github.com/external-secrets/external-secrets
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/external-secrets-$version
mkdir -p "$cache"
complete() { [ -x "$cache/external-secrets" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

echo "building the External Secrets Operator $version (kubernetes provider only) into $cache (a few minutes on 2 idle cores, once)" >&2
start=$(date +%s)
src=$(module_dir "$mod@$version")
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cp -r "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
cat >"$tmp/src/pkg/provider/register/register.go" <<GO
// Package register, as adopt's tests build it: the kubernetes provider only.
package register

import _ "$mod/pkg/provider/kubernetes"
GO
cat >"$tmp/src/pkg/generator/register/register.go" <<GO
// Package register, as adopt's tests build it: no generator.
package register
GO
(cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod" go build -trimpath -ldflags "-s -w" -o "$tmp/external-secrets" .)
"$tmp/external-secrets" --help >/dev/null
mv -f "$tmp/external-secrets" "$cache/external-secrets"
echo "built the External Secrets Operator $version in $(( $(date +%s) - start ))s, $(du -m "$cache/external-secrets" | cut -f1) MB" >&2
echo "$cache"
