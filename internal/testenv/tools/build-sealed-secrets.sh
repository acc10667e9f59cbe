#!/usr/bin/env bash
# Builds the real Sealed Secrets controller and its client, kubeseal, from
# the Go module proxy, into a cache outside the repo:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin/sealed-secrets-<version>/{controller,kubeseal}
# kubeseal is the tests' oracle: it fetches the certificate and verifies
# through the API server's service proxy, as users run it.
#
# usage: build-sealed-secrets.sh [VERSION]   (default v0.27.1)
#
# The module proxy serves v0.27.1 and v0.40.0 of this module. v0.27.1 is
# built: it installs as published. v0.40.0's go.mod declares
# github.com/bitnami/sealed-secrets, so `go install` refuses it and it
# would need a copy of the module directory or a replace (issue 45). Both
# binaries are built with one `go install` into a temporary GOBIN, as
# their own main module, so their client-go never meets adopt's go.mod.
# The CRD is not copied: StartSealedSecrets reads it from the module
# cache. It is safe to run concurrently (flock) and does nothing when the
# cache is complete. Prints the cache directory on stdout.
set -euo pipefail
version=${1:-v0.27.1}
mod=github.com/bitnami-labs/sealed-secrets
cache=${ADOPT_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/adopt/testbin}/sealed-secrets-$version
mkdir -p "$cache"
complete() { [ -x "$cache/controller" ] && [ -x "$cache/kubeseal" ]; }
exec 9>"$cache/.lock"
flock 9
if complete; then echo "$cache"; exit 0; fi

echo "building the Sealed Secrets controller and kubeseal $version into $cache (about 2 minutes on 2 idle cores, once)" >&2
start=$(date +%s)
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# As the project's own release does: `controller --version` and `kubeseal
# --version` print $version.
ldflags="-s -w -X main.VERSION=$version"
(cd / && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOBIN=$tmp go install -trimpath -ldflags "$ldflags" "$mod/cmd/controller@$version" "$mod/cmd/kubeseal@$version")
"$tmp/controller" --version >&2
"$tmp/kubeseal" --version >&2
mv -f "$tmp/kubeseal" "$cache/kubeseal"
mv -f "$tmp/controller" "$cache/controller"
echo "built the Sealed Secrets controller and kubeseal $version in $(( $(date +%s) - start ))s, $(du -m "$cache/controller" | cut -f1) MB and $(du -m "$cache/kubeseal" | cut -f1) MB" >&2
echo "$cache"
